"""Tabular Q-learning, expected SARSA and double Q-learning on a small discrete state, as one jitted JAX program.

The state is an index into a table: for Doors (fixed doors) the agent's cell and the goal's column, read from
the pure environment's state (`state_index`), so the agent plays the exact environment. Every agent (seed)
keeps its own table and plays `num_envs` environments at once; each step, every environment takes an
epsilon-greedy action (ties among the greedy actions broken uniformly at random) and moves Q(s, a) towards

    Q-learning       r + gamma (1 - terminated) max_a' Q(s', a')
    expected SARSA   r + gamma (1 - terminated) [(1 - eps) max_a' Q(s', a') + eps mean_a' Q(s', a')]
    double Q         r + gamma (1 - terminated) Q_B(s', argmax_a' Q_A(s', a'))  (A, B swapped by a coin)

by `lr` times the TD error (expected SARSA's expectation is under the epsilon-greedy policy itself: the greedy
share goes to the maxima, whose Q is the max). A time limit is not a terminal state: its step bootstraps from
the state it cut. The updates of one step's environments are computed from the same table; where several
update the same (s, a), one of them is written (XLA's scatter keeps the last): summed, k of them would act as
a step size of k * lr, and the episodes that all time out together and restart on the same few cells made
that diverge. With one environment per agent this is the textbook sequential rule.

Two models play the environment, with the same results bit for bit (tests/test_q_learning.py):

* `model="env"` steps the environment itself;
* `model="table"` (default) steps `TableGame`, the environment as tables that `transition_table` fills by
  running the environment's own `game_step` on every (state, action), so the dynamics stay the environment's.
Both step through `maxatar.episode.autoreset`, the episode rules every front end uses (sticky action, time
limit, auto-reset).

Read top to bottom: `Config` and `PRESETS`; the tabular view of an environment (its `tabular` hook,
`transition_table`); acting (`epsilon_greedy`) and the TD targets; `make_program`; `make_train(config)`.

    python -m maxatar_agents.q_learning --env maxatar/Doors-v0 --seeds 30 --out runs/doors-q
"""

from __future__ import annotations

import dataclasses
import functools
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from maxatar import episode
from maxatar.core import Environment, EnvParams, EnvState, Tabular
from maxatar.episode import SAME_STEP, autoreset
from maxatar.prng import materialize, threefry2x32
from maxatar_agents.algorithms import program
from maxatar_agents.algorithms.config import RunConfig, check_env, env_from_config
from maxatar_agents.algorithms.evaluation import final_evaluation
from maxatar_agents.algorithms.fields import FIELD_CHOICES, Bounds, ConfigError, check_fields, knob
from maxatar_agents.algorithms.program import Program, schedule, tie_to_seed

ALGORITHM = "q_learning"
DEFAULT_PRESET = "doors"
METHODS = FIELD_CHOICES["method"]
ROWS = 4  # uniforms per environment and step: action, sticky, the reset's two (double Q adds its coin)
MODELS = FIELD_CHOICES["model"]


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """Every knob of a run: a run's (`RunConfig`: environment and setting, frames, logging,
    evaluation), with a tabular agent's defaults, and the method's own. Frames count environment steps of
    one agent (seed) over its environments."""

    env_id: str = knob("maxatar/Doors-v0", "environment id (`--env` for short); one with a tabular view (Doors)")
    total_steps: int = knob(2_000_000, "frames per agent (rounded up to whole logging intervals)")
    num_envs: int = knob(
        64,
        "environments per agent, stepped together, updating one table (one write per (s, a) a step)",
    )
    log_points: int = knob(20, "logged points over the run; also the unit of resumable chunks")
    method: str = knob("q_learning", 'TD target: "q_learning", "expected_sarsa" or "double_q"')
    lr: float = knob(0.5, "step size alpha of every update")
    epsilon: float = knob(0.1, "exploration rate of the epsilon-greedy behaviour policy")
    model: str = knob("table", '"table": dynamics as gathers from tables built from the env; "env": env.transition')

    def __post_init__(self):
        """Fail on a bad value before anything is written or compiled: every field's type and bounds (the
        agents' shared checks, `fields.check_fields`, with a step size in (0, 1]), the choices, then the
        environment, made once: it must have a tabular view (`tabular_view`)."""
        check_fields(self, {"lr": Bounds(0.0, 1.0, low_open=True)})
        check_env(self)
        try:
            tabular_view(*env_from_config(self))
        except ValueError as error:
            raise ConfigError("env_id", f"env_id {self.env_id!r}: {error}") from None


# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # Doors with its fixed doors: 64 environments per agent, constant epsilon 0.1, step size 0.5.
    "doors": dict(env_id="maxatar/Doors-v0", total_steps=2_000_000, num_envs=64, lr=0.5, gamma=0.99, epsilon=0.1),
}
# fmt: on

# What `python -m maxatar_agents.sweep` searches by default (`sweep.load_space`).
SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "lr": {"low": 0.05, "high": 1.0, "log": True},
    "gamma": {"low": 0.9, "high": 0.999},
    "epsilon": {"low": 0.01, "high": 0.3, "log": True},
}


# --- the tabular view of an environment ---


def tabular_view(env: Environment, params: EnvParams) -> Tabular:
    """The tabular view of `env` (its `tabular` hook), or a ValueError for an environment without one."""
    return env.tabular(params)


class TransitionTable(NamedTuple):
    """The game's dynamics as tables indexed by state * num_game_actions + executed game action."""

    next_state: jax.Array  # int32: next index * 2 + terminal (one gather gives both)
    reward: jax.Array  # float32


def transition_table(env: Environment, params: EnvParams, view: Tabular) -> TransitionTable:
    """Run the environment's own `game_step` on every (state, game action), so the table model's dynamics
    are the environment's (a game without step draws: its step is a function of state and action alone)."""
    if env.num_step_uniforms:
        raise ValueError(f"{env.name} draws random numbers in its step: a transition table cannot hold it")
    states = jnp.arange(view.num_states, dtype=jnp.int32)
    actions = jnp.arange(env.num_game_actions, dtype=jnp.int32)

    def one(index, action):
        game, reward, terminal = env.game_step(view.game_state(index), action, (), params)
        return view.state_index(game) * 2 + terminal.astype(jnp.int32), reward

    next_state, reward = jax.jit(jax.vmap(jax.vmap(one, (None, 0)), (0, None)))(states, actions)
    return TransitionTable(next_state.reshape(-1), reward.reshape(-1))


# --- acting and learning ---


def epsilon_greedy(q: jax.Array, u: jax.Array, epsilon: float) -> jax.Array:
    """Actions from Q-values `q` (..., A) and one uniform `u` (...) each: with probability epsilon a uniform
    action (u / epsilon picks it), else a greedy one, uniform among equal maxima ((u - eps) / (1 - eps) picks
    which). One uniform per choice: each branch rescales the part of [0, 1) it owns."""
    num_actions = q.shape[-1]
    columns = [q[..., j] for j in range(num_actions)]
    best = functools.reduce(jnp.maximum, columns)
    is_max = [c == best for c in columns]
    ties = sum(m.astype(jnp.int32) for m in is_max)
    greedy_u = (u - epsilon) / max(1.0 - epsilon, 1e-30)
    rank = jnp.minimum((greedy_u * ties).astype(jnp.int32), ties - 1)  # which of the maxima, 0-based
    greedy, seen = jnp.zeros_like(ties), jnp.zeros_like(ties)
    for j in range(num_actions):  # the rank-th maximum, in action order (unrolled: A is small)
        greedy = jnp.where(is_max[j] & (seen == rank), j, greedy)
        seen = seen + is_max[j]
    if epsilon == 0:
        return greedy
    uniform_action = jnp.minimum((u * (num_actions / epsilon)).astype(jnp.int32), num_actions - 1)
    return jnp.where(u < epsilon, uniform_action, greedy)


def q_learning_target(reward, terminated, q_next, gamma: float):
    """r + gamma (1 - terminated) max_a' Q(s', a'), with `q_next` (..., A) the next state's Q-values."""
    return reward + gamma * jnp.where(terminated, 0.0, q_next.max(axis=-1))


def expected_sarsa_target(reward, terminated, q_next, gamma: float, epsilon: float):
    """r + gamma (1 - terminated) E_pi[Q(s', .)] under epsilon-greedy with random tie-breaks: the greedy share
    1 - epsilon goes to the maxima (all worth the max), epsilon is spread over every action."""
    expected = (1.0 - epsilon) * q_next.max(axis=-1) + epsilon * q_next.mean(axis=-1)
    return reward + gamma * jnp.where(terminated, 0.0, expected)


def double_q_target(reward, terminated, q_next_select, q_next_value, gamma: float):
    """r + gamma (1 - terminated) Q_value(s', argmax_a' Q_select(s', a')) (van Hasselt, 2010; the first of
    equal maxima)."""
    best = jnp.argmax(q_next_select, axis=-1)
    value = jnp.take_along_axis(q_next_value, best[..., None], axis=-1)[..., 0]
    return reward + gamma * jnp.where(terminated, 0.0, value)


class TableGame(episode.Environment):
    """The environment as its tables (`transition_table`): the game state is the state index and a game step is a
    gather, so the episode rules around it (sticky action, time limit, auto-reset) are `maxatar.episode`'s, the
    environment's own. Its reset draws the uniforms the environment's reset reads (`Tabular.reset_uniforms`)."""

    def __init__(self, env: Environment, params: EnvParams, view: Tabular, table: TransitionTable):
        super().__init__()
        self.name, self.action_set = env.name, env.action_set
        self.num_game_actions, self.num_reset_uniforms = env.num_game_actions, view.reset_uniforms
        self.fresh_index = lambda u: view.state_index(
            env.init(env.reset_draws(pad_reset(env, view, u), params), params)
        )
        self.table = table

    def _config(self) -> tuple:  # its tables are arrays: each instance is a configuration of its own
        return (type(self), id(self))

    def reset_draws(self, uniforms, params):
        return uniforms

    def init(self, draws, params):
        return self.fresh_index(draws)

    def game_step(self, index, action, draws, params):
        entry = index * self.num_game_actions + action
        packed = jnp.take(self.table.next_state, entry, mode="clip")
        return packed >> 1, jnp.take(self.table.reward, entry, mode="clip"), (packed & 1) == 1

    def game_observation(self, index):
        return index


def pad_reset(env: Environment, view: Tabular, u: jax.Array) -> jax.Array:
    """The environment's reset uniforms from the ones it reads: zeros for the rest (Doors' door keys)."""
    unread = jnp.zeros((env.num_reset_uniforms - view.reset_uniforms, *u.shape[1:]), u.dtype)
    return jnp.concatenate([u, unread])


# --- the program ---


class Lanes(NamedTuple):
    """The table model's environments: state index, last executed game action (sticky actions), steps."""

    index: jax.Array
    last_action: jax.Array
    time: jax.Array


def to_lanes(state: EnvState) -> Lanes:
    """A batch of table-model states as the lanes a run carries (and its checkpoint holds)."""
    return Lanes(state.game, state.last_action, state.time)


class TrainState(NamedTuple):
    """Everything a run carries from one step to the next (and what a checkpoint holds)."""

    params: dict[str, jax.Array]  # {"q": (S, A)}, and "q2" for double Q-learning
    envs: Any  # `Lanes` (table model) or a batch of `EnvState` (env model)
    running: jax.Array  # (num_envs,) return of each environment's current episode so far
    finished_return: jax.Array  # (num_envs,) summed returns of the episodes finished this interval
    finished: jax.Array  # (num_envs,) episodes finished this interval
    episodes: jax.Array  # () episodes finished so far
    key: jax.Array


def step_uniforms(key: jax.Array, t: jax.Array, rows: int, num_envs: int) -> jax.Array:
    """(rows, num_envs) float32 uniforms for global step `t`, from threefry hashes of counters under the key
    folded with t, both 32-bit words of each hash used (a uniform takes 23 bits, as `jax.random.uniform`)."""
    step_key = jax.random.fold_in(key, t)
    if jnp.issubdtype(step_key.dtype, jax.dtypes.prng_key):
        step_key = jax.random.key_data(step_key)
    hashes = -(-rows // 2) * num_envs
    counter = jnp.arange(hashes, dtype=jnp.uint32)
    b0, b1 = threefry2x32(step_key[0], step_key[1], jnp.zeros_like(counter), counter)
    bits = materialize(jnp.concatenate([b0, b1])[: rows * num_envs])  # computed once, whatever reads it
    mantissa = (bits >> np.uint32(9)) | np.uint32(0x3F800000)
    return (jax.lax.bitcast_convert_type(mantissa, jnp.float32) - np.float32(1.0)).reshape(rows, num_envs)


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """The pure pieces of a run (see `program.Program`). Cached so that runs of one config share compiled code."""
    return tabular_program(config, learn=True)


def tabular_program(config: Config, learn: bool) -> Program:
    """A run's program; `learn=False` acts and steps without updating the tables (the benchmark's baseline)."""
    env, env_params = env_from_config(config)
    view = tabular_view(env, env_params)
    num_states, num_actions, num_envs = view.num_states, env.num_actions, config.num_envs
    tables = ("q", "q2") if config.method == "double_q" else ("q",)
    sched = schedule(config.total_steps, config.log_points, num_envs)
    # The environments the agent steps: the table model (default) or the environment itself, both through the
    # episode rules of `maxatar.episode` (one row of uniforms per environment: the sticky draw, then the reset's).
    stepped_env = env
    if config.model == "table":
        stepped_env = TableGame(env, env_params, view, transition_table(env, env_params, view))
    autoreset_all = jax.vmap(partial(autoreset, stepped_env, SAME_STEP, final_obs=True), in_axes=(0, None, 0, 1, None))

    def fresh_envs(u: jax.Array):
        """Fresh environments from their reset's uniforms (view.reset_uniforms, num_envs)."""
        if config.model == "table":
            return to_lanes(jax.vmap(stepped_env.reset_from_uniforms, in_axes=(1, None))(u, env_params)[1])
        return jax.vmap(env.reset_from_uniforms, in_axes=(1, None))(pad_reset(env, view, u), env_params)[1]

    def current_index(envs) -> jax.Array:
        """The state index of every environment."""
        if config.model == "table":
            return envs.index
        return jax.vmap(lambda s: view.state_index(s.game))(envs)

    def env_step(envs, action, u):
        """(next index before any reset, reward, terminated, done, envs after auto-reset) from the step's
        uniforms u: [action, sticky, reset...]."""
        uniforms = u[1:ROWS] if config.model == "table" else jnp.concatenate([u[1:2], pad_reset(env, view, u[2:ROWS])])
        if config.model == "table":  # a running lane is never terminated: auto-reset replaces finished ones
            envs = EnvState(envs.index, envs.last_action, envs.time, jnp.zeros_like(envs.index, bool))
        next_envs, _, _, reward, terminated, truncated, info = autoreset_all(envs, False, action, uniforms, env_params)
        # The step's own next state (before the reset): its index, read from its observation.
        final = info["final_obs"]
        next_index = final if config.model == "table" else view.obs_index(final)
        if config.model == "table":
            next_envs = to_lanes(next_envs)
        return next_index, reward, terminated, terminated | truncated, next_envs

    def rows(table: jax.Array, index: jax.Array) -> jax.Array:
        """Q(index, .) as (num_envs, A): one 1-D gather per action (XLA's CPU gathers of rows are slower)."""
        flat = table.reshape(-1)
        return jnp.stack([jnp.take(flat, index * num_actions + j, mode="clip") for j in range(num_actions)], -1)

    def td_update(params, index, action, q_now, next_index, reward, terminated, u):
        """Every environment's TD update, computed from the same tables; where several environments update the
        same (s, a) in one step, one of them is kept (summing them would multiply the step size and diverge)."""
        q_next = [rows(params[name], next_index) for name in tables]
        chosen = jax.nn.one_hot(action, num_actions, dtype=bool)
        entry = index * num_actions + action
        if config.method == "q_learning":
            target = q_learning_target(reward, terminated, q_next[0], config.gamma)
        elif config.method == "expected_sarsa":
            target = expected_sarsa_target(reward, terminated, q_next[0], config.gamma, config.epsilon)
        else:
            first = u[ROWS] < 0.5  # the coin: which table this environment's step updates
            target = jnp.where(
                first,
                double_q_target(reward, terminated, q_next[0], q_next[1], config.gamma),
                double_q_target(reward, terminated, q_next[1], q_next[0], config.gamma),
            )
        updated = {}
        for i, name in enumerate(tables):
            q_sa = jnp.sum(jnp.where(chosen, q_now[i], 0.0), -1)
            where = entry
            if config.method == "double_q":  # the other table's environments write nothing (out of range)
                where = jnp.where(first if i == 0 else ~first, entry, num_states * num_actions)
            new_q = q_sa + config.lr * (target - q_sa)
            updated[name] = params[name].reshape(-1).at[where].set(new_q, mode="drop").reshape(num_states, -1)
        return updated

    def one_step(state: TrainState, t: jax.Array):
        """One step of every environment of the agent, with its TD update."""
        u = step_uniforms(state.key, t, ROWS + (config.method == "double_q"), num_envs)
        params = state.params
        index = current_index(state.envs)
        q_now = [rows(params[name], index) for name in tables]
        action = epsilon_greedy(sum(q_now[1:], q_now[0]), u[0], config.epsilon)
        next_index, reward, terminated, done, envs = env_step(state.envs, action, u)
        if learn:
            params = td_update(params, index, action, q_now, next_index, reward, terminated, u)
        running = state.running + reward
        state = state._replace(
            params=params,
            envs=envs,
            running=jnp.where(done, 0.0, running),
            finished_return=state.finished_return + jnp.where(done, running, 0.0),
            finished=state.finished + done,
        )
        return state, None

    def init(key: jax.Array) -> TrainState:
        """Zero tables and fresh environments, tied to the seed's key."""
        key, env_key = jax.random.split(key)
        u = jax.random.uniform(env_key, (view.reset_uniforms, num_envs))
        envs = fresh_envs(u)
        zeros = jnp.zeros(num_envs, jnp.float32)
        state = TrainState(
            params={name: jnp.zeros((num_states, num_actions), jnp.float32) for name in tables},
            envs=envs,
            running=zeros,
            finished_return=zeros,
            finished=jnp.zeros(num_envs, jnp.int32),
            episodes=jnp.int32(0),
            key=key,
        )
        return tie_to_seed(state, key)  # see program.tie_to_seed: chunked runs equal whole runs

    def interval(state: TrainState, t0: jax.Array):
        """`steps_per_interval` steps from global step t0; logs frames, episodes and their mean return."""
        steps = t0 + jnp.arange(sched.steps_per_interval, dtype=jnp.int32)
        state, _ = jax.lax.scan(one_step, state, steps)
        count = jnp.sum(state.finished)
        episodes = state.episodes + count
        metrics = {
            "frames": (t0 + sched.steps_per_interval) * num_envs,
            "episodes": episodes,
            # The episodes finished in this interval (cheaper per step than a ring of the last 100).
            "recent_return": jnp.sum(state.finished_return) / jnp.where(count > 0, count, jnp.nan),
        }
        state = state._replace(
            finished_return=jnp.zeros_like(state.finished_return),
            finished=jnp.zeros_like(state.finished),
            episodes=episodes,
        )
        return state, metrics

    def act(params: dict[str, jax.Array], obs: jax.Array) -> jax.Array:
        """The greedy action (the first of equal maxima; any leading batch axes): what evaluation plays."""
        index = view.obs_index(obs)
        q = sum(params[name][index] for name in tables)
        return jnp.argmax(q, axis=-1).astype(jnp.int32)

    return Program(
        config=config,
        init=init,
        interval=interval,
        evaluate=final_evaluation(env, env_params, act, "params", config),
        act=act,
        policy_field="params",
        schedule=sched,
    )


make_train = program.make_train_for(make_program)
