"""Sphinx configuration: `python -m sphinx -W --keep-going -b html docs docs/_build/html` (the `docs` extra)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import maxatar  # noqa: E402

sys.path.insert(0, str(ROOT / "docs"))
from make_pages import agent_pages  # noqa: E402

agent_pages()  # docs/agents/<algo>.md from the agents' docstrings and presets (git ignores them)

project = "MaxAtar"
author = "MaxAtar contributors"
copyright = "MaxAtar contributors, Apache-2.0"  # noqa: A001
release = maxatar.__version__
version = release

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "make_pages.py", "conf.py"]
html_theme = "furo"
html_title = f"MaxAtar {release}"
# autodoc imports every module for real; only Stable-Baselines3 (the `sb3` extra, which needs PyTorch and which
# the `docs` extra does not pull in) is mocked, and only where it is not installed.
autodoc_mock_imports = [name for name in ("stable_baselines3",) if importlib.util.find_spec(name) is None]
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_typehints = "none"
# Source pages link each object to where the API page documents it, under its defining module's name: followed
# through a package's re-export (`maxatar_agents.unlock_run`), the link pointed at an anchor no page has.
viewcode_follow_imported_members = False


def docstring_as_text(app, what, name, obj, options, lines):
    """The docstrings are plain text in the README's Markdown style (backticks, `*` lists, indented formulas),
    not reStructuredText: show each one as preformatted text, as `help()` does, so that none is misread."""
    if any(line.strip() for line in lines):
        lines[:] = [".. code-block:: text", "", *("   " + line for line in lines), ""]


def setup(app):
    app.connect("autodoc-process-docstring", docstring_as_text)
