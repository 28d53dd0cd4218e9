"""The skeleton every on-policy agent here shares: all environments play `num_steps` steps with the current
policy (a rollout), the agent turns the rollout into per-sample training targets, then takes `num_epochs`
passes over them in `num_minibatches` shuffled minibatches, and the rollout is thrown away. There is no
replay buffer, so memory does not grow with the run and many environments are cheap.

An algorithm describes only what is its own in a `program.Agent` (its network's initial params, how it acts, what
it logs) whose `learn` is a `Learning` (how a rollout becomes targets, its loss); the learner (params and Adam's
state) and the gradient step are the skeleton's, the step (`program.stepper`) and the training state
(`program.TrainState`) those of every neural agent; `assemble` wraps that in the loop below and returns the
`Program` that `program.make_train` and the runner run. A logging interval is a whole number of
rollout-and-update iterations, so the interval's start `t0` counts iterations.

Episodes that end by a time limit are treated as ended, without bootstrapping from the state the limit cut
(as CleanRL's and PureJaxRL's PPO do): with auto-reset, the rollout's next observation is already the next
episode's first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from maxatar.core import Environment, EnvParams
from maxatar_agents.algorithms import continual
from maxatar_agents.algorithms.config import NetworkConfig
from maxatar_agents.algorithms.fields import knob
from maxatar_agents.algorithms.program import (
    Agent,
    Program,
    Schedule,
    Step,
    TrainState,
    build,
    clip_then,
    gradient_update,
    schedule,
    start,
    stepper,
)


@dataclasses.dataclass(frozen=True)
class OnPolicyConfig(NetworkConfig):
    """The knobs of the skeleton, which every on-policy agent's `Config` inherits (and may give other
    defaults): a neural run's (`config.NetworkConfig`), with many environments and a smaller network by
    default, then the rollout, its epochs and minibatches, and Adam. A logging interval is a whole number of
    rollouts."""

    num_envs: int = knob(64, "environments stepped together (vmap) per seed")
    hidden: tuple[int, ...] = knob((64,), "dense layers after the observation encoder")
    num_steps: int = knob(32, "steps of every environment per rollout (one rollout feeds one update)")
    num_epochs: int = knob(2, "passes over each rollout")
    num_minibatches: int = knob(4, "minibatches per pass (num_envs * num_steps must be a multiple)")
    lr: float = knob(3e-4, "Adam step size")
    lr_decay: bool = knob(True, "decay the step size linearly to 0 over the run")
    adam_eps: float = knob(1e-5, "Adam's epsilon")
    max_grad_norm: float = knob(0.5, "gradient clipping by global norm (0: none)")

    def __post_init__(self):
        """Also: minibatches that split a rollout evenly."""
        super().__post_init__()
        if (self.num_envs * self.num_steps) % self.num_minibatches:
            raise ValueError(
                f"num_envs * num_steps ({self.num_envs * self.num_steps}) must be a multiple of num_minibatches "
                f"({self.num_minibatches})"
            )


Rollout = Step  # a rollout: `program.Step`s stacked, every field shaped (num_steps, num_envs, ...)


class Learner(NamedTuple):
    """The part of the state a gradient step changes (`program.TrainState.learner`)."""

    params: Any
    opt_state: Any


class Learning(NamedTuple):
    """The on-policy skeleton's learning hooks in an agent (`program.Agent.learn`).

    targets(params, rollout, last_obs) -> samples, a pytree whose leaves lead with (num_steps, num_envs):
        what the minibatch steps train on (e.g. advantages and returns);
    loss(params, samples) -> (loss, aux), the loss of a minibatch of samples (leaves lead with the
        minibatch axis) and what to log about it; the agent's `report` gets the (loss, aux) averaged over the
        interval's gradient steps.
    """

    targets: Callable
    loss: Callable


def network_init(network: Any) -> Callable:
    """An on-policy agent's `init(keys, obs)`: its one network's params, from the first key."""
    return lambda keys, obs: network.init(keys[0], obs)


def num_gradient_steps(config: OnPolicyConfig) -> int:
    """How many minibatch steps the whole run takes, for step-size schedules."""
    sched = schedule(config.total_steps, config.log_points, config.num_envs * config.num_steps)
    return sched.num_intervals * sched.steps_per_interval * config.num_epochs * config.num_minibatches


def make_optimizer(config: OnPolicyConfig) -> optax.GradientTransformation:
    """Adam (linearly decayed to 0 over the run with `lr_decay`), after global-norm clipping."""
    lr = optax.linear_schedule(config.lr, 0.0, num_gradient_steps(config)) if config.lr_decay else config.lr
    return clip_then(config.max_grad_norm, optax.adam(lr, eps=config.adam_eps))


def sample_categorical(logits: jax.Array, u: jax.Array) -> jax.Array:
    """An action drawn from softmax(logits) by inverting the CDF at the uniform `u` (one uniform per draw,
    so the draw comes from the same uniform tape as the environments' randomness)."""
    cdf = jnp.cumsum(jax.nn.softmax(logits, axis=-1), axis=-1)
    return jnp.minimum(jnp.sum(cdf < u[..., None], axis=-1), logits.shape[-1] - 1).astype(jnp.int32)


def assemble(config: OnPolicyConfig, env: Environment, env_params: EnvParams, agent: Agent) -> Program:
    """The pure pieces of a run of `agent` (see `program.Program`): init, interval, evaluate. On a sequence of
    tasks (`maxatar.continual.MultiGame`) `continual.assemble` plays each task's game in its own copy of the
    interval's loop."""
    optimizer = make_optimizer(config)
    batch = config.num_envs * config.num_steps

    def make_init(env: Environment, env_params: EnvParams) -> Callable:
        def init(key: jax.Array) -> TrainState:
            """The network and Adam's state, and fresh environments (no buffer)."""
            learner = lambda p: Learner(p, optimizer.init(p))
            return start(agent, env, env_params, config.num_envs, key, learner=learner)

        return init

    def gradient_step(learner: Learner, samples):
        """One Adam step on the loss of a minibatch; logs the loss and the agent's aux."""
        logs, params, opt_state = gradient_update(
            agent.learn.loss, optimizer, learner.params, learner.opt_state, samples
        )
        return Learner(params, opt_state), logs

    def epoch(carry, _):
        """One pass over the samples in a fresh random order, `num_minibatches` gradient steps."""
        learner, samples, key = carry
        key, order_key = jax.random.split(key)
        order = jax.random.permutation(order_key, batch)
        shuffled = jax.tree.map(lambda x: x[order].reshape(config.num_minibatches, -1, *x.shape[1:]), samples)
        learner, logs = jax.lax.scan(gradient_step, learner, shuffled)
        return (learner, samples, key), logs

    def make_steps(env: Environment, env_params: EnvParams, sched: Schedule, cut_every: int | None) -> Callable:
        step = stepper(agent, env, env_params, config.num_envs, cut_every)

        def env_step(state: TrainState, t: jax.Array):
            """One vector step at global vector step `t` with the behaviour policy."""
            key, step_key = jax.random.split(state.key)
            state, seen = step(state, step_key, t)
            return state._replace(key=key), seen

        def iteration(state: TrainState, i: jax.Array):
            """Rollout number `i`: play it, compute its targets, train on them."""
            numbers = i * config.num_steps + jnp.arange(config.num_steps, dtype=jnp.int32)
            state, rollout = jax.lax.scan(env_step, state, numbers)
            samples = agent.learn.targets(state.learner.params, rollout, state.obs)
            flat = jax.tree.map(lambda x: x.reshape(batch, *x.shape[2:]), samples)
            key, epochs_key = jax.random.split(state.key)
            carry = (state.learner, flat, epochs_key)
            (learner, _, _), logs = jax.lax.scan(epoch, carry, None, length=config.num_epochs)
            return state._replace(key=key, learner=learner), logs

        def steps(state: TrainState, t0: jax.Array):
            """`sched.steps_per_interval` rollouts and updates from rollout number `t0`, and the agent's report."""
            numbers = t0 + jnp.arange(sched.steps_per_interval, dtype=jnp.int32)
            state, logs = jax.lax.scan(iteration, state, numbers)
            t_end = (t0 + sched.steps_per_interval) * config.num_steps
            return state, agent.report(state.learner, jax.tree.map(jnp.mean, logs), t_end), t_end

        return steps

    def new_task(state: TrainState) -> TrainState:
        """What a continual run resets when a new task begins: Adam's state with `reset_optimizer`."""
        if not config.reset_optimizer:
            return state
        return state._replace(learner=Learner(state.learner.params, optimizer.init(state.learner.params)))

    if continual.is_sequence(env):
        parts = continual.Parts(make_init, make_steps, new_task, batch)
        return continual.assemble(config, env, env_params, agent, parts)
    sched = schedule(config.total_steps, config.log_points, batch)
    steps = make_steps(env, env_params, sched, None)
    return build(config, env, env_params, agent.act, "params", make_init(env, env_params), steps, sched, agent.sample)
