"""`python -m renderers play --record`: the episodes a person plays, saved as the Minari dataset
`maxatar/<Game>/human-v0` with the metadata of the other offline datasets. The writer is
`maxatar_agents.run.datasets`, loaded by name at run time (as `renderers.policies` loads checkpoints), so the
renderers install and run without the agents; recording needs the `offline` extra."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from maxatar.extras import require

DATASETS_MODULE = "maxatar_agents.run.datasets"


def datasets():
    require("offline", "minari", "h5py", "flax")
    return importlib.import_module(DATASETS_MODULE)


def game_of(env_id: str) -> str:
    """The dataset game of a MinAtar id (`maxatar/Breakout-v0` -> `Breakout`); a ValueError for another id."""
    game = env_id.removeprefix("maxatar/").removesuffix("-v0")
    known = datasets().GAMES
    if game not in known:
        raise ValueError(f"--record: the datasets are of the MinAtar games ({', '.join(known)}), not {env_id!r}")
    return game


def env_kwargs(env_id: str, setting: str | None) -> dict[str, Any]:
    """The environment a recording is played in: the datasets' own for that setting (its time limit included)."""
    return datasets().env_kwargs(game_of(env_id), setting or "minatar")


class Recorder:
    """The finished episodes of a session, each as the arrays a dataset holds; an episode left unfinished
    (R restarts it, the window closes) is dropped."""

    def __init__(self):
        self.episodes: list[dict[str, np.ndarray]] = []
        self._current: dict[str, list] | None = None

    def start(self, obs) -> None:
        self._current = {"observations": [np.asarray(obs)], "actions": [], "rewards": [], "terminations": [],
                         "truncations": []}  # fmt: skip

    def step(self, action: int, obs, reward: float, terminated: bool, truncated: bool) -> None:
        episode = self._current
        episode["observations"].append(np.asarray(obs))
        for name, value in zip(episode, (None, action, reward, terminated, truncated), strict=True):
            if value is not None:
                episode[name].append(value)
        if terminated or truncated:
            dtypes = {"observations": bool, "actions": np.int32, "rewards": np.float32}
            self.episodes.append({k: np.asarray(v, dtypes.get(k, bool)) for k, v in episode.items()})
            self._current = None


def save(env_id: str, setting: str | None, recorder: Recorder, seed: int, force: bool = False):
    """Write the recorded episodes as `maxatar/<Game>/human-v0`; returns the Minari dataset."""
    return datasets().write_human(game_of(env_id), setting or "minatar", recorder.episodes, seed, force)
