"""The documentation site: it builds with warnings as errors; every local link, image, stylesheet and script of
the built HTML resolves, and every anchor of a local link exists (`docs/check_site.py`); headless Chromium
(Debian's chromium, which `.ci/run` installs) loads the start page, a game's page and the results page with their
titles and every image; and the environment pages written from the code (`python docs/make_pages.py`) are up to
date."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("furo")
pytest.importorskip("myst_parser")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import check_site  # noqa: E402

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", str(out)]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"the docs do not build with -W:\n{run.stdout}\n{run.stderr}"
    return out


def test_every_local_link_image_and_anchor_of_the_built_site_resolves(site):
    assert len(list(site.rglob("*.html"))) > 30
    broken = check_site.broken_references(site)
    assert not broken, "dangling links, images or anchors:\n" + "\n".join(broken)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_headless_chromium_loads_the_pages_with_their_titles_and_images(site):
    assert check_site.browser_problems(site) == []


def test_the_index_and_an_environment_page_exist_with_their_titles_and_pictures(site):
    index = check_site.parse(site / "index.html")
    assert index.title.startswith("MaxAtar")
    assert any(src.endswith("breakout.gif") for src in index.images)
    breakout = check_site.parse(site / "environments" / "breakout.html")
    assert breakout.title.startswith("Breakout")
    images = [src.rsplit("/", 1)[-1] for src in breakout.images]
    assert "breakout.gif" in images and "breakout.png" in images  # random play and the learning curves
    assert "breakout_channels.png" in images  # the observation's channels
    for name in ("getting-started", "api", "results", "performance", "changelog", "agents/pqn", "guides/sb3"):
        assert (site / f"{name}.html").is_file(), name
    assert "maxatar.make" in (site / "api.html").read_text()


def test_the_environment_pages_written_from_the_code_are_up_to_date():
    run = subprocess.run([sys.executable, "docs/make_pages.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
