"""Plain-Python twins of the games' JAX steps, for front ends that step a few environments from Python.

A jitted JAX call pays a fixed dispatch cost, however little work it does, and that cost dwarfs one game
step in plain Python (as MinAtar's own numpy games show). `gymnasium.make` users (SB3, CleanRL) step one
environment per call, so for them each game also has a twin here: the same hooks (`reset`, `step`,
`observation`) written in plain Python on Python ints and floats, taking the same uniforms and returning the
same observation, reward, terminal flag and state, bit for bit. `tests/test_twins.py` plays every game's twin
beside its JAX step on the same uniforms and actions and compares everything at every step, so the parity
suites' proof against the reference carries over. float32 arithmetic is reproduced where the JAX step does it
(`f32`, `randint`).

`maxatar.episode.TwinEnv` adds the episode rules around a twin's game step (sticky actions, the step counter,
the frozen terminal state, the time limit, auto-reset); `MaxAtarEnv` and `MaxAtarVectorEnv` use it as their
Python backend.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from maxatar.checks import is_batched
from maxatar.core import Environment, EnvParams

_FLOAT32 = struct.Struct("f")


def f32(x: float) -> float:
    """x rounded to float32 (to nearest, ties to even: C's float conversion), as a Python float (exact: every
    float32 is a float64). A struct round trip, because it is cheaper than `float(np.float32(x))` (twins call
    this on every float32 operation they reproduce)."""
    return _FLOAT32.unpack(_FLOAT32.pack(x))[0]


def randint(u: float, low: int, high: int) -> int:
    """`prng.uniform_to_int` on a float32 uniform: the product `u * n` rounds to float32 as in the JAX step
    (a float64 product of a float32 and a small int is exact, so rounding it once gives float32's product)."""
    n = high - low
    return low + min(int(f32(u * n)), n - 1)


class Twin:
    """One game's twin. A game state is whatever the twin likes (it may be mutated in place by `step`);
    `to_pure` turns it into the JAX game state, leaf for leaf the pytree the JAX step would hold."""

    def __init__(self, env: Environment, params: EnvParams):
        self.env = env
        self.params = params

    def reset(self, uniforms: Sequence[float]) -> Any:
        """The game's initial state from `env.num_reset_uniforms` uniforms (`reset_draws` then `init`)."""
        raise NotImplementedError

    def step(self, game: Any, action: int, uniforms: Sequence[float]) -> tuple[Any, float, bool]:
        """One game step with a full-action-set `action` and `env.num_step_uniforms` uniforms (`step_draws`
        then `game_step`): (game, reward as a float32 value, terminal)."""
        raise NotImplementedError

    def observation(self, game: Any) -> np.ndarray:
        """A fresh observation array, of the JAX observation's shape and dtype."""
        raise NotImplementedError

    def to_pure(self, game: Any) -> Any:
        """The JAX game state, with numpy leaves of the JAX state's dtypes."""
        raise NotImplementedError

    def from_pure(self, state: Any) -> Any:
        """The twin state of a JAX game state (numpy leaves): the inverse of `to_pure`, so that an episode can
        start from a chosen state (`reset(options={"state": ...})`)."""
        raise NotImplementedError

    def at_difficulty(self, game: Any, level: int) -> Any:
        """`Environment.at_difficulty` on a twin state: games with a ramp override it."""
        raise NotImplementedError


def load_twin(env: Environment, params: EnvParams) -> Twin | None:
    """The twin of `env` (its class attribute `twin`, "module:Class"), or None if the game has none or the
    params are not plain scalars (batched params belong to the JAX path)."""
    if env.twin is None or any(is_batched(leaf) for leaf in jax.tree.leaves(params)):
        return None
    module, name = env.twin.split(":")
    return getattr(importlib.import_module(module), name)(env, params)


__all__ = ["Twin", "f32", "load_twin", "randint"]
