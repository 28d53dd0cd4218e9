"""Reading a Minari dataset into `Transitions` (device arrays), so an offline agent trains under `jit`; and an
offline run's dataset, checked against the environment it is evaluated in, with the identity its checkpoint
records (so that `--resume` refuses another dataset)."""

from __future__ import annotations

import hashlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.extras import require
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.offline import OfflineConfig, Transitions

# The returns a Minari dataset's scores are normalised by (`minari.get_normalized_score`: random play 0, the
# expert 1), which an offline run records with its dataset.
REFERENCE_SCORES = ("ref_min_score", "ref_max_score")


class DatasetError(ValueError):
    """An offline run's `--dataset` that cannot be used: not there, empty, or made for another environment."""


def load(dataset_id: str) -> Transitions:
    """The steps of the local Minari dataset `dataset_id` (e.g. "maxatar/Breakout/expert-v0") as device arrays,
    episode after episode; a dataset that is not there is Minari's own error, naming it."""
    require("offline", "minari")
    import minari

    return _transitions(minari.load_dataset(dataset_id))


def _transitions(dataset: Any) -> Transitions:
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
        raise ValueError(f"dataset {dataset.id!r} has no episodes")
    return Transitions(**{field: jnp.asarray(np.concatenate(rows)) for field, rows in parts.items()})


def inputs_for(config: Any) -> tuple[Transitions, ...]:
    """What a run's program takes after `t0` in each interval: an offline config's dataset (`for_config`),
    nothing for any other agent's."""
    return (for_config(config)[0],) if isinstance(config, OfflineConfig) else ()


def for_config(config: OfflineConfig) -> tuple[Transitions, dict[str, Any]]:
    """The transitions of `config.dataset` and its identity ({"id", "steps", "sha256"}: the digest of every
    array; and its `REFERENCE_SCORES`, None where it has none), after checking that the dataset was made for
    the config's environment (its recorded environment id, observation shape and dtype, and number of
    actions); every refusal is a `DatasetError` naming --dataset."""
    require("offline", "minari")
    import minari

    name = f"--dataset {config.dataset!r}"
    try:
        dataset = minari.load_dataset(config.dataset)
        data = _transitions(dataset)
    except (OSError, ValueError, KeyError) as error:
        raise DatasetError(f"{name}: {error}") from None
    env, _ = env_from_config(config)
    recorded = getattr(dataset.spec.env_spec, "id", None)
    if recorded is not None and recorded != config.env_id:
        raise DatasetError(f"{name} was made for {recorded}, not --env {config.env_id}")
    shape, dtype = data.observation.shape[1:], data.observation.dtype
    if shape != tuple(env.obs_shape) or dtype != np.dtype(env.obs_dtype):
        raise DatasetError(
            f"{name} holds observations of shape {shape} ({dtype}), --env {config.env_id}'s are "
            f"{tuple(env.obs_shape)} ({np.dtype(env.obs_dtype)})"
        )
    actions = getattr(dataset.action_space, "n", None)
    if actions != env.num_actions:
        raise DatasetError(f"{name} has {actions} actions, --env {config.env_id} has {env.num_actions}")
    digest = hashlib.sha256()
    for column in jax.device_get(tuple(data)):
        digest.update(np.ascontiguousarray(column).tobytes())
    refs = {name: dataset.storage.metadata.get(name) for name in REFERENCE_SCORES}
    refs = {name: None if value is None else float(value) for name, value in refs.items()}
    return data, {"id": config.dataset, "steps": data.num_steps, "sha256": digest.hexdigest(), **refs}
