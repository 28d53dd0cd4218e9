"""The episode rules around a game step, written once per engine.

MinAtar's rules around its games, which every front end keeps: the previous *executed* action repeats with the
sticky probability (drawn first on every step, also on a frozen one); a terminated game stays frozen, with reward
0; the step counter advances and the time limit (`max_steps`, 0 for none) truncates; a new episode keeps the
last executed action (`core.keep_last_action`), except a seeded or first reset, which starts from action 0.
Auto-reset comes in Gymnasium's three modes (`AutoresetMode`): NEXT_STEP (the step after an episode ends resets,
ignoring its action, with reward 0 and both flags False), SAME_STEP (the finished step returns the new episode's
observation; the last one is kept in `info["final_obs"]`), DISABLED (the caller resets).

* JAX: `advance` (one step of a state: the rules above around `Environment.game_step`) and `autoreset` (one
  environment's step from one row of uniforms, in any mode; vmap it for batches). `Environment.transition`,
  `AutoReset`, the vector env's jitted step and the agents call them.
* Python: `TwinEnv`, the same rules around a game's plain-Python twin (`maxatar.twin`), for the Python backend of
  the Gymnasium front ends.

`tests/test_episode.py` plays both engines side by side in every mode on every game.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode

from maxatar.checks import check_key, check_params_entry
from maxatar.core import Draws, Environment, EnvParams, EnvState, keep_last_action, pytree_dataclass, tree_select
from maxatar.prng import uniform
from maxatar.twin import Twin

NEXT_STEP, SAME_STEP, DISABLED = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED

# --- JAX ---


def advance(env: Environment, state: EnvState, action, draws: Draws, params: EnvParams, freeze: bool = True):
    """One step of `state` without its observation: (next state, reward, terminated, truncated, info).

    `action` indexes the environment's action set; an out-of-range one is clipped and flagged in
    `info["invalid_action"]` (a concrete one was refused before, `Environment._check_action`). `freeze=False`
    skips keeping a terminated state's game: only for callers that replace such a state anyway (auto-reset)."""
    action = env._check_action(action)
    invalid = (action < 0) | (action >= env.num_actions)
    table = jnp.asarray(env.action_set, dtype=jnp.int32)
    chosen = table[jnp.clip(action, 0, env.num_actions - 1)]
    repeat = draws.sticky < params.sticky_action_prob
    executed = jnp.where(repeat, state.last_action, chosen).astype(jnp.int32)

    game, reward, terminal = env.game_step(state.game, executed, draws.game, params)
    if freeze:
        game = tree_select(state.terminated, state.game, game)
    reward = jnp.where(state.terminated, 0.0, reward).astype(jnp.float32)
    terminated = state.terminated | terminal
    time = state.time + 1
    truncated = (params.max_steps > 0) & (time >= params.max_steps)
    next_state = EnvState(game=game, last_action=executed, time=time, terminated=terminated)
    return next_state, reward, terminated, truncated, {"invalid_action": invalid}


def autoreset(
    env: Environment, mode: AutoresetMode, state: EnvState, pending, action, uniforms, params, final_obs=False
):
    """One environment's step with auto-reset from one row of `env.num_auto_reset_uniforms` uniforms (the
    step's, then a reset's): (next state, pending, observation, reward, terminated, truncated, info).

    `pending` (NEXT_STEP) says the episode ended on the previous step, so this step resets instead; the returned
    `pending` is that flag for the next step (SAME_STEP: always False; DISABLED: whether the caller must reset).
    SAME_STEP with `final_obs` puts the finished step's own observation in `info["final_obs"]`. The state is
    selected first and observed once (XLA compiles unused observations away)."""
    num_draws = env.num_draws
    draws = env.draws_from_uniforms(uniforms[:num_draws], state, params)
    # A finished state that is replaced below needs no freeze (NEXT_STEP, SAME_STEP without final_obs): skipping
    # the freeze's select per field makes the program smaller and quicker to compile at no cost to the step.
    freeze = mode == DISABLED or (mode == SAME_STEP and final_obs)
    stepped, reward, terminated, truncated, info = advance(env, state, action, draws, params, freeze)
    if mode == DISABLED:
        return stepped, terminated | truncated, env.observation(stepped), reward, terminated, truncated, info
    _, fresh = env.reset_from_uniforms(uniforms[num_draws:], params)
    if mode == SAME_STEP:
        done = terminated | truncated
        next_state = tree_select(done, keep_last_action(fresh, stepped), stepped)
        if final_obs:
            info = {**info, "final_obs": env.observation(stepped)}
        return next_state, jnp.zeros_like(done), env.observation(next_state), reward, terminated, truncated, info
    next_state = tree_select(pending, keep_last_action(fresh, state), stepped)
    reward = jnp.where(pending, 0.0, reward)
    terminated, truncated = terminated & ~pending, truncated & ~pending
    return next_state, terminated | truncated, env.observation(next_state), reward, terminated, truncated, info


class AutoReset:
    """Wraps an environment so that `step` resets finished episodes in the same step (gymnax/PureJaxRL style).

    On a step that terminates or truncates, the returned observation and state are those of a fresh episode,
    while reward, terminated and truncated describe the finished step. With `final_obs=True`,
    `info["final_obs"]` holds the last observation of the finished episode. The sticky action carries over
    (`keep_last_action`). One uniform vector per step covers both the step's and the reset's variates.
    """

    def __init__(self, env: Environment, final_obs: bool = False):
        self.env = env
        self.final_obs = final_obs

    def __getattr__(self, name):
        """Everything else is the wrapped environment's (spaces, params, hooks). copy and pickle look names up
        on an empty object before `env` is set: there is nothing to forward to yet."""
        if "env" not in vars(self):
            raise AttributeError(name)
        return getattr(self.env, name)

    def __eq__(self, other):
        return isinstance(other, AutoReset) and (self.env, self.final_obs) == (other.env, other.final_obs)

    def __hash__(self):
        return hash((AutoReset, self.env, self.final_obs))

    @property
    def num_uniforms(self) -> int:
        """Uniforms one auto-resetting step consumes (`Environment.num_auto_reset_uniforms`)."""
        return self.env.num_auto_reset_uniforms

    def reset(self, key, params=None):
        """The wrapped environment's reset (the wrapper changes only `step`)."""
        return self.env.reset(key, params)

    def step(self, key, state, action, params=None):
        """One step that starts a fresh episode where this one ends, from one draw of `num_uniforms`."""
        check_key(key)
        check_params_entry(self.env, params)  # params built by hand, outside jit (`maxatar.checks`)
        params = self.env.default_params() if params is None else params
        return self.step_from_uniforms(uniform(key, (self.num_uniforms,)), state, action, params)

    def step_from_uniforms(self, uniforms, state, action, params):
        """`step` from given uniforms (lets a batched caller draw everything in one call)."""
        next_state, _, obs, reward, terminated, truncated, info = autoreset(
            self.env, SAME_STEP, state, False, action, uniforms, params, self.final_obs
        )
        return obs, next_state, reward, terminated, truncated, info


@pytree_dataclass
class EpisodeStatisticsState:
    """`EpisodeStatistics`' state: the environment's, the running episode's return and length so far, and the
    last finished episode's (zero, with `returned_episode_valid` False, until one finishes)."""

    env_state: EnvState
    episode_return: jax.Array
    episode_length: jax.Array
    returned_episode_return: jax.Array
    returned_episode_length: jax.Array
    returned_episode_valid: jax.Array


class EpisodeStatistics:
    """Wraps an `AutoReset` so that each environment keeps its episode's return and length, and every step
    reports the finished ones in `info` under gymnax's `LogWrapper` keys (PureJaxRL's logging reads them as is):

    * `returned_episode`: this step ended an episode (terminated or truncated);
    * `returned_episode_returns` / `returned_episode_lengths`: the last finished episode's undiscounted return
      and length in steps, so on a `returned_episode` step the one that just ended;
    * `returned_episode_valid`: some episode has finished (before that the two above are 0).

    The mean return of the episodes a batched rollout finished is
    `info["returned_episode_returns"][info["returned_episode"]].mean()`. `reset`, `step` and
    `step_from_uniforms` are `AutoReset`'s with `EpisodeStatisticsState` in place of the environment's state
    (`state.env_state`); jit, vmap and scan them alike.
    """

    def __init__(self, auto: AutoReset):
        self.auto = auto

    def __getattr__(self, name):
        """Everything else is the `AutoReset`'s (`num_uniforms`, the environment's attributes)."""
        if "auto" not in vars(self):  # copy and pickle: nothing to forward to yet
            raise AttributeError(name)
        return getattr(self.auto, name)

    def __eq__(self, other):
        return isinstance(other, EpisodeStatistics) and self.auto == other.auto

    def __hash__(self):
        return hash((EpisodeStatistics, self.auto))

    @staticmethod
    def start(env_state: EnvState) -> EpisodeStatisticsState:
        """Statistics around a fresh environment state (for callers that reset by other means)."""
        zero, zeros = jnp.float32(0.0), jnp.int32(0)
        return EpisodeStatisticsState(env_state, zero, zeros, zero, zeros, jnp.bool_(False))

    def reset(self, key, params=None):
        """The environment's reset, with no episode recorded yet."""
        obs, env_state = self.auto.reset(key, params)
        return obs, self.start(env_state)

    def step(self, key, state: EpisodeStatisticsState, action, params=None):
        """`AutoReset.step`, recording the episode."""
        return self._record(state, *self.auto.step(key, state.env_state, action, params))

    def step_from_uniforms(self, uniforms, state: EpisodeStatisticsState, action, params):
        """`AutoReset.step_from_uniforms`, recording the episode."""
        return self._record(state, *self.auto.step_from_uniforms(uniforms, state.env_state, action, params))

    @staticmethod
    def _record(state, obs, env_state, reward, terminated, truncated, info):
        done = terminated | truncated
        episode_return, episode_length = state.episode_return + reward, state.episode_length + 1
        state = EpisodeStatisticsState(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, episode_return),
            episode_length=jnp.where(done, 0, episode_length),
            returned_episode_return=jnp.where(done, episode_return, state.returned_episode_return),
            returned_episode_length=jnp.where(done, episode_length, state.returned_episode_length),
            returned_episode_valid=state.returned_episode_valid | done,
        )
        info = {
            **info,
            "returned_episode": done,
            "returned_episode_returns": state.returned_episode_return,
            "returned_episode_lengths": state.returned_episode_length,
            "returned_episode_valid": state.returned_episode_valid,
        }
        return obs, state, reward, terminated, truncated, info


# --- Python ---


class TwinEnv:
    """The episode rules around a twin, for one environment: sticky actions (the previous executed action repeats
    when the sticky uniform is below the stored float32 ceiling), a frozen game once terminated (reward 0), the
    step counter, the time limit, and auto-reset in Gymnasium's modes (`autoreset_step`)."""

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
        """One step with an index into the action set and a tape row (its step part): `advance`."""
        executed = self.last_action if uniforms[0] < self.sticky else self.action_set[action]
        self.last_action = executed
        reward = 0.0
        if not self.terminated:
            self.game, reward, self.terminated = self.twin.step(self.game, executed, uniforms[1 : self.num_draws])
        self.time += 1
        truncated = 0 < self.max_steps <= self.time
        return self.twin.observation(self.game), reward, self.terminated, truncated

    def autoreset_step(self, mode: AutoresetMode, pending: bool, action: int, uniforms: Sequence[float]):
        """`autoreset` in Python: (pending, observation, reward, terminated, truncated, final observation or
        None) from one tape row."""
        if mode == NEXT_STEP and pending:
            return False, self.reset(uniforms), 0.0, False, False, None  # the action is ignored
        obs, reward, terminated, truncated = self.step(action, uniforms)
        done = terminated or truncated
        if mode == SAME_STEP:
            return False, (self.reset(uniforms) if done else obs), reward, terminated, truncated, obs
        return done, obs, reward, terminated, truncated, None

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


__all__ = [
    "DISABLED",
    "NEXT_STEP",
    "SAME_STEP",
    "AutoReset",
    "EpisodeStatistics",
    "EpisodeStatisticsState",
    "TwinEnv",
    "advance",
    "autoreset",
]
