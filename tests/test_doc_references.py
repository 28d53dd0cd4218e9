"""The docs that describe the code say what is there: every `python -m MODULE`, every `python SCRIPT.py` and every
path of this repository that docs/architecture.md and docs/contributing.md name exists (no import, no JAX)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("docs/architecture.md", "docs/contributing.md")
TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".git")}  # what a repository path starts with
PLACEHOLDER = re.compile(r"[<*{\[]|\.\.\.")  # `maxatar/games/<game>/`: only the folder before it is a real path
BUILT = ("docs/_build/",)  # what the documented commands make, not in the repository


def modules(text: str) -> set[str]:
    return set(re.findall(r"python3? -m ([\w.]+)", text))


def scripts(text: str) -> set[str]:
    return set(re.findall(r"python3? ([\w./-]+\.py)\b", text))


def paths(text: str) -> set[str]:
    """Backticked names that start with a top-level entry of the repository and look like a file or folder."""
    found = set()
    for code in re.findall(r"`([^`\n]+)`", text):
        for word in code.split():
            word = word.strip("(),;:'\"")
            head = word.split("/", 1)[0]
            if head in TOP and ("/" in word or "." in word) and not word.startswith(("python", "-")):
                real = PLACEHOLDER.split(word, 1)[0]
                found.add(real if real == word else real[: real.rfind("/") + 1])
    return found


def module_exists(name: str) -> bool:
    """A module of this repository by its file, any other by its top-level package (found without importing)."""
    parts = name.split(".")
    if parts[0] not in TOP:
        return importlib.util.find_spec(parts[0]) is not None
    base = ROOT.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file() or (base / "__main__.py").is_file()


@pytest.mark.parametrize("page", PAGES)
def test_every_command_and_path_the_page_names_exists(page):
    text = (ROOT / page).read_text()
    missing = [f"python -m {m}" for m in sorted(modules(text)) if not module_exists(m)]
    missing += [f"python {s}" for s in sorted(scripts(text)) if not (ROOT / s).is_file()]
    missing += [p for p in sorted(paths(text)) if not (ROOT / p).exists() and not p.startswith(BUILT)]
    assert not missing, f"{page} names what does not exist: {missing}"


def test_the_check_finds_what_it_looks_for():
    text = "Run `python -m lab.results report` and `python docs/make_pages.py`; see `maxatar/games/<game>/rules.py`."
    assert modules(text) == {"lab.results"} and scripts(text) == {"docs/make_pages.py"}
    assert paths(text) == {"docs/make_pages.py", "maxatar/games/"}
    assert not module_exists("lab.nothing_here") and module_exists("pytest")


def test_ci_runs_the_readmes_test_command_in_a_fresh_virtual_environment():
    """`.ci/run` runs the README's test command, step by step and in its order, after making and activating a
    virtual environment as the README's set-up does, so that CI sees what a user's environment holds."""
    readme = (ROOT / "README.md").read_text()
    (command,) = [line for line in readme.splitlines() if line.startswith("pip install") and line.endswith("pytest -q")]
    steps = command.split(" && ")
    ci = [line.split("  #")[0] for line in (ROOT / ".ci/run").read_text().splitlines() if line and line[0] != "#"]
    assert "python -m venv .venv && . .venv/bin/activate" in readme
    venv = ci.index('python -m venv "$venv"')
    assert ci[venv + 1] == '. "$venv/bin/activate"' and ci[venv - 1].startswith('venv="$(mktemp -d)/')
    found = [ci.index(step) for step in steps]  # each step a line of its own
    assert found == sorted(found) and found[0] > venv + 1, (steps, ci)
