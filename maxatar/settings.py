"""The MinAtar settings of other papers, one keyword away: `maxatar.make(id, setting="gymnax")`.

The dynamics are MinAtar's in every setting; a setting only fixes the knobs papers choose differently:

* "minatar" (the default): MinAtar's own setting, the one its published results use: sticky actions with
  probability 0.1, the full action set (six actions), difficulty ramping, no time limit.
* "gymnax": gymnax's MinAtar defaults (gymnax 0.0.9 and 1.0.1): no sticky actions, the minimal action set,
  difficulty ramping, gymnax's per-game time limit (1000 steps; Freeway: 2500, as its own episodes last 2501).
  gymnax's CartPole-v1 is Gymnasium's: no sticky actions, 500 steps, MaxAtar's default too.
* "pgx": pgx's MinAtar defaults (pgx-minatar: `use_minimal_action_set=True`, `sticky_action_prob=0.1`,
  ramping on; pgx's environments never truncate): sticky actions 0.1, the minimal action set, ramping, no
  time limit.

Each game states the settings it has in its own folder (`Environment.settings`, built with `minatar_game` for the
MinAtar games); explicit keywords override the setting's values (`setting="gymnax", max_steps=0`).
"""

from __future__ import annotations

from typing import Any

from maxatar.checks import InputError, check_choice

SETTINGS = ("minatar", "gymnax", "pgx")


def _knobs(sticky: float, full: bool, max_steps: int) -> dict[str, Any]:
    return {"sticky_action_prob": sticky, "full_action_space": full, "difficulty_ramping": True, "max_steps": max_steps}


def minatar_game(gymnax_max_steps: int) -> dict[str, dict[str, Any]]:
    """A MinAtar game's `settings`: every setting, with gymnax's time limit for that game."""
    return {
        "minatar": _knobs(0.1, True, 0),
        "gymnax": _knobs(0.0, False, gymnax_max_steps),
        "pgx": _knobs(0.1, False, 0),
    }


def setting_kwargs(env_class, name: str, setting: str) -> dict[str, Any]:
    """The `maxatar.make` keywords of `setting` for the environment class of id `name`: an InputError for an unknown
    setting, or one that has no version of that environment."""
    check_choice("setting", setting, SETTINGS)
    if setting not in env_class.settings:
        raise InputError(f"{setting} has no {name}; setting={setting!r} applies to the MinAtar games")
    return dict(env_class.settings[setting])


__all__ = ["SETTINGS", "minatar_game", "setting_kwargs"]
