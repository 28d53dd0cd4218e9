"""The MinAtar settings of other papers, one keyword away: `maxatar.make(id, setting="gymnax")`.

The dynamics are MinAtar's in every setting; a setting only fixes the knobs papers choose differently:

* "minatar" (the default): MinAtar's own setting, the one its published results use: sticky actions with
  probability 0.1, the full action set (six actions), difficulty ramping, no time limit.
* "gymnax": gymnax's MinAtar defaults (gymnax 0.0.9 and 1.0.1): no sticky actions, the minimal action set,
  difficulty ramping, a time limit of 1000 steps (Freeway: 2500, as its own episodes last 2501).
  gymnax's CartPole-v1 is Gymnasium's: no sticky actions, 500 steps, MaxAtar's default too.
* "pgx": pgx's MinAtar defaults (pgx-minatar: `use_minimal_action_set=True`, `sticky_action_prob=0.1`,
  ramping on; pgx's environments never truncate): sticky actions 0.1, the minimal action set, ramping, no
  time limit.

Explicit keywords override the setting's values (`setting="gymnax", max_steps=0`).
"""

from __future__ import annotations

from typing import Any

SETTINGS = ("minatar", "gymnax", "pgx")
MINATAR_GAMES = ("Breakout-v0", "Asterix-v0", "Freeway-v0", "SpaceInvaders-v0", "Seaquest-v0")

# gymnax's per-game time limit (`max_steps_in_episode`).
GYMNAX_MAX_STEPS = {name: 2500 if name == "Freeway-v0" else 1000 for name in MINATAR_GAMES}


def _minatar_game(sticky: float, full: bool, max_steps: int) -> dict[str, Any]:
    return {
        "sticky_action_prob": sticky,
        "full_action_space": full,
        "difficulty_ramping": True,
        "max_steps": max_steps,
    }


def setting_kwargs(name: str, setting: str) -> dict[str, Any]:
    """The `maxatar.make` keywords of `setting` for the canonical id `name` (e.g. "Breakout-v0"): a ValueError
    for an unknown setting, or one that has no version of that environment."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    if name in MINATAR_GAMES:
        if setting == "gymnax":
            return _minatar_game(0.0, False, GYMNAX_MAX_STEPS[name])
        return _minatar_game(0.1, setting == "minatar", 0)
    if setting == "minatar" or (setting == "gymnax" and name == "CartPole-v1"):
        return {}  # the environment's own defaults (CartPole's are gymnax's)
    raise ValueError(f"{setting} has no {name}; setting={setting!r} applies to {', '.join(MINATAR_GAMES)}")


__all__ = ["GYMNAX_MAX_STEPS", "MINATAR_GAMES", "SETTINGS", "setting_kwargs"]
