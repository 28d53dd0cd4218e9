"""Gymnasium's functional API over a MaxAtar environment (`FuncEnv`), and the observation space every Gymnasium
class shows."""

from __future__ import annotations

import copy
import functools

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.experimental.functional import FuncEnv

from maxatar.core import (
    Environment,
    EnvParams,
    EnvState,
    observation_bounds,
    pytree_dataclass,
)


def observation_space(env: Environment) -> spaces.Space:
    """The Gymnasium space of one observation: integer codes are a `MultiDiscrete`, the rest (pixels included,
    Box(0, 255) uint8 as ALE's) a `Box`. A copy of one space per environment, built once: building a space (its
    bounds cast and checked) costs a fifth of making a CartPole. Each copy draws `sample()` from its own
    generator; the bounds they share are read-only, so that no one env's space can change another's."""
    return copy.copy(_space_of(env))


@functools.lru_cache(maxsize=64)
def _space_of(env: Environment) -> spaces.Space:
    low, high, dtype = observation_bounds(env)
    if np.issubdtype(dtype, np.integer) and not env.obs_pixels:
        space = spaces.MultiDiscrete(np.full(env.obs_shape, high + 1), dtype=dtype)
        arrays = (space.nvec, space.start)
    else:
        space = spaces.Box(low, high, env.obs_shape, dtype=dtype)
        arrays = (space.low, space.high, space.bounded_below, space.bounded_above)
    for array in arrays:
        array.flags.writeable = False
    return space


@pytree_dataclass
class StepState:
    """FuncEnv state: the environment's state plus what the transition that produced it returned."""

    env: EnvState
    reward: jax.Array
    truncated: jax.Array


class MaxAtarFuncEnv(FuncEnv):
    """Gymnasium's functional API (`initial`, `transition`, `observation`, `reward`, `terminal`).

    FuncEnv computes the reward from (state, action, next_state); MinAtar's reward comes out of the step,
    so the state carries the last transition's reward and truncation flag.
    """

    def __init__(self, env: Environment, params: EnvParams):
        self.env = env
        self.params = params
        self.observation_space = observation_space(env)
        self.action_space = spaces.Discrete(env.num_actions)
        super().__init__()

    def get_default_params(self, **kwargs) -> EnvParams:
        """The params `make` built (Gymnasium asks for them; keyword overrides go to `maxatar.make`)."""
        return self.params

    # Equal environments compare equal, so jitted code keyed on a FuncEnv is shared between instances.
    def __eq__(self, other):
        return isinstance(other, MaxAtarFuncEnv) and self.env == other.env

    def __hash__(self):
        return hash((MaxAtarFuncEnv, self.env))

    def initial(self, rng, params=None) -> StepState:
        """A new episode; the first state carries no transition, hence reward 0 and no truncation."""
        _, state = self.env.reset(rng, self.params if params is None else params)
        return StepState(state, jnp.float32(0.0), jnp.bool_(False))

    def transition(self, state: StepState, action, rng, params=None) -> StepState:
        """One step (no reset), keeping the reward and truncation flag for `reward` and `truncated` to read."""
        _, env_state, reward, _, truncated, _ = self.env.step(
            rng, state.env, action, self.params if params is None else params
        )
        return StepState(env_state, reward, truncated)

    def observation(self, state: StepState, rng=None, params=None):
        """The environment's observation of the state (deterministic: `rng` is ignored)."""
        return self.env.observation(state.env)

    def reward(self, state, action, next_state: StepState, rng=None, params=None):
        """The reward the step into `next_state` produced (stored there, since MinAtar's comes out of the step)."""
        return next_state.reward

    def terminal(self, state: StepState, rng=None, params=None):
        """Whether the game has ended (a time limit is `truncated`, not terminal)."""
        return state.env.terminated

    def truncated(self, state: StepState, rng=None, params=None):
        """Whether the step into this state reached the time limit (`max_steps`)."""
        return state.truncated
