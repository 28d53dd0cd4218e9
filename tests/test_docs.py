"""The documentation site: it builds with warnings as errors, every internal link and image of the built HTML
resolves to a file, and the environment pages written from the code (`python docs/make_pages.py`) are up to date.

No browser is started: Debian's chromium is not installed where the tests run, so the built HTML's links and
images are checked as files instead (what a browser would load from a local build)."""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("furo")
pytest.importorskip("myst_parser")

ROOT = Path(__file__).resolve().parents[1]


class Refs(HTMLParser):
    """The href of every <a> and <link>, the src of every <img> and <script>, and the page's <title>."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.title, self._in_title = "", False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("a", "link") and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in ("img", "script") and attrs.get("src"):
            self.images.append(attrs["src"])
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False if tag == "title" else self._in_title

    def handle_data(self, data):
        if self._in_title:
            self.title += data


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", str(out)]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"the docs do not build with -W:\n{run.stdout}\n{run.stderr}"
    return out


def parse(page: Path) -> Refs:
    refs = Refs()
    refs.feed(page.read_text())
    return refs


def local_target(page: Path, ref: str) -> Path | None:
    """The file a relative reference of `page` points at, or None for an external link or a same-page anchor."""
    parts = urlsplit(ref)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    return (page.parent / unquote(parts.path)).resolve()


def test_every_internal_link_and_image_of_the_built_site_resolves_to_a_file(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    missing = []
    for page in pages:
        refs = parse(page)
        for ref in refs.links + refs.images:
            target = local_target(page, ref)
            if target is not None and not target.is_file():
                missing.append(f"{page.relative_to(site)}: {ref}")
    assert not missing, "dangling links or images:\n" + "\n".join(missing)


def test_the_index_and_an_environment_page_exist_with_their_titles_and_pictures(site):
    index = parse(site / "index.html")
    assert index.title.startswith("MaxAtar")
    assert any(src.endswith("breakout.gif") for src in index.images)
    breakout = parse(site / "environments" / "breakout.html")
    assert breakout.title.startswith("Breakout")
    images = [src.rsplit("/", 1)[-1] for src in breakout.images]
    assert "breakout.gif" in images and "breakout.png" in images  # random play and the learning curves
    for name in ("getting-started", "api", "results", "performance", "changelog", "agents/pqn", "guides/sb3"):
        assert (site / f"{name}.html").is_file(), name
    assert "maxatar.make" in (site / "api.html").read_text()


def test_the_environment_pages_written_from_the_code_are_up_to_date():
    run = subprocess.run([sys.executable, "docs/make_pages.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
