"""Every name of `maxatar` that 0.2.0 exported and that has since moved, in one place, with the version that
removes it. Names are "module:attribute" text, imported when looked up, so this module imports nothing of the
package but its input checks (the contract, `core`, reads it)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

from maxatar.checks import InputError

REMOVED_IN = "0.4"

# old module -> {old name: "new.module:name"}
MOVED_NAMES = {"maxatar.core": {"keep_last_action": "maxatar.episode:keep_last_action"}}

# 0.2.0's loose class attributes of a game, now grouped: old name -> where it is declared now.
LOOSE_ATTRIBUTES = {
    "channels": "looks = Looks(channels=...)",
    "draw_order": "looks = Looks(draw_order=...)",
    "canvas_cells": "looks = Looks(canvas_cells=...)",
    "keymap": "looks = Looks(keymap=...)",
    "idle_action": "looks = Looks(idle_action=...)",
    "state_ranges": "states = States(ranges=...)",
}


def moved_attribute(module: str) -> Callable[[str], Any]:
    """The module `__getattr__` of `module`: its moved names, with a DeprecationWarning naming the new place."""

    def __getattr__(name: str) -> Any:
        moved = MOVED_NAMES[module].get(name)
        if moved is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new_module, attribute = moved.split(":")
        warnings.warn(
            f"{module}.{name} is deprecated: use {new_module}.{attribute} (the old name goes in {REMOVED_IN})",
            DeprecationWarning,
            2,
        )
        return getattr(importlib.import_module(new_module), attribute)

    return __getattr__


def check_game_class(cls: type) -> None:
    """Refuse a game class written for 0.2.0, which sets the loose attributes that `looks` and `states` group now:
    they would be ignored, so the game would draw and check its states as the defaults say."""
    loose = [name for name in LOOSE_ATTRIBUTES if hasattr(cls, name)]
    if loose:
        declare = "; ".join(dict.fromkeys(LOOSE_ATTRIBUTES[name] for name in loose))
        raise InputError(
            f"{cls.__name__} sets {', '.join(loose)}, 0.2.0's loose attributes: declare {declare} instead "
            f"(maxatar.core.Looks, maxatar.core.States)"
        )
