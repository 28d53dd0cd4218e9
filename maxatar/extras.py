"""The optional dependencies, as the package's extras group them: `require` checks, before any work, that the
modules an entry point needs are installed, and otherwise says in one line which extra brings them.

    require("render", "imageio")   # MissingExtra: imageio is not installed: pip install "maxatar[render]"

Command lines catch `MissingExtra` and print it as their one `error:` line (exit status 2); library calls let
it propagate (it is an ImportError, so code that already catches ImportError keeps working).
"""

from __future__ import annotations

import importlib.util


class MissingExtra(ImportError):
    """A module that comes with one of the package's extras is not installed."""


def require(extra: str, *modules: str) -> None:
    """Raise `MissingExtra` naming `extra` (`pip install "maxatar[extra]"`) unless every one of `modules` (top-level
    names, e.g. "imageio", "stable_baselines3") can be imported. Nothing is imported here."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: "
            f'pip install "maxatar[{extra}]"',
            name=missing[0],
        )
