"""Check the built docs site as its readers get it: every local link, image, stylesheet and script of every page
points at a file that exists, every `#anchor` of a local link at an element of that page with that id, and, with
`--browser`, headless Chromium (Debian's `chromium` package) served the site on localhost loads the start page
and the pages in BROWSER_PAGES with their titles and decodes every image on them (the GIFs, the channel
pictures, the results figures).

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python docs/check_site.py docs/_build/html --browser

tests/test_docs.py runs both checks on the site it builds (the browser where Debian's chromium is installed,
as `.ci/run` does). Exits 1 and lists what is broken.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# The attributes that make a browser fetch or navigate: (tag, attribute).
REFERENCES = {("a", "href"), ("img", "src"), ("link", "href"), ("script", "src"), ("source", "src")}


class Page(HTMLParser):
    """The references and element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.references: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if (tag, name) in REFERENCES and value:
                self.references.append(value)
            if (tag, name) == ("img", "src") and value:
                self.images.append(value)
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = self._in_title and tag != "title"

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(errors="replace"))
    return page


def broken_references(site: Path) -> list[str]:
    """'page: reference (why)' for each local reference of the site's pages that a browser could not follow."""
    pages = {path.resolve(): parse(path) for path in sorted(site.rglob("*.html"))}
    broken = []
    for path, page in pages.items():
        if not page.title.strip():
            broken.append(f"{path.relative_to(site.resolve())}: no <title>")
        for reference in page.references:
            parts = urlsplit(reference)
            if parts.scheme or parts.netloc or reference.startswith(("mailto:", "javascript:")):
                continue  # another site: not ours to check offline
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            where = f"{path.relative_to(site.resolve())}: {reference}"
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no element with id {parts.fragment!r})")
    return broken


# The pages the browser opens: the start page, a game's page (GIFs and the channel picture) and the results.
BROWSER_PAGES = ("index.html", "environments/breakout.html", "results.html")
CHROMIUM_FLAGS = [  # as root in a sandbox without network: no sandbox, no GPU, no calls home
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=15000",
]
# Loaded beside the site: each page in a frame tall enough to show all of it (the frames, and their images, hold
# back the probe's load event); then a script writes what each frame shows into the DOM that `--dump-dom` prints.
PROBE = """<!doctype html><title>probe</title><pre id="out"></pre>FRAMES<script>
window.onload = () => {
  const seen = [...document.querySelectorAll("iframe")].map(frame => {
    const doc = frame.contentDocument, images = [...doc.images];
    return {page: frame.getAttribute("src"), title: doc.title,
            images: images.map(img => [img.getAttribute("src"), img.complete && img.naturalWidth > 0])};
  });
  document.getElementById("out").textContent = JSON.stringify(seen);
};
</script>"""


def browser_problems(site: Path, pages=BROWSER_PAGES) -> list[str]:
    """Serve `site` on localhost, load `pages` in headless Chromium through PROBE: what did not load."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return ["no chromium on PATH (Debian: apt-get install chromium)"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "site"
        shutil.copytree(site, root)
        frames = "".join(f'<iframe src="{page}" width="1400" height="30000"></iframe>' for page in pages)
        (root / "__probe.html").write_text(PROBE.replace("FRAMES", frames))
        quiet = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(quiet, directory=str(root)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/__probe.html"
            profile = f"--user-data-dir={Path(tmp) / 'profile'}"
            dom = subprocess.run(
                [chromium, *CHROMIUM_FLAGS, profile, "--dump-dom", url], capture_output=True, text=True, timeout=120
            ).stdout
        finally:
            server.shutdown()
    start, end = dom.find('<pre id="out">'), dom.find("</pre>")
    try:
        seen = json.loads(html.unescape(dom[start + len('<pre id="out">') : end]))
    except ValueError:
        return [f"the probe page reported nothing: {dom[:300]!r}"]
    problems = []
    for page in seen:
        if not page["title"].strip():
            problems.append(f"{page['page']}: no title")
        problems += [f"{page['page']}: image {src} did not load" for src, ok in page["images"] if not ok]
    missing = set(pages) - {page["page"] for page in seen}
    return problems + [f"{page}: not loaded" for page in sorted(missing)]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    browser = "--browser" in args
    args = [a for a in args if a != "--browser"]
    site = Path(args[0] if args else "docs/_build/html")
    if not (site / "index.html").exists():
        sys.exit(f"{site} has no index.html: build the site first")
    broken = broken_references(site)
    pages = len(list(site.rglob("*.html")))
    if broken:
        print("\n".join(broken))
        sys.exit(f"{len(broken)} broken references in {pages} pages of {site}")
    print(f"{pages} pages of {site}: every local link, image, stylesheet and script resolves")
    if browser:
        problems = browser_problems(site)
        if problems:
            print("\n".join(problems))
            sys.exit(f"headless Chromium: {len(problems)} problems")
        print(f"headless Chromium loaded {', '.join(BROWSER_PAGES)} with their titles and every image")


if __name__ == "__main__":
    main()
