"""Every example of the README and of the docs pages runs (issue 40), so an example that stops working fails.

Python: every ```python block runs as it is written, each in a fresh process with the repository as its
working directory (one test per page, its blocks in page order).

Bash: every command line of every ```bash block runs in a fresh temporary directory, so the files it writes go
there; it must exit 0. Comment lines and the continuation lines of a command (after a trailing backslash) are
not commands.

A block that is not run carries a marker on the line just above its fence, an HTML comment that the rendered
page does not show: `<!-- docs: skip (why) -->` for a python block that is deliberately partial or trains for
minutes, `<!-- docs: long-running (what it does) -->` for a bash block that installs, trains, opens a window
or needs a server. Markers never go inside a block, where readers would copy them.

The pages: README.md, every page under docs/ and the agent pages that docs/conf.py writes at every build from
the agents' docstrings and presets (docs/make_pages.py `agent_page`; git ignores them). docs/contributing.md
explains the markers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))

import make_pages  # noqa: E402

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

GENERATED = {f"docs/agents/{algo}.md": algo for algo in make_pages.generated_agents()}
PAGES = sorted(
    {"README.md", *GENERATED}
    | {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts}
)
# The marker of a block that is not run, by the block's language; on the line just above the fence.
MARKERS = {"python": "skip", "bash": "long-running"}
MARKER = re.compile(r"docs: (skip|long-running) \(\S[^)]*\)")
INSIDE = re.compile(r"#\s*docs:")  # a marker inside a block, where readers would copy it
FENCE = re.compile(r"^(?: *<!-- *(docs:[^\n]*?) *-->\n)?( *)```(python|bash)\n(.*?)^\2```", re.S | re.M)


def page_text(page: str) -> str:
    return make_pages.agent_page(GENERATED[page]) if page in GENERATED else (ROOT / page).read_text()


def blocks(page: str, lang: str) -> list[tuple[int, str, str | None]]:
    return fenced(page_text(page), lang, page)


def fenced(text: str, lang: str, page: str) -> list[tuple[int, str, str | None]]:
    """(first line of the code, code, its marker or None) of each ```lang block of a page's text, dedented as in
    a list item."""
    found = []
    for m in FENCE.finditer(text):
        if m.group(3) != lang:
            continue
        line, marker = text[: m.start(2)].count("\n") + 2, m.group(1)
        if marker is not None:
            where = f"{page}:{line - 2}"
            assert MARKER.fullmatch(marker), f"{where}: a marker reads `docs: {MARKERS[lang]} (why)`"
            assert marker.split()[1] == MARKERS[lang], f"{where}: a {lang} block's marker is `{MARKERS[lang]}`"
        found.append((line, textwrap.dedent(m.group(4)), marker))
    return found


def check_unmarked_inside(code: str, where: str) -> None:
    assert not INSIDE.search(code), (
        f"{where}: a `# docs:` marker inside the block; put it above the fence as <!-- docs: ... -->"
    )


def commands(code: str, first: int) -> list[tuple[int, str]]:
    """(line, command) for every command of a bash block, continuations joined."""
    found, joined, start = [], "", 0
    for n, line in enumerate(code.splitlines(), first):
        if joined:
            joined += "\n" + line
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        else:
            joined, start = line, n
        if not line.rstrip().endswith("\\"):
            found.append((start, joined))
            joined = ""
    return found


def test_every_page_is_covered():
    names = set(PAGES)
    assert {"README.md", "docs/getting-started.md", "docs/guides/sb3.md", "docs/agents/pqn.md"} <= names
    assert sum(len(blocks(p, "python")) for p in PAGES) >= 19


# Words of a work log, not of a product's documentation: a page states what was measured and how to use it;
# how a number was found stays in benchmarks/results/ and the CHANGELOG.
LOG_WORDS = ("missed", "so far", "this round", "this session", "targets missed", "earlier measurements")


@pytest.mark.parametrize("page", PAGES)
def test_the_page_reads_as_documentation_not_as_a_work_log(page):
    """Hand-written and generated pages alike (the committed generated sections, the environment pages, and the
    agent pages as docs/make_pages.py writes them)."""
    text = page_text(page)
    found = [word for word in LOG_WORDS if re.search(rf"\b{word}\b", text, re.I)]
    assert not found, f"{page}: {found}"


@pytest.mark.parametrize("page", PAGES)
def test_no_command_is_shown_outside_a_bash_block(page):
    """An indented code block is not run or checked, so commands go in ```bash blocks (docs/make_pages.py fences
    the agents' docstring commands)."""
    unfenced = re.sub(r"^( *)```.*?^\1```", "", page_text(page), flags=re.S | re.M)
    shown = re.findall(r"^ {4,}(?:python|pip|pytest) .*", unfenced, re.M)
    assert not shown, f"{page}: commands outside a ```bash block: {shown}"


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "python")])
def test_the_python_examples_of_the_page_run(page):
    ran = 0
    for line, code, marker in blocks(page, "python"):
        check_unmarked_inside(code, f"{page}:{line}")
        if marker:
            continue
        run = subprocess.run(
            [sys.executable, "-W", "error::DeprecationWarning:maxatar", "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, f"the block at {page}:{line} failed:\n{run.stderr[-3000:]}"
        ran += 1
    if not ran:
        pytest.skip(f"every python block of {page} is marked `docs: skip`")


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "bash")])
def test_every_bash_command_of_the_page_runs_or_its_block_is_marked_long_running(page, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for first, code, marker in blocks(page, "bash"):
        check_unmarked_inside(code, f"{page}:{first}")
        if marker:
            continue
        for line, command in commands(code, first):
            run = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert run.returncode == 0, f"`{command}` ({page}:{line}) failed:\n{run.stderr[-3000:]}"


def test_the_parsers_read_markers_comments_and_continuations():
    code = "# a comment\npython -m a --help\npython -m b \\\n    --x 1\n\npython -m c\n"
    assert commands(code, 10) == [(11, "python -m a --help"), (12, "python -m b \\\n    --x 1"), (15, "python -m c")]
    page = "text\n\n<!-- docs: long-running (trains) -->\n```bash\npython -m b\n```\n\n  ```python\n  x = 1\n  ```\n"
    assert fenced(page, "bash", "page.md") == [(5, "python -m b\n", "docs: long-running (trains)")]
    assert fenced(page, "python", "page.md") == [(9, "x = 1\n", None)]
