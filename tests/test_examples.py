"""Every example of the README and of the docs pages runs (issue 40), so an example that stops working fails.

Python: every ```python block runs as it is written, each in a fresh process with the repository as its
working directory (one test per page, its blocks in page order). A block that is deliberately partial or
trains for minutes carries `# docs: skip (why)` and is not run.

Bash: every command line of every ```bash block either runs (in a fresh temporary directory, so the files it
writes go there; it must exit 0) or carries `# docs: long-running (what it does)`, at the end of the line or
on a comment line of its own just above it. Comment lines and the continuation lines of a command (after a
trailing backslash) are neither.

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

GENERATED = {f"docs/agents/{algo}.md": algo for algo in make_pages.AGENTS}
PAGES = sorted(
    {"README.md", *GENERATED}
    | {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts}
)
SKIP = re.compile(r"# docs: skip \(\S[^)]*\)")
LONG = re.compile(r"# docs: long-running \(\S[^)]*\)")
FENCE = re.compile(r"^( *)```(python|bash)\n(.*?)^\1```", re.S | re.M)


def page_text(page: str) -> str:
    return make_pages.agent_page(GENERATED[page]) if page in GENERATED else (ROOT / page).read_text()


def blocks(page: str, lang: str) -> list[tuple[int, str]]:
    """(first line of the code, code) of each ```lang block of the page, dedented as in a list item."""
    text = page_text(page)
    return [
        (text[: m.start()].count("\n") + 2, textwrap.dedent(m.group(3)))
        for m in FENCE.finditer(text)
        if m.group(2) == lang
    ]


def commands(code: str, first: int) -> list[tuple[int, str, bool]]:
    """(line, command, marked long-running) for every command of a bash block, continuations joined."""
    found, pending, joined, start = [], False, "", 0
    for n, line in enumerate(code.splitlines(), first):
        if joined:
            joined += "\n" + line
        elif not line.strip():
            continue
        elif line.lstrip().startswith("#"):
            assert "docs:" not in line or LONG.search(line), f"line {n}: a marker needs its reason in parentheses"
            pending = pending or bool(LONG.search(line))
            continue
        else:
            joined, start = line, n
        if not line.rstrip().endswith("\\"):
            found.append((start, joined, pending or bool(LONG.search(joined))))
            pending, joined = False, ""
    assert not pending, "a long-running marker on the block's last line marks no command"
    return found


def test_every_page_is_covered():
    names = set(PAGES)
    assert {"README.md", "docs/getting-started.md", "docs/guides/sb3.md", "docs/agents/pqn.md"} <= names
    assert sum(len(blocks(p, "python")) for p in PAGES) >= 19


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
    for line, code in blocks(page, "python"):
        if "# docs: skip" in code:
            assert SKIP.search(code), f"{page}:{line}: `# docs: skip` needs its reason in parentheses"
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
        pytest.skip(f"every python block of {page} is marked `# docs: skip`")


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "bash")])
def test_every_bash_command_of_the_page_runs_or_is_marked_long_running(page, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for first, code in blocks(page, "bash"):
        for line, command, long_running in commands(code, first):
            if long_running:
                continue
            run = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", command],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert run.returncode == 0, f"`{command}` ({page}:{line}) failed:\n{run.stderr[-3000:]}"


def test_the_bash_parser_reads_markers_comments_and_continuations():
    code = (
        "# a comment\n"
        "python -m a --help\n"
        "# docs: long-running (trains)\n"
        "python -m b \\\n"
        "    --x 1\n"
        "python -m c   # docs: long-running (plays)\n"
    )
    assert commands(code, 10) == [
        (11, "python -m a --help", False),
        (13, "python -m b \\\n    --x 1", True),
        (15, "python -m c   # docs: long-running (plays)", True),
    ]
