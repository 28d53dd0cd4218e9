"""The skeleton every off-policy agent here shares: act, step the environments, store the step in a replay
buffer, and every `train_every` vector steps after `learning_starts` frames, update on a uniform sample.

An algorithm describes only what is its own in a `program.Agent` (its learner, how it initialises, acts, what it
logs) whose `learn` is a `Learning` (how it updates on a sampled batch); `assemble` wraps that in the loop below
and returns the `Program` that `program.make_train` and the runner run. The step itself (one uniform block: the
acting rule's uniforms, then the environments') is `program.stepper`'s, which the on-policy skeleton shares. The
loop passes only the learner's part of the state through the `lax.cond` that decides whether to update: the
buffer is read, never returned, so the compiler need not copy it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import flashbax as fbx
import jax
import jax.numpy as jnp
import optax

from maxatar.core import Environment, EnvParams
from maxatar_agents.algorithms import continual
from maxatar_agents.algorithms.config import NetworkConfig
from maxatar_agents.algorithms.fields import ConfigError, knob
from maxatar_agents.algorithms.program import (
    Agent,
    Program,
    Schedule,
    TrainState,
    build,
    schedule,
    start,
    stepper,
)


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig(NetworkConfig):
    """The knobs of the skeleton, which every off-policy agent's `Config` inherits (and may give other
    defaults): a neural run's (`config.NetworkConfig`), whose defaults are MinAtar's DQN scale, then replay
    and the update schedule."""

    buffer_size: int = knob(100_000, "transitions kept (split evenly between the environments)")
    learning_starts: int = knob(5_000, "frames of uniformly random play before the first update")
    batch_size: int = knob(32, "transitions per update")
    train_every: int = knob(1, "vector steps between two updates")
    target_update_every: int = knob(1_000, "updates between target updates")
    tau: float = knob(1.0, "target <- tau * online + (1 - tau) * target (1: a hard copy, as MinAtar's DQN)")
    reset_buffer: bool = knob(False, "continual runs: a new task starts with an empty replay buffer")

    def __post_init__(self):
        """Also: random play long enough to fill a batch."""
        super().__post_init__()
        if self.learning_starts < self.batch_size:
            raise ValueError("learning_starts must be at least batch_size (the buffer must hold a batch)")


class Transition(NamedTuple):
    """What one environment step adds to the buffer. The buffer samples runs of consecutive steps, so the
    next observation is the `obs` of the run's next item and is stored only once.

    With auto-reset, the item after an episode's last step is the next episode's first observation. That is
    harmless after a termination (no bootstrap) but wrong after a time-limit truncation, so the agents leave
    samples cut by a truncation out of their losses rather than bootstrap from the wrong state.
    """

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array


def n_step_target(sequence: Transition, next_q: jax.Array, gamma: float) -> tuple[jax.Array, jax.Array]:
    """The n-step target r_0 + gamma r_1 + ... + gamma^(n-1) r_(n-1) + gamma^n Q(s_n) of sampled runs of n + 1
    steps (fields shaped (batch, n + 1); `next_q` is Q(s_n)), cut at the first episode end in the window,
    and whether each sample is usable.

    Windows cut by a time-limit truncation are not usable: the step after it is the next episode's first
    observation (see `off_policy.Transition`), not a state to bootstrap from.
    """
    n = sequence.reward.shape[1] - 1
    ended = sequence.terminated[:, :n] | sequence.truncated[:, :n]
    target = next_q
    for k in reversed(range(n)):  # n is small and static: unrolled
        target = sequence.reward[:, k] + gamma * jnp.where(ended[:, k], 0.0, target)
    first_end = jnp.cumsum(ended, axis=1) - ended == 0  # no episode end before step k
    cut_by_truncation = jnp.any(first_end & sequence.truncated[:, :n] & ~sequence.terminated[:, :n], axis=1)
    return target, ~cut_by_truncation


class Learning(NamedTuple):
    """The off-policy skeleton's learning hooks in an agent (`program.Agent.learn`).

    update(learner, batch, number) -> (learner, logs), one update on a sampled batch of runs of
        `sequence_length` steps (Transition fields shaped (batch, sequence_length, ...)); `number` counts
        updates so far, this one included; logs is a pytree of arrays averaged over the interval's updates.
    """

    sequence_length: int
    update: Callable
    # renew(learner) -> the learner with a fresh optimiser state, what `reset_optimizer` does at a task switch
    # (None: the agent does not support it).
    renew: Callable | None = None


def first_update_step(config: OffPolicyConfig) -> int:
    """The first vector step that may update: `learning_starts` frames, rounded up to whole vector steps."""
    return -(-config.learning_starts // config.num_envs)


def num_updates(config: OffPolicyConfig) -> int:
    """How many updates the whole run makes (at least 1), for step-size schedules."""
    sched = schedule(config.total_steps, config.log_points, config.num_envs)
    total_vector_steps = sched.num_intervals * sched.steps_per_interval
    return max(1, -(-(total_vector_steps - first_update_step(config)) // config.train_every))


def update_target(online: Any, target: Any, number: jax.Array, config: OffPolicyConfig) -> Any:
    """Every `target_update_every`-th update moves the target network towards the online one (by `tau`;
    1 is a hard copy); in between it stays fixed."""
    return jax.lax.cond(
        number % config.target_update_every == 0,
        lambda: optax.incremental_update(online, target, config.tau),
        lambda: target,
    )


def assemble(config: OffPolicyConfig, env: Environment, env_params: EnvParams, agent: Agent) -> Program:
    """The pure pieces of a run of `agent` (see `program.Program`): init, interval, evaluate. On a sequence of
    tasks (`maxatar.continual.MultiGame`) `continual.assemble` plays each task's game in its own copy of the
    interval's loop."""
    start_step = first_update_step(config)
    sequence_length = agent.learn.sequence_length
    # Runs of `sequence_length` consecutive steps of one environment (length 2: flashbax's flat buffer).
    buffer = fbx.make_trajectory_buffer(
        max_length_time_axis=config.buffer_size // config.num_envs,
        min_length_time_axis=max(config.batch_size // config.num_envs + 1, sequence_length),
        add_batch_size=config.num_envs,
        sample_batch_size=config.batch_size,
        sample_sequence_length=sequence_length,
        period=1,
    )

    def empty_buffer(obs: jax.Array):
        return buffer.init(Transition(obs[0], jnp.int32(0), jnp.float32(0), jnp.bool_(False), jnp.bool_(False)))

    def make_init(env: Environment, env_params: EnvParams) -> Callable:
        def init(key: jax.Array) -> TrainState:
            """The agent's learner, fresh environments and an empty buffer."""
            return start(agent, env, env_params, config.num_envs, key, buffer=empty_buffer)

        return init

    def learn(learner, buffer_state, t: jax.Array, key: jax.Array):
        """The agent's update on a uniform sample of the buffer."""
        batch = buffer.sample(buffer_state, key).experience
        number = (t - start_step) // config.train_every + 1  # updates so far, this one included
        return agent.learn.update(learner, batch, number)

    def skip(learner, buffer_state, t: jax.Array, key: jax.Array):
        """No update at this step: the learner unchanged and zero logs of the update's shapes."""
        logs = jax.eval_shape(learn, learner, buffer_state, t, key)[1]
        return learner, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), logs)

    def make_steps(env: Environment, env_params: EnvParams, sched: Schedule, cut_every: int | None) -> Callable:
        step = stepper(agent, env, env_params, config.num_envs, cut_every)

        def env_step(state: TrainState, t: jax.Array):
            """One vector step at global step `t` (unbatched, so `lax.cond` on it stays a branch under vmap)."""
            key, step_key, update_key = jax.random.split(state.key, 3)
            state, seen = step(state, step_key, t)
            stored = Transition(seen.obs, seen.action, seen.reward, seen.terminated, seen.truncated)
            # A time axis of 1 on what the buffer adds.
            state = state._replace(buffer=buffer.add(state.buffer, jax.tree.map(lambda x: x[:, None], stored)), key=key)
            learned = (t >= start_step) & ((t - start_step) % config.train_every == 0)
            if cut_every is not None:  # a continual run's buffer may have been emptied at the task's start
                learned = learned & buffer.can_sample(state.buffer)
            learner, logs = jax.lax.cond(learned, learn, skip, state.learner, state.buffer, t, update_key)
            return state._replace(learner=learner), (logs, learned)

        def steps(state: TrainState, t0: jax.Array):
            """`sched.steps_per_interval` vector steps starting at global step `t0`, and the agent's report."""
            numbers = t0 + jnp.arange(sched.steps_per_interval, dtype=jnp.int32)
            state, (logs, learned) = jax.lax.scan(env_step, state, numbers)
            n = jnp.maximum(learned.sum(), 1)
            mean_logs = jax.tree.map(lambda x: jnp.sum(x, axis=0) / n, logs)
            t_end = t0 + sched.steps_per_interval
            return state, agent.report(state.learner, mean_logs, t_end), t_end

        return steps

    def new_task(state: TrainState) -> TrainState:
        """What a continual run resets when a new task begins: the optimiser's state with `reset_optimizer`,
        the replay buffer with `reset_buffer`."""
        if config.reset_optimizer:
            if agent.learn.renew is None:
                raise ConfigError("reset_optimizer", "this agent has no fresh optimiser state to start a task with")
            state = state._replace(learner=agent.learn.renew(state.learner))
        if config.reset_buffer:
            state = state._replace(buffer=empty_buffer(state.obs))
        return state

    if continual.is_sequence(env):
        parts = continual.Parts(make_init, make_steps, new_task, config.num_envs)
        return continual.assemble(config, env, env_params, agent, parts)
    sched = schedule(config.total_steps, config.log_points, config.num_envs)
    steps = make_steps(env, env_params, sched, None)
    init = make_init(env, env_params)
    return build(config, env, env_params, agent.act, agent.policy_field, init, steps, sched, agent.sample)
