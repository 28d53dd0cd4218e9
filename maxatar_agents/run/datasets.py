"""Reading a Minari dataset into `Transitions` (device arrays), so an offline agent trains under `jit`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from maxatar.extras import require
from maxatar_agents.algorithms.offline import Transitions


def load(dataset_id: str) -> Transitions:
    """The steps of the local Minari dataset `dataset_id` (e.g. "maxatar/Breakout/expert-v0") as device arrays,
    episode after episode; a dataset that is not there is Minari's own error, naming it."""
    require("offline", "minari")
    import minari

    dataset = minari.load_dataset(dataset_id)
    parts: dict[str, list[np.ndarray]] = {field: [] for field in Transitions._fields}
    for episode in dataset.iterate_episodes():
        observations = np.asarray(episode.observations)
        parts["observation"].append(observations[:-1])
        parts["next_observation"].append(observations[1:])
        parts["action"].append(np.asarray(episode.actions, np.int32))
        parts["reward"].append(np.asarray(episode.rewards, np.float32))
        parts["terminated"].append(np.asarray(episode.terminations, bool))
        parts["truncated"].append(np.asarray(episode.truncations, bool))
    if not parts["action"]:
        raise ValueError(f"dataset {dataset_id!r} has no episodes")
    return Transitions(**{field: jnp.asarray(np.concatenate(rows)) for field, rows in parts.items()})
