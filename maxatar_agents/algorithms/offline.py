"""The skeleton every offline agent here shares (behaviour cloning, discrete CQL): gradient steps on uniform
minibatches of a fixed dataset, with the policy evaluated online, in the environment, after every logging
interval. Nothing is played to learn, so the run's steps are gradient updates (`total_steps` counts them; the
`frames` of `metrics.csv` are the updates made) and its `recent_return` is that interval's evaluation.

The dataset is an input of the program, not a constant compiled into it: `interval(state, t0, data)` and
`make_train(config) -> train(key, data)` take its `Transitions` (`maxatar_agents.datasets.load` makes them
from a Minari dataset), so one compiled program trains on any dataset of the same shapes and vmaps over seeds
with the data shared (`jax.vmap(train, in_axes=(0, None))`). The training state holds no data: a checkpoint is
the learner's, and a trained policy loads without the dataset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from maxatar.core import Environment, EnvParams
from maxatar_agents.algorithms.config import NetworkConfig
from maxatar_agents.algorithms.evaluation import final_evaluation, keep_best
from maxatar_agents.algorithms.fields import knob
from maxatar_agents.algorithms.program import Program, schedule, tie_to_seed


class Transitions(NamedTuple):
    """Every step of a dataset, episodes one after another in the dataset's order (row t is one step).

    An episode ends on a row where `terminated` (the game ended: no bootstrapping) or `truncated` (a time
    limit: bootstrap from `next_observation`) is true; the next row starts the next episode."""

    observation: jax.Array  # (T, *observation_shape), the environment's dtype (bool for the MinAtar games)
    action: jax.Array  # (T,) int32
    reward: jax.Array  # (T,) float32
    next_observation: jax.Array  # (T, *observation_shape)
    terminated: jax.Array  # (T,) bool
    truncated: jax.Array  # (T,) bool

    @property
    def num_steps(self) -> int:
        return self.action.shape[0]


@dataclasses.dataclass(frozen=True)
class OfflineConfig(NetworkConfig):
    """The knobs of the skeleton, which every offline agent's `Config` inherits: a neural run's
    (`config.NetworkConfig`; `env_id` is the environment the policy is evaluated in, and the dataset's spaces
    must be its), then the dataset and the minibatches. `num_envs` plays no part: nothing is played to learn."""

    dataset: str = knob(
        "maxatar/Breakout/expert-v0", "the Minari dataset learnt from (`maxatar/<game>/<tier>-v0`), made for --env"
    )
    total_steps: int = knob(100_000, "gradient updates per seed (rounded up to whole logging intervals)")
    batch_size: int = knob(256, "dataset steps per update, drawn uniformly with replacement")
    lr: float = knob(3e-4, "Adam's step size")
    max_grad_norm: float = knob(0.0, "clip the gradients' global norm to this (0: no clipping)")
    keep_best_episodes: int = knob(
        10, "episodes of the evaluation after every logging interval (all in parallel): its mean is recent_return"
    )


class State(NamedTuple):
    """An offline run's training state: the algorithm's `learner`, the key, and with `keep_best` the best
    evaluated policy params (`program.TrainState`'s fields of the same names)."""

    learner: Any
    key: jax.Array
    best_params: Any
    best_return: jax.Array


class Agent(NamedTuple):
    """What an offline algorithm gives `assemble`.

    init(key, obs) -> the learner, from one key and a batch of observations (their shapes);
    update(learner, batch, number) -> (learner, logs): one gradient step on a `Transitions` minibatch, the
        `number`-th (from 1); logs is a pytree of scalars averaged over the interval;
    report(mean_logs) -> metrics to log after an interval;
    act(params, obs) -> actions, the evaluation policy, whose params are the learner's `policy_field`.
    """

    init: Callable
    update: Callable
    report: Callable
    act: Callable
    policy_field: str = "params"


def sample(data: Transitions, key: jax.Array, batch_size: int) -> Transitions:
    """`batch_size` rows of `data` drawn uniformly with replacement (the rows of an episode's end keep their
    `terminated`/`truncated` flags and true next observation, so a row stands alone)."""
    rows = jax.random.randint(key, (batch_size,), 0, data.num_steps)
    return jax.tree.map(lambda column: column[rows], data)


def assemble(config: OfflineConfig, env: Environment, env_params: EnvParams, agent: Agent) -> Program:
    """The pure pieces of an offline run (`program.Program`), with the dataset as the interval's last argument:
    init(key), interval(state, t0, data), evaluate(state)."""
    sched = schedule(config.total_steps, config.log_points, 1)

    def init(key: jax.Array) -> State:
        """The agent's learner, its first params as the best so far."""
        key, init_key = jax.random.split(key)
        obs = jnp.zeros((1, *env.obs_shape), env.obs_dtype)
        learner = agent.init(init_key, obs)
        best = getattr(learner, agent.policy_field)
        return tie_to_seed(State(learner, key, best, jnp.float32(-jnp.inf)), key)

    def interval(state: State, t0: jax.Array, data: Transitions):
        """`steps_per_interval` updates from global update `t0`, then the policy's evaluation: its mean return
        is the interval's `recent_return` (and with `keep_best` the best params so far are kept)."""

        def update(carry: tuple[Any, jax.Array], number: jax.Array):
            """The `number`-th update, on a fresh minibatch."""
            learner, key = carry
            key, batch_key = jax.random.split(key)
            learner, logs = agent.update(learner, sample(data, batch_key, config.batch_size), number)
            return (learner, key), logs

        numbers = t0 + 1 + jnp.arange(sched.steps_per_interval, dtype=jnp.int32)
        (learner, key), logs = jax.lax.scan(update, (state.learner, state.key), numbers)
        state = state._replace(learner=learner, key=key)
        t_end = t0 + sched.steps_per_interval
        params = getattr(learner, agent.policy_field)
        kept, evaluated = keep_best(state, params, agent.act, env, env_params, t_end, config)
        if config.keep_best:
            state = kept
        metrics = {
            "frames": t_end,
            "episodes": (t0 // sched.steps_per_interval + 1) * config.keep_best_episodes,
            "recent_return": evaluated["eval_return"],
            **agent.report(jax.tree.map(lambda x: x.mean(axis=0), logs)),
        }
        if config.keep_best:
            metrics["best_eval_return"] = evaluated["best_eval_return"]
        return state, metrics

    path = "best_params" if config.keep_best else f"learner.{agent.policy_field}"
    return Program(
        config=config,
        init=init,
        interval=interval,
        evaluate=final_evaluation(env, env_params, agent.act, path, config),
        act=agent.act,
        policy_field=path,
        schedule=sched,
    )
