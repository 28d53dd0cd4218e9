"""docs/check_site.py, which `.ci/run` runs on the built docs site: it finds a missing file, a dangling anchor and,
in headless Chromium, an image that does not load, on a small site made here."""

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
import check_site  # noqa: E402

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

PAGE = '<!doctype html><html><head><title>{title}</title></head><body><h1 id="top">x</h1>{body}</body></html>'


def make_site(root: Path, image: str = "picture.png") -> Path:
    import imageio.v3 as iio

    root.mkdir()
    iio.imwrite(root / "picture.png", np.full((4, 4, 3), 200, np.uint8))
    (root / "index.html").write_text(PAGE.format(title="Start", body='<a href="game.html#top">game</a>'))
    (root / "game.html").write_text(PAGE.format(title="Game", body=f'<img src="{image}"><a href="index.html">up</a>'))
    return root


def test_a_whole_site_passes_and_a_missing_file_or_anchor_is_named(tmp_path):
    site = make_site(tmp_path / "site")
    assert check_site.broken_references(site) == []
    (site / "index.html").write_text(PAGE.format(title="Start", body='<a href="game.html#nowhere">g</a>'))
    (site / "picture.png").unlink()
    assert check_site.broken_references(site) == [
        "game.html: picture.png (no such file)",
        "index.html: game.html#nowhere (no element with id 'nowhere')",
    ]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_headless_chromium_sees_the_titles_and_which_images_load(tmp_path):
    good = make_site(tmp_path / "good")
    assert check_site.browser_problems(good, pages=("index.html", "game.html")) == []
    bad = make_site(tmp_path / "bad", image="missing.png")
    assert check_site.browser_problems(bad, pages=("index.html", "game.html")) == [
        "game.html: image missing.png did not load"
    ]
