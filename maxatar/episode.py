"""The episode protocol, written once per engine: what every front end does around a game's step and reset.

MinAtar's rules around its games, which every front end keeps: a new episode starts at the params' ramp level (or
a chosen one); the previous *executed* action repeats with the sticky probability (drawn first on every step, also
on a frozen one); a terminated game stays frozen, with reward 0; the step counter advances and the time limit
(`max_steps`, 0 for none) truncates; a new episode keeps the last executed action (`keep_last_action`), except a
fresh one (a seeded or first reset), which starts from action 0. Auto-reset comes in Gymnasium's three modes
(`AutoresetMode`): NEXT_STEP (the step after an episode ends resets, ignoring its action, with reward 0 and both
flags False), SAME_STEP (the finished step returns the new episode's observation; the last one is kept in
`info["final_obs"]`), DISABLED (the caller resets). A start state loaded with its episode ended counts as just
finished (`ended_on_load`).

* JAX: `Environment`, the base every game subclasses, whose `reset`, `step` and `transition` are the protocol
  around the hooks of `maxatar.core.Environment`; `restart` (one environment's new episode, fresh or kept, at a
  level), `reset_batch` (a batch's, all or masked), `advance` (one step of a state) and `autoreset` (one
  environment's step from one row of uniforms, in any mode; vmap it for batches). `AutoReset`, the vector env's
  jitted calls and the agents call them.
* Python: `TwinEnv`, the same rules around a game's plain-Python twin (`maxatar.twin`), and `reset_twins`, for the
  Python backend of the Gymnasium front ends.

`tests/test_episode.py` plays both engines side by side in every mode on every game.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode

from maxatar import core
from maxatar.checks import (
    INT32_MAX,
    InputError,
    check_action,
    check_key,
    check_params_entry,
    check_state_layout,
    check_time,
    check_traced_action,
)
from maxatar.core import Draws, EnvParams, EnvState, pytree_dataclass, tree_select
from maxatar.prng import uniform
from maxatar.reset_options import state_spec
from maxatar.twin import Twin

NEXT_STEP, SAME_STEP, DISABLED = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED

# --- JAX ---


class Environment(core.Environment):
    """Base class of every MaxAtar environment: the contract (`maxatar.core.Environment`: a game fills its hooks
    and data) with the episode protocol around it, so that a game's `reset`, `step` and `transition` are the
    protocol's, as a gymnax environment's are."""

    def reset_from_draws(self, draws: Any, params: EnvParams) -> tuple[jax.Array, EnvState]:
        """(observation, state) of a fresh episode from given reset variates: deterministic, for replays. The
        game starts at ramp level `params.difficulty` (a traced level is clipped into range)."""
        game = self.init(draws, params)
        if self.max_difficulty:  # static: games without a ramp compile nothing here
            level = jnp.clip(jnp.asarray(params.difficulty, jnp.int32), 0, self.max_difficulty)
            game = self.at_difficulty(game, level)
        state = EnvState(
            game=game,
            last_action=jnp.int32(0),
            time=jnp.int32(0),
            terminated=jnp.bool_(False),
        )
        return self.observation(state), state

    def reset_from_uniforms(self, uniforms: jax.Array, params: EnvParams) -> tuple[jax.Array, EnvState]:
        """Reset from `num_reset_uniforms` uniforms (lets a batched caller draw everything in one call)."""
        return self.reset_from_draws(self.reset_draws(uniforms, params), params)

    def reset(self, key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, EnvState]:
        """(observation, state) of a fresh episode; the sticky action starts at 0 (see `keep_last_action`)."""
        check_key(key)
        check_params_entry(self, params)  # params built by hand (outside jit: traced ones pass)
        params = self.default_params() if params is None else params
        return self.reset_from_draws(self.sample_reset_draws(key, params), params)

    def transition(self, state: EnvState, action, draws: Draws, params: EnvParams | None = None):
        """Deterministic step: (obs, state, reward, terminated, truncated, info).

        `action` indexes this environment's action set. Under `jit` an out-of-range action cannot raise:
        it is clipped into range and `info["invalid_action"]` is set, so state is never indexed out of
        bounds. Outside `jit` it raises. A terminated state stays frozen (reward 0), as in MinAtar, but
        the sticky draw is still consumed and the step counter still advances.
        """
        check_params_entry(self, params)
        check_state(self, state)
        params = self.default_params() if params is None else params
        next_state, reward, terminated, truncated, info = advance(self, state, action, draws, params)
        return self.observation(next_state), next_state, reward, terminated, truncated, info

    def step(self, key: jax.Array, state: EnvState, action, params: EnvParams | None = None):
        """`transition` after `sample_draws`. Does not reset: see `AutoReset`."""
        check_key(key)
        check_params_entry(self, params)
        check_state(self, state)
        params = self.default_params() if params is None else params
        action = self._check_action(action)  # before any work, so bad input fails fast
        return self.transition(state, action, self.sample_draws(key, state, params), params)

    def _check_action(self, action) -> jax.Array:
        """`action` as int32; a concrete one must be an in-range integer scalar, a traced one an integer scalar
        (`maxatar.checks.check_action`, `check_traced_action`)."""
        if isinstance(action, jax.core.Tracer):
            return check_traced_action(action)
        return jnp.int32(check_action(action, self.num_actions))


def check_state(env: Environment, state, what: str = "state") -> None:
    """A state entering the pure API (`Environment.step`, `transition`, `autoreset`, so `AutoReset` and the
    front ends): the structure, shapes and dtypes of one state of `env` (`reset_options.state_spec`; vmap the
    call for a batch), or an InputError naming `what` and the field. Types and shapes only: under `jit` it runs
    once per trace and the compiled step is unchanged. The step counter's value is `advance`'s to check."""
    check_state_layout(state_spec(env), state, what)


def keep_last_action(fresh: EnvState, previous: EnvState) -> EnvState:
    """`fresh` (a reset state) with `previous`'s last executed action: MinAtar keeps the last executed action
    across resets, so the sticky action carries over into the next episode."""
    return dataclasses.replace(fresh, last_action=previous.last_action)


def reset_part(env: Environment, uniforms, params: EnvParams):
    """The reset's uniforms in one row of `num_auto_reset_uniforms` (or a batch of rows): from
    `env.reset_offset(params)` on, `num_reset_uniforms` of them (a traced offset is a dynamic slice)."""
    offset = env.reset_offset(params)
    if isinstance(offset, int):
        return uniforms[..., offset : offset + env.num_reset_uniforms]
    start = (0,) * (uniforms.ndim - 1) + (offset,)
    return jax.lax.dynamic_slice(uniforms, start, (*uniforms.shape[:-1], env.num_reset_uniforms))


def restart(env: Environment, uniforms, params: EnvParams, previous: EnvState | None = None, level=None):
    """One environment's new episode from a reset's `num_reset_uniforms` uniforms: (observation, state). It starts
    at ramp level `level` (None: the params'); the sticky action of `previous`, the state it replaces, carries
    over (`keep_last_action`), while a fresh episode (no `previous`: a first or seeded reset) starts from 0."""
    params = params if level is None else params.replace(difficulty=level)
    obs, state = env.reset_from_uniforms(uniforms, params)
    return obs, (state if previous is None else keep_last_action(state, previous))


def reset_batch(env: Environment, uniforms, params: EnvParams, levels=None, state=None, pending=None, mask=None):
    """A batch's reset from one row of reset uniforms per environment: (state, pending, observation). Without
    `state`, every environment starts a fresh episode (nothing pending); with the batch's `state`, `pending` and
    a bool `mask`, the masked ones start a new episode keeping their sticky action (no longer pending) and the
    others carry on. `levels`: one ramp level per environment, or None for the params'."""
    obs, fresh = jax.vmap(partial(restart, env), (0, None, 0, 0))(uniforms, params, state, levels)
    if state is None:
        return fresh, jnp.zeros(uniforms.shape[0], bool), obs
    select = jax.vmap(tree_select)
    obs = select(mask, obs, jax.vmap(env.observation)(state))
    return select(mask, fresh, state), pending & ~mask, obs


def in_groups(groups, fn, params, *batched):
    """`fn(params, *batched)` on a batch; with `groups` (`Environment.mixed_groups`: (params, start, stop) of
    contiguous groups) each group's slice of the batched arguments with its own params, the outputs concatenated,
    so that a batch spread over tasks costs the sum of its groups."""
    if groups is None:
        return fn(params, *batched)
    parts = [fn(p, *[jax.tree.map(lambda x, a=a, b=b: x[a:b], arg) for arg in batched]) for p, a, b in groups]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)


def advance(env: Environment, state: EnvState, action, draws: Draws, params: EnvParams, freeze: bool = True):
    """One step of `state` without its observation: (next state, reward, terminated, truncated, info).

    `action` indexes the environment's action set; an out-of-range one is clipped and flagged in
    `info["invalid_action"]` (a concrete one was refused before, `Environment._check_action`). `freeze=False`
    skips keeping a terminated state's game: only for callers that replace such a state anyway (auto-reset)."""
    action = env._check_action(action)
    check_time(state.time)  # a concrete counter (outside jit): 0 .. 2**31 - 2, so that the step cannot wrap it
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
    return next_state, reward, terminated, truncated, {"invalid_action": invalid, **env.step_info(state, params)}


def autoreset(
    env: Environment, mode: AutoresetMode, state: EnvState, pending, action, uniforms, params, final_obs=False
):
    """One environment's step with auto-reset from one row of `env.num_auto_reset_uniforms` uniforms (the
    step's, then a reset's): (next state, pending, observation, reward, terminated, truncated, info).

    `pending` (NEXT_STEP) says the episode ended on the previous step, so this step resets instead; the returned
    `pending` is that flag for the next step (SAME_STEP: always False; DISABLED: whether the caller must reset).
    SAME_STEP with `final_obs` puts the finished step's own observation in `info["final_obs"]`. The state is
    selected first and observed once (XLA compiles unused observations away). The whole step is the current
    game's (`Environment.as_task`); `info` adds what `env.step_info` reports of the state it steps from."""

    check_state(env, state)

    def played(game_env, state, params):
        return _autoreset(game_env, mode, state, pending, action, uniforms, params, final_obs)

    *stepped, info = env.as_task(params, state, played)
    return (*stepped, {**info, **env.step_info(state, params)})


def _autoreset(env: Environment, mode: AutoresetMode, state: EnvState, pending, action, uniforms, params, final_obs):
    num_draws = env.num_draws
    draws = env.draws_from_uniforms(uniforms[:num_draws], state, params)
    # A finished state that is replaced below needs no freeze (NEXT_STEP, SAME_STEP): skipping the freeze's select
    # per field makes the program smaller, quicker to compile and to run. A frozen game's observation is the
    # loaded state's, so SAME_STEP's final_obs selects between two observations instead.
    stepped, reward, terminated, truncated, info = advance(env, state, action, draws, params, mode == DISABLED)
    if mode == DISABLED:
        return stepped, terminated | truncated, env.observation(stepped), reward, terminated, truncated, info
    _, fresh = restart(env, reset_part(env, uniforms, params), params, stepped if mode == SAME_STEP else state)
    if mode == SAME_STEP:
        done = terminated | truncated
        next_state = tree_select(done, fresh, stepped)
        if final_obs:
            last = jnp.where(state.terminated, env.observation(state), env.observation(stepped))
            info = {**info, "final_obs": last}
        return next_state, jnp.zeros_like(done), env.observation(next_state), reward, terminated, truncated, info
    next_state = tree_select(pending, fresh, stepped)
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
        if not isinstance(auto, AutoReset):  # a bare env's steps repeat an ended episode's flags: counted again
            bare = isinstance(auto, Environment)
            hint = " (wrap it first: EpisodeStatistics(maxatar.AutoReset(env)))" if bare else ""
            raise InputError(f"EpisodeStatistics wraps a maxatar.AutoReset, got {type(auto).__name__}{hint}")
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
        return self._record(state, *self.auto.step(key, self._env_state(state), action, params))

    def step_from_uniforms(self, uniforms, state: EpisodeStatisticsState, action, params):
        """`AutoReset.step_from_uniforms`, recording the episode."""
        return self._record(state, *self.auto.step_from_uniforms(uniforms, self._env_state(state), action, params))

    @staticmethod
    def _env_state(state) -> EnvState:
        """The environment's state inside `state`, which must be this wrapper's (its reset's)."""
        if not isinstance(state, EpisodeStatisticsState):
            got = type(state).__name__
            raise InputError(f"state must be the EpisodeStatisticsState EpisodeStatistics.reset returns, got {got}")
        return state.env_state

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


def same_step_info(final_obs, done) -> dict:
    """A batch's `info` in the SAME_STEP mode (Gymnasium's keys): the finished episodes' last observations, and
    `done`, where they are meaningful. Either engine's arrays."""
    return {"final_obs": final_obs, "_final_obs": done, "final_info": {}, "_final_info": done}


def ended_on_load(mode: AutoresetMode, start: EnvState, chosen=None) -> np.ndarray:
    """Which environments given start state `start` (one per environment, on the host) begin pending: those whose
    episode has ended, in the NEXT_STEP and DISABLED modes, as after a step that ends an episode (the next step
    resets them; DISABLED: the caller resets them first), so that no engine steps an ended game. SAME_STEP
    resets it within the step, with the loaded game's observation as the final one. `chosen`: the environments
    that load (None: all)."""
    ended = np.asarray(jax.device_get(start.terminated), bool)
    if mode == SAME_STEP:
        return np.zeros_like(ended)
    return ended if chosen is None else ended & chosen


# --- Python ---


class TwinEnv:
    """The episode rules around a twin, for one environment: sticky actions (the previous executed action repeats
    when the sticky uniform is below the stored float32 ceiling), a frozen game once terminated (reward 0), the
    step counter, the time limit, and auto-reset in Gymnasium's modes (`autoreset_step`). `obs` is the current
    observation."""

    def __init__(self, env: Environment, params: EnvParams, twin: Twin):
        self.twin = twin
        self.action_set = env.action_set
        self.num_draws = env.num_draws
        self.reset_offset = env.reset_offset(params)  # where a tape row's reset part starts (`reset_part`)
        self.sticky = float(params.sticky_action_prob)
        self.max_steps = int(params.max_steps)
        self.difficulty = int(params.difficulty)
        self.game: Any = None
        self.last_action = 0
        self.time = 0
        self.terminated = False
        self.obs: np.ndarray | None = None

    def reset(self, uniforms: Sequence[float], fresh: bool = False, difficulty: int | None = None) -> np.ndarray:
        """A new episode from a tape row (its reset part), at ramp level `difficulty` (default: the params').
        The last executed action survives, as in MinAtar (`keep_last_action`), unless `fresh`: a first or
        seeded reset starts from action 0, so that a seed replays exactly."""
        if fresh:
            self.last_action = 0
        self.game = self.twin.reset(uniforms[self.reset_offset :])
        level = self.difficulty if difficulty is None else difficulty
        if level:
            self.game = self.twin.at_difficulty(self.game, level)
        self.time = 0
        self.terminated = False
        self.obs = self.twin.observation(self.game)
        return self.obs

    def load(self, state: EnvState) -> np.ndarray:
        """Continue from a pure state: its game, sticky action, step counter and terminal flag."""
        state = jax.device_get(state)  # numpy leaves, in one transfer
        self.game = self.twin.from_pure(state.game)
        self.last_action = int(state.last_action)
        self.time = int(state.time)
        self.terminated = bool(state.terminated)
        self.obs = self.twin.observation(self.game)
        return self.obs

    def step(self, action: int, uniforms: Sequence[float]) -> tuple[np.ndarray, float, bool, bool]:
        """One step with an index into the action set and a tape row (its step part): `advance`."""
        executed = self.last_action if uniforms[0] < self.sticky else self.action_set[action]
        self.last_action = executed
        reward = 0.0
        if not self.terminated:
            self.game, reward, self.terminated = self.twin.step(self.game, executed, uniforms[1 : self.num_draws])
        self.time = self.time + 1 if self.time < INT32_MAX else -(2**31)  # an int32 counter, as the JAX step's
        truncated = 0 < self.max_steps <= self.time
        self.obs = self.twin.observation(self.game)
        return self.obs, reward, self.terminated, truncated

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


def reset_twins(twins: list[TwinEnv], rows, pending: np.ndarray, levels=None, mask=None) -> np.ndarray:
    """`reset_batch` in Python, one twin after another, from one tape row per twin: every twin starts a fresh
    episode (nothing pending), or with a bool `mask` the masked ones start a new episode keeping their sticky
    action (no longer pending) and the others carry on. Returns the new pending flags; each twin's `obs` is its
    observation."""
    chosen = range(len(twins)) if mask is None else np.flatnonzero(mask).tolist()
    for i in chosen:
        twins[i].reset(rows[i], fresh=mask is None, difficulty=None if levels is None else int(levels[i]))
    return np.zeros(len(twins), bool) if mask is None else pending & ~mask


__all__ = [
    "DISABLED",
    "NEXT_STEP",
    "SAME_STEP",
    "AutoReset",
    "Environment",
    "EpisodeStatistics",
    "EpisodeStatisticsState",
    "TwinEnv",
    "advance",
    "autoreset",
    "ended_on_load",
    "keep_last_action",
    "in_groups",
    "reset_batch",
    "reset_part",
    "reset_twins",
    "restart",
    "same_step_info",
]
