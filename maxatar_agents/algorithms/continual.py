"""Training across a sequence of tasks (`maxatar.continual.MultiGame`, id `maxatar/MinAtar-Continual-v0`): the
pieces a skeleton hands over (`Parts`) become a `Program` whose logging intervals each play one task.

* The run's frames are split evenly over the protocol's stages, each a whole number of logging intervals
  (`plan`), so a task changes only between intervals.
* Each task's game is stepped by its own copy of the skeleton's interval loop (`TaskGame`: the game with the
  union's observation), and one `lax.switch` on the stage's task, outside the loop, picks the copy: a step runs
  one game's code and no conditional, and the whole run is still one compiled program.
* The environments of every task are kept (`TrainState.env_state` is a tuple, one batch per task); a stage starts
  the new task's episodes afresh, and the last step of a stage cuts every episode (truncation), so no return
  bootstraps across a switch. What else a new task resets is configuration (`reset_optimizer`, the skeleton's
  `new_task`).
* After the last interval of each stage the policy is evaluated on every task (`return_<game>`, NaN after
  other intervals): the rows of the matrix R[i, j] that `lab.continual` reads. Every interval logs the
  plasticity diagnostics of the agent's network (`plasticity`) on the current observations.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from maxatar.continual import MultiGame, MultiTask
from maxatar.core import Environment, EnvParams
from maxatar_agents.algorithms.evaluation import episode_stats_init, evaluate
from maxatar_agents.algorithms.fields import ConfigError
from maxatar_agents.algorithms.program import Agent, Program, Schedule, TrainState, build, reset_envs, schedule

DORMANT_TAU = 0.025  # Sokar et al. (2023)'s threshold for ReLU networks
RANK_DELTA = 0.01  # Kumar et al. (2021)'s


def is_sequence(env: Environment) -> bool:
    """Whether `env` plays a sequence of tasks (a `MultiGame` that is no mixed batch)."""
    return isinstance(env, MultiGame) and not isinstance(env, MultiTask)


class Stages(NamedTuple):
    """A continual run's stages: the task each plays, the games' names, and each stage's length in the skeleton's
    steps (vector steps, or rollouts on-policy) and in frames."""

    tasks: tuple[int, ...]
    names: tuple[str, ...]
    steps: int
    frames: int


def plan(config: Any, env: MultiGame, frames_per_step: int) -> tuple[Schedule, Stages]:
    """The run's schedule: `config.total_steps` split evenly over the protocol's stages, each rounded up to whole
    logging intervals (`config.log_points` shared among them, at least one each)."""
    tasks = env.schedule.stages
    n = len(tasks)
    stage = schedule(math.ceil(config.total_steps / n), max(1, math.ceil(config.log_points / n)), frames_per_step)
    sched = Schedule(
        stage.steps_per_interval, stage.num_intervals * n, stage.frames_per_interval, stage.total_frames * n
    )
    steps = stage.steps_per_interval * stage.num_intervals
    return sched, Stages(tasks, env.games, steps, stage.total_frames)


class Parts(NamedTuple):
    """What a skeleton hands `assemble`: `make_init(env, params) -> init(key)`, `make_steps(env, params, sched,
    cut_every) -> steps(state, t0)` (its interval loop on one game, episodes cut every `cut_every` vector
    steps), `new_task(state) -> state` (what it resets at a task switch) and the frames of one of its steps."""

    make_init: Callable
    make_steps: Callable
    new_task: Callable
    frames_per_step: int


def assemble(config: Any, env: MultiGame, env_params: EnvParams, agent: Agent, parts: Parts) -> Program:
    """The `Program` of `agent` on the sequence of tasks of `env` (module docstring)."""
    if getattr(config, "keep_best", False):
        raise ConfigError("keep_best", "keep_best does not apply to a continual run (each stage plays another game)")
    sched, stages = plan(config, env, parts.frames_per_step)
    games = [env.task_game(k) for k in range(len(env.games))]
    params = [game.game_params(env_params) for game in games]
    vector_steps = stages.frames // config.num_envs  # a stage's vector steps
    first, last = stages.tasks[0], stages.tasks[-1]
    task_of_stage = jnp.asarray(stages.tasks, jnp.int32)

    def init(key: jax.Array) -> TrainState:
        """The skeleton's first state on the first stage's game, and fresh environments of every other task."""
        state = parts.make_init(games[first], params[first])(key)
        env_states = tuple(
            state.env_state if k == first else reset_envs(g, p, jax.random.fold_in(key, 1 + k), config.num_envs)[1]
            for k, (g, p) in enumerate(zip(games, params, strict=True))
        )
        return state._replace(env_state=env_states)

    def on_task(k: int, fn: Callable) -> Callable:
        """`fn(state, ...)` on task k's environments alone: the others pass through."""

        def run(state: TrainState, *args):
            inner, *rest = fn(state._replace(env_state=state.env_state[k]), *args)
            env_state = tuple(inner.env_state if i == k else s for i, s in enumerate(state.env_state))
            return (inner._replace(env_state=env_state), *rest)

        return run

    game_steps = [
        on_task(k, parts.make_steps(g, p, sched, vector_steps))
        for k, (g, p) in enumerate(zip(games, params, strict=True))
    ]

    def steps(state: TrainState, t0: jax.Array):
        return jax.lax.switch(task_of_stage[t0 // stages.steps], game_steps, state, t0)

    def begin(k: int) -> Callable:
        def run(state: TrainState, key: jax.Array):
            obs, env_state = reset_envs(games[k], params[k], key, config.num_envs)
            return (state._replace(env_state=env_state, obs=obs, stats=episode_stats_init(config.num_envs)),)

        return on_task(k, run)

    begins = [begin(k) for k in range(len(games))]

    def new_stage(state: TrainState, t0: jax.Array) -> TrainState:
        """The new task's episodes afresh (the training returns logged from then on are its own), and the
        skeleton's own resets."""
        (state,) = jax.lax.switch(task_of_stage[t0 // stages.steps], begins, state, jax.random.fold_in(state.key, t0))
        return parts.new_task(state)

    program = build(config, games[last], params[last], agent.act, agent.policy_field, init, steps, sched, agent.sample)
    policy_params = program.policy_params

    def evaluate_tasks(state: TrainState, t_end: jax.Array) -> jax.Array:
        """Mean return of `config.eval_episodes` episodes of the evaluation policy on every task."""
        policy = functools.partial(agent.act, policy_params(state))
        key = jax.random.fold_in(jax.random.fold_in(state.key, 2), t_end)
        return jnp.stack(
            [
                evaluate(g, p, policy, jax.random.fold_in(key, k), config.eval_episodes, config.eval_max_steps).mean()
                for k, (g, p) in enumerate(zip(games, params, strict=True))
            ]
        )

    def interval(state: TrainState, t0: jax.Array):
        starts = (t0 % stages.steps == 0) & (t0 > 0)
        state = jax.lax.cond(starts, new_stage, lambda s, _: s, state, t0)
        state, metrics = program.interval(state, t0)
        t1 = t0 + sched.steps_per_interval
        ends = t1 % stages.steps == 0
        nan = jnp.full(len(games), jnp.nan, jnp.float32)
        row = jax.lax.cond(ends, evaluate_tasks, lambda *_: nan, state, t1)
        metrics = {**metrics, "stage": t0 // stages.steps, "task": task_of_stage[t0 // stages.steps]}
        metrics.update({f"return_{name}": row[k] for k, name in enumerate(stages.names)})
        if agent.features is not None:
            metrics.update(plasticity(agent.features, policy_params(state), state.obs))
        return state, metrics

    return program._replace(interval=interval)


def plasticity(features: Callable, params: Any, obs: jax.Array) -> dict[str, jax.Array]:
    """The plasticity diagnostics of a network on a batch of observations:

    * `dormant`: the fraction of hidden units that are tau-dormant (Sokar et al., 2023, "The dormant neuron
      phenomenon in deep reinforcement learning": a unit's mean absolute activation over the batch, divided by
      its layer's mean, at most `DORMANT_TAU`), over every hidden layer;
    * `feature_rank`: the effective rank srank_delta of the last hidden layer's features (Kumar et al., 2021,
      "Implicit under-parameterization": the fewest singular values reaching 1 - `RANK_DELTA` of their sum);
    * `param_norm`: the L2 norm of all parameters (Lyle et al., 2024, "Disentangling the causes of plasticity
      loss").
    """
    layers = [x.reshape(x.shape[0], -1) for x in features(params, obs)]
    dormant, units = 0, 0
    for x in layers:
        activity = jnp.abs(x).mean(axis=0)
        dormant += jnp.sum(activity / jnp.maximum(activity.mean(), 1e-12) <= DORMANT_TAU)
        units += x.shape[1]
    singular = jnp.linalg.svd(layers[-1], compute_uv=False)
    share = jnp.cumsum(singular) / jnp.maximum(singular.sum(), 1e-12)
    norm = jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(params)))
    return {
        "dormant": dormant / units,
        "feature_rank": jnp.sum(share < 1.0 - RANK_DELTA) + 1,
        "param_norm": norm,
    }
