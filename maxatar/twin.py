"""Plain-Python twins of the games' JAX steps, for front ends that step a few environments from Python.

A jitted JAX call pays a fixed dispatch cost, however little work it does, and that cost dwarfs one game
step in plain Python (as MinAtar's own numpy games show). `gymnasium.make` users (SB3, CleanRL) step one
environment per call, so for them each game also has a twin here: the same hooks (`reset`, `step`,
`observation`) written in plain Python on Python ints and floats, taking the same uniforms and returning the
same observation, reward, terminal flag and state, bit for bit. `tests/test_twins.py` plays every game's twin
beside its JAX step on the same uniforms and actions and compares everything at every step, so the parity
suites' proof against the reference carries over. float32 arithmetic is reproduced where the JAX step does it
(`f32`, `randint`).

`TwinEnv` adds what `Environment._advance` adds to a game step (sticky actions, the step counter, the
frozen terminal state, the time limit); `MaxAtarEnv` and `MaxAtarVectorEnv` use it as their Python
backend.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import Environment, EnvParams, EnvState

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
    if env.twin is None or any(np.ndim(leaf) for leaf in jax.tree.leaves(params)):
        return None
    module, name = env.twin.split(":")
    return getattr(importlib.import_module(module), name)(env, params)


class TwinEnv:
    """`Environment._advance` around a twin, for one environment: sticky actions (the previous executed
    action repeats when the sticky uniform is below the stored float32 ceiling), a frozen game once
    terminated (reward 0), the step counter and the time limit."""

    def __init__(self, env: Environment, params: EnvParams, twin: Twin):
        self.twin = twin
        self.action_set = env.action_set
        self.num_draws = env.num_draws
        self.sticky = float(params.sticky_action_prob)
        self.max_steps = int(params.max_steps)
        self.difficulty = int(params.difficulty)
        self.game: Any = None
        self.last_action = 0
        self.time = 0
        self.terminated = False

    def reset(self, uniforms: Sequence[float], fresh: bool = False, difficulty: int | None = None) -> np.ndarray:
        """A new episode from a tape row (its reset part), at ramp level `difficulty` (default: the params').
        The last executed action survives, as in MinAtar (`core.keep_last_action`), unless `fresh`: a first or
        seeded reset starts from action 0, so that a seed replays exactly."""
        if fresh:
            self.last_action = 0
        self.game = self.twin.reset(uniforms[self.num_draws :])
        level = self.difficulty if difficulty is None else difficulty
        if level:
            self.game = self.twin.at_difficulty(self.game, level)
        self.time = 0
        self.terminated = False
        return self.twin.observation(self.game)

    def load(self, state: EnvState) -> np.ndarray:
        """Continue from a pure state: its game, sticky action, step counter and terminal flag."""
        state = jax.device_get(state)  # numpy leaves, in one transfer
        self.game = self.twin.from_pure(state.game)
        self.last_action = int(state.last_action)
        self.time = int(state.time)
        self.terminated = bool(state.terminated)
        return self.twin.observation(self.game)

    def step(self, action: int, uniforms: Sequence[float]) -> tuple[np.ndarray, float, bool, bool]:
        """One step with an index into the action set and a tape row (its step part)."""
        executed = self.last_action if uniforms[0] < self.sticky else self.action_set[action]
        self.last_action = executed
        reward = 0.0
        if not self.terminated:
            self.game, reward, self.terminated = self.twin.step(self.game, executed, uniforms[1 : self.num_draws])
        self.time += 1
        truncated = 0 < self.max_steps <= self.time
        return self.twin.observation(self.game), reward, self.terminated, truncated

    def numpy_state(self) -> EnvState:
        """The JAX state this environment is in, with numpy leaves."""
        return EnvState(
            game=self.twin.to_pure(self.game),
            last_action=np.int32(self.last_action),
            time=np.int32(self.time),
            terminated=np.bool_(self.terminated),
        )

    def pure_state(self) -> EnvState:
        """The JAX state this environment is in."""
        return jax.tree.map(jnp.asarray, self.numpy_state())


__all__ = ["Twin", "TwinEnv", "f32", "load_twin", "randint"]
