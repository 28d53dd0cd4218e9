"""Plumbing shared by the agents: the shape of a training program, its logging schedule, the environment a
config asks for, and config <-> JSON conversion. No learning happens here."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

import maxatar
from maxatar.core import Environment, EnvParams


class Schedule(NamedTuple):
    """How a run is cut into logging intervals. Every interval is the same jitted computation, so running
    them one by one (with checkpoints between) gives exactly the result of one scan over all of them."""

    steps_per_interval: int  # vector steps (each steps every environment of a seed once)
    num_intervals: int
    frames_per_interval: int
    total_frames: int  # total_steps rounded up to whole intervals


def schedule(total_steps: int, log_points: int, num_envs: int) -> Schedule:
    vector_steps = math.ceil(total_steps / num_envs)
    intervals = min(log_points, vector_steps)
    steps = math.ceil(vector_steps / intervals)
    intervals = math.ceil(vector_steps / steps)
    return Schedule(steps, intervals, steps * num_envs, steps * num_envs * intervals)


class Program(NamedTuple):
    """The pure functions an agent module builds from its config; `make_train` and the CLI both use them.

    init(key) -> state; interval(state, t0) -> (state, metrics) runs one logging interval starting at global
    vector step t0 (a scalar shared by all seeds); evaluate(state) -> returns of the final policy;
    act(policy_params, obs) -> action is the policy used for evaluation and rendering, and
    `policy_field` names the field of the state that holds its params.
    """

    config: Any
    init: Callable
    interval: Callable
    evaluate: Callable
    act: Callable
    policy_field: str
    schedule: Schedule


def run_whole(program: Program, key: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
    """The whole run as one pure function: `init`, then every logging interval under `lax.scan`. Returns the
    final state and the metrics stacked over intervals (the body of each agent's `make_train`)."""

    def one_interval(state, i):
        return program.interval(state, i * program.schedule.steps_per_interval)

    intervals = jnp.arange(program.schedule.num_intervals, dtype=jnp.int32)
    return jax.lax.scan(one_interval, program.init(key), intervals)


def env_from_config(config: Any) -> tuple[Environment, EnvParams]:
    """`maxatar.make(config.env_id)` with the config's sticky-action and ramping choices (None = default)."""
    overrides = {}
    if config.sticky_action_prob is not None:
        overrides["sticky_action_prob"] = config.sticky_action_prob
    if config.difficulty_ramping is not None:
        overrides["difficulty_ramping"] = config.difficulty_ramping
    return maxatar.make(config.env_id, **overrides)


def canonical_env_id(env_id: str) -> str:
    """The id with its `maxatar/` namespace (raises ValueError for an unknown id)."""
    maxatar.make(env_id)
    name = env_id.split(":")[-1]
    return name if name.startswith("maxatar/") else f"maxatar/{name}"


def field_types(config_cls: type) -> dict[str, Any]:
    return typing.get_type_hints(config_cls)


def parse_value(text: str, kind: Any) -> Any:
    """Parse a command-line string into a config field's type (int, float, bool, str, tuple[int, ...],
    or any of these `| None`)."""
    args = typing.get_args(kind)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        if text.strip().lower() in ("none", "null", ""):
            return None
        inner = [a for a in args if a is not type(None)]
        return parse_value(text, inner[0])
    if origin is tuple:
        items = [s for s in text.replace("(", "").replace(")", "").split(",") if s.strip()]
        return tuple(parse_value(s.strip(), args[0]) for s in items)
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"expected a boolean, got {text!r}")
    if kind is int:
        value = float(text.replace("_", ""))
        if not value.is_integer():
            raise ValueError(f"expected an integer, got {text!r}")
        return int(value)
    if kind is float:
        return float(text)
    return text


def config_to_dict(config: Any) -> dict[str, Any]:
    """JSON-ready dict (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}


def config_from_dict(config_cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a config from `config_to_dict` output; unknown or missing fields are an error."""
    types_ = field_types(config_cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown} for {config_cls.__module__}.{config_cls.__name__}")
    values = {}
    for name, value in data.items():
        if isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return config_cls(**values)


def config_diff(a: Any, b: Any) -> dict[str, tuple[Any, Any]]:
    da, db = config_to_dict(a), config_to_dict(b)
    return {k: (da.get(k), db.get(k)) for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)}


def tree_paths(tree: Any) -> list[str]:
    """Stable, readable names of a pytree's leaves (used as checkpoint keys)."""
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


def tie_to_seed(tree: Any, key: jax.Array) -> Any:
    """Return `tree` unchanged, but with every leaf formally depending on `key`.

    Under `vmap` over seeds, JAX keeps a value that does not depend on the seed (a zero-filled buffer, an
    optimiser's step count) unbatched. Then `vmap(train)` and the command line, which vmaps one chunk at a
    time over states that all carry the seed axis, would compile different arithmetic and could differ in
    the last bit. Tying every leaf of the initial state to the key makes both batch alike, so a chunked,
    checkpointed run equals the one-program run bit for bit.
    """
    same = key.ravel()[0] == key.ravel()[0]
    return jax.tree.map(lambda x: jnp.where(same, x, x), tree)
