"""Every ```python block of the README and of the docs pages listed in PAGES runs, each in a fresh process.

A block that cannot run in seconds (it trains for minutes, or it is a fragment continuing an earlier block)
carries the marker comment `# docs: skip` with the reason (`# docs: skip (trains for minutes)`) and is not run.
Pages not in PAGES yet hold fragments written for reading (issue 40 asks for all of them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/getting-started.md")
SKIP = "# docs: skip"


def blocks() -> list:
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text()
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            line = text[: match.start()].count("\n") + 1
            found.append(pytest.param(page, line, match.group(1), id=f"{page}:{line}"))
    return found


@pytest.mark.parametrize(("page", "line", "code"), blocks())
def test_the_python_example_runs(page, line, code):
    if SKIP in code:
        pytest.skip(f"{page}:{line} is marked {SKIP!r}")
    run = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:maxatar", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, f"{page}:{line} failed:\n{run.stderr[-2000:]}"
