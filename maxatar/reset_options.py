"""Gymnasium reset options, checked once for every front end: `reset(options={"state": ...})` starts the episode
from a chosen pure state, `reset(options={"difficulty": k})` at level k of the game's difficulty ramp.

Gymnasium's functional environments take no reset options (Gymnasium #1138), so the pure front end has its own
forms: a chosen state *is* the pure API's input (step from it; `env.observation(state)` is its observation),
and `EnvParams.difficulty` is the level every reset starts at (traced, vmappable, honoured by `AutoReset`).

Every check runs before anything changes, so a rejected option leaves the environment as it was.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from maxatar.checks import InputError, check_difficulty, check_state_layout, check_state_values
from maxatar.core import Environment, EnvState

STATE, DIFFICULTY, RESET_MASK = "state", "difficulty", "reset_mask"


def parse(options: dict | None, accepted: tuple[str, ...]) -> dict:
    """`options` as a dict, or an InputError naming the unknown keys and the accepted ones."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InputError(f"reset options must be a dict, got {options!r}")
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise InputError(f"unknown reset options {unknown}; accepted: {', '.join(accepted)}")
    if options.get(STATE) is not None and options.get(DIFFICULTY) is not None:
        raise InputError("give reset option 'state' or 'difficulty', not both (a state has its own level)")
    return dict(options)


@functools.cache
def state_spec(env: Environment) -> EnvState:
    """The shapes and dtypes of one environment's state (`jax.ShapeDtypeStruct` leaves)."""
    return jax.eval_shape(env.reset, jax.random.key(0), env.default_params())[1]


def check_state(env: Environment, state, num_envs: int | None = None) -> EnvState:
    """A chosen start state checked against `env`'s state: an `EnvState` with the same fields, shapes and dtypes
    (an InputError naming the first field that differs) and values its episodes reach (an InputError naming the
    first field outside its range: `maxatar.checks.check_state_values`). Array leaves are kept where they are
    (no copy to or from the device), others become numpy. With `num_envs`, a batch of states (leading axis
    `num_envs`) or one state for every sub-environment (broadcast)."""
    spec = state_spec(env)
    treedef = jax.tree.structure(spec)
    leaves = jax.tree.leaves(state) if isinstance(state, EnvState) else []
    first = leaves[0] if leaves else None
    batch = num_envs is not None and np.shape(first) == (num_envs, *jax.tree.leaves(spec)[0].shape)
    # one state for every sub-environment, or (its leaves leading with num_envs) one per sub-environment
    leaves = check_state_layout(spec, state, "reset option 'state'", (num_envs,) if batch else ())
    leaves = [leaf if isinstance(leaf, (np.ndarray, jax.Array)) else np.asarray(leaf) for leaf in leaves]
    check_state_values(env, treedef.unflatten(leaves))
    if num_envs is not None and not batch:
        leaves = [np.broadcast_to(leaf, (num_envs, *leaf.shape)) for leaf in jax.device_get(leaves)]
    return treedef.unflatten(leaves)


def check_level(env: Environment, level, num_envs: int | None = None):
    """A difficulty option as an int (or, with `num_envs`, an int32 array of one level per sub-environment;
    a single level applies to all), checked against `env`'s ramp (`maxatar.checks.check_difficulty`)."""
    check_difficulty(env, level, "reset option 'difficulty'")
    array = np.asarray(level)
    if num_envs is None:
        if array.shape != ():
            raise InputError(f"reset option 'difficulty' must be one integer level, got {level!r}")
        return int(array)
    if array.shape not in ((), (num_envs,)):
        raise InputError(f"reset option 'difficulty' must be one level or {num_envs} levels, got {level!r}")
    return np.broadcast_to(array, (num_envs,)).astype(np.int32)


__all__ = ["DIFFICULTY", "RESET_MASK", "STATE", "check_level", "check_state", "parse", "state_spec"]
