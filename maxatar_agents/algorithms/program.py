"""The shape of a training program, whatever the algorithm: a run is `init`, then equal logging intervals,
then an evaluation. `make_train` runs them as one pure function; the runner runs the same pieces one
interval at a time (with checkpoints between), and both end bit for bit in the same state."""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from maxatar.core import Environment, EnvParams
from maxatar.episode import AutoReset, in_groups
from maxatar.prng import uniform
from maxatar_agents.algorithms.evaluation import (
    EpisodeStats,
    episode_stats_init,
    episode_stats_update,
    final_evaluation,
    interval_metrics,
    keep_best,
    sampled_evaluation,
)


class Schedule(NamedTuple):
    """How a run is cut into logging intervals. Every interval is the same jitted computation, so running
    them one by one (with checkpoints between) gives exactly the result of one scan over all of them."""

    steps_per_interval: int  # iterations of the interval's scan: vector steps, or rollouts for on-policy agents
    num_intervals: int
    frames_per_interval: int
    total_frames: int  # total_steps rounded up to whole intervals


def schedule(total_steps: int, log_points: int, frames_per_step: int) -> Schedule:
    """At most `log_points` intervals of whole steps covering at least `total_steps` frames (fewer intervals
    when the run has fewer steps than that). A step is one vector step (`frames_per_step` = num_envs) or,
    for on-policy agents, one rollout (num_envs * num_steps)."""
    steps_needed = math.ceil(total_steps / frames_per_step)
    intervals = min(log_points, steps_needed)
    steps = math.ceil(steps_needed / intervals)
    intervals = math.ceil(steps_needed / steps)
    return Schedule(steps, intervals, steps * frames_per_step, steps * frames_per_step * intervals)


class Program(NamedTuple):
    """The pure functions an agent module builds from its config (`make_program(config)`, the one signature
    every agent has); `make_train` and the runner both use them.

    init(key) -> state; interval(state, t0) -> (state, metrics) runs one logging interval starting at global
    vector step t0 (a scalar shared by all seeds; an offline agent's takes its dataset too, interval(state, t0,
    data), see `offline.assemble`); evaluate(state) -> returns of the final policy;
    act(policy_params, obs) -> action is the policy used for evaluation and rendering, and
    `policy_field` is the path in the state of its params (`"learner.params"`, `"best_params"`; the state
    file names their leaves from it).
    """

    config: Any
    init: Callable
    interval: Callable
    evaluate: Callable
    act: Callable
    policy_field: str
    schedule: Schedule
    # For an agent whose policy is a distribution (SAC, PPO): evaluate_sampled(state) -> returns of the same
    # evaluation played by actions drawn from it, reported beside the most probable action's.
    evaluate_sampled: Callable | None = None

    def policy_params(self, state: Any) -> Any:
        """The evaluation policy's params in `state` (at `policy_field`)."""
        return operator.attrgetter(self.policy_field)(state)


class TrainState(NamedTuple):
    """Everything a neural agent's run carries from one step to the next, whatever its skeleton, and what its
    checkpoint holds leaf by leaf. The shared code owns it: an algorithm owns only its `learner`."""

    learner: Any  # the algorithm's own part, which its updates change (params, target params, optimiser states)
    buffer: Any  # the off-policy skeleton's replay buffer (flashbax); () on-policy, where there is none
    env_state: Any
    obs: jax.Array
    stats: EpisodeStats
    key: jax.Array
    best_params: Any  # with `keep_best`: the policy params of the best evaluation so far (else unused)
    best_return: jax.Array  # () mean return of that evaluation (-inf before the first)


def initial_state(learner: Any, policy_field: str, buffer: Any, env_state: Any, obs: jax.Array, key: jax.Array):
    """A run's first `TrainState`: the best params so far are the learner's first policy params, and every
    leaf is tied to the seed's key (see `tie_to_seed`: chunked runs equal whole runs)."""
    state = TrainState(
        learner=learner,
        buffer=buffer,
        env_state=env_state,
        obs=obs,
        stats=episode_stats_init(obs.shape[0]),
        key=key,
        best_params=getattr(learner, policy_field),
        best_return=jnp.float32(-jnp.inf),
    )
    return tie_to_seed(state, key)


ACT_UNIFORMS = 2  # uniforms per environment and step that an agent's acting rule may use


class Agent(NamedTuple):
    """What an algorithm adds to a skeleton (`off_policy.assemble`, `on_policy.assemble`): the same hooks, with
    the same names and arguments, whichever skeleton runs them.

    init(keys, obs) -> the learner (what the updates change), from `num_init_keys` keys and the first
        observations; on-policy, the network's params, to which the skeleton adds its optimiser's state;
    explore(learner, obs, uniforms, t) -> (actions, extras), the behaviour policy at global vector step t,
        given `ACT_UNIFORMS` uniforms per environment; extras are what the skeleton keeps of the step besides
        (on-policy, in the rollout: e.g. PPO's log-probabilities and values; off-policy, ());
    learn: the skeleton's own learning hooks (`off_policy.Learning`, `on_policy.Learning`);
    report(learner, mean_logs, t_end) -> metrics to log after an interval; t_end counts vector steps;
    act(params, obs) -> actions, the evaluation policy, whose params are the learner's `policy_field` (with
        `keep_best`, the shared code keeps the best of them in `best_params` and evaluates those);
    sample(params, obs, key) -> actions drawn from the policy, for an agent whose policy is a distribution
        (None otherwise): its evaluation is reported beside `act`'s;
    features(params, obs) -> the hidden layers' activations, each (batch, units), the last layer's last
        (`networks.hidden_activations`), for the plasticity diagnostics of continual runs (None: not logged).
    """

    init: Callable
    explore: Callable
    learn: Any
    report: Callable
    act: Callable
    policy_field: str = "params"
    num_init_keys: int = 1
    sample: Callable | None = None
    features: Callable | None = None


class Step(NamedTuple):
    """One vector step as the skeletons keep it (every field leading with the environments): what each
    environment saw and did, and the agent's `extras`."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    extras: Any


def start(
    agent: Agent,
    env: Environment,
    env_params: EnvParams,
    num_envs: int,
    key: jax.Array,
    learner: Callable = lambda made: made,
    buffer: Callable = lambda obs: (),
) -> TrainState:
    """A run's first state: the agent's `init` (made into the learner by `learner`), fresh environments and
    the skeleton's `buffer(obs)` (none on-policy)."""
    key, *init_keys, env_key = jax.random.split(key, 2 + agent.num_init_keys)
    obs, env_state = reset_envs(env, env_params, env_key, num_envs)
    made = learner(agent.init(init_keys, obs))
    return initial_state(made, agent.policy_field, buffer(obs), env_state, obs, key)


def stepper(
    agent: Agent, env: Environment, env_params: EnvParams, num_envs: int, cut_every: int | None = None
) -> Callable:
    """`step(state, key, t) -> (state, Step)`: one vector step at global vector step t with the agent's
    behaviour policy, from one uniform block drawn from `key` (the acting rule's `ACT_UNIFORMS` per environment,
    then the environments'); the state moves to the next observations and episode statistics. With
    `cut_every`, every episode is cut (truncated) after each `cut_every`-th vector step: the end of a
    continual run's stage, so that no return bootstraps across a task switch."""
    auto = AutoReset(env)
    batched_step = jax.vmap(auto.step_from_uniforms, in_axes=(0, 0, 0, None))
    groups = env.mixed_groups(num_envs, env_params)  # a multi-task batch: each game's group with its own params

    def step(state: TrainState, key: jax.Array, t: jax.Array) -> tuple[TrainState, Step]:
        uniforms = uniform(key, (num_envs, ACT_UNIFORMS + auto.num_uniforms))
        action, extras = agent.explore(state.learner, state.obs, uniforms[:, :ACT_UNIFORMS], t)
        obs, env_state, reward, terminated, truncated, _ = in_groups(
            groups,
            lambda p, u, s, a: batched_step(u, s, a, p),
            env_params,
            uniforms[:, ACT_UNIFORMS:],
            state.env_state,
            action,
        )
        if cut_every is not None:
            truncated = truncated | ((t + 1) % cut_every == 0)
        seen = Step(state.obs, action, reward, terminated, truncated, extras)
        stats = episode_stats_update(state.stats, reward, terminated | truncated)
        return state._replace(env_state=env_state, obs=obs, stats=stats), seen

    return step


def build(
    config: Any,
    env: Environment,
    env_params: EnvParams,
    act: Callable,
    policy_field: str,
    init: Callable,
    steps: Callable,
    sched: Schedule,
    sample: Callable | None = None,
) -> Program:
    """The `Program` of a neural agent's skeleton: its `init` and its `steps(state, t0) -> (state, own_metrics,
    t_end)` (one interval's steps from global step t0, the algorithm's metrics, and the interval's end in
    vector steps), to which every interval adds what all agents log (`interval_metrics`) and, with
    `keep_best`, the evaluation of the learner's `policy_field` params, kept when best so far (SB3's
    EvalCallback "best model"); those best params are then the evaluated and saved policy. `sample(params, obs,
    key) -> actions`, for a policy that is a distribution, adds the evaluation of actions drawn from it."""

    def interval(state: TrainState, t0: jax.Array):
        """One logging interval and what to log about it."""
        state, own, t_end = steps(state, t0)
        metrics = {**interval_metrics(t_end * config.num_envs, state.stats), **own}
        if config.keep_best:
            params = getattr(state.learner, policy_field)
            state, evaluated = keep_best(state, params, act, env, env_params, t_end, config)
            metrics.update(evaluated)
        return state, metrics

    path = "best_params" if config.keep_best else f"learner.{policy_field}"
    return Program(
        config=config,
        init=init,
        interval=interval,
        evaluate=final_evaluation(env, env_params, act, path, config),
        act=act,
        policy_field=path,
        schedule=sched,
        evaluate_sampled=None if sample is None else sampled_evaluation(env, env_params, sample, path, config),
    )


class TrainResult(NamedTuple):
    """What `train(key)` returns: the final state, the logged metrics and the final evaluation."""

    state: Any
    metrics: dict[str, jax.Array]  # one entry per logged point
    eval_returns: jax.Array  # (eval_episodes,) returns of the final evaluation policy
    sampled_eval_returns: jax.Array | None = None  # the same with actions drawn from the policy (SAC, PPO)


def make_train(program: Program) -> Callable[..., TrainResult]:
    """`train(key) -> TrainResult`: the whole run as one pure function (`init`, every logging interval under
    `lax.scan`, the evaluation), so `jax.jit(jax.vmap(train))(keys)` trains many seeds in one program. A program
    whose interval takes inputs after `t0` (an offline agent's dataset, `offline.assemble`) gives
    `train(key, *inputs)`, which hands them to every interval."""

    def train(key: jax.Array, *inputs: Any) -> TrainResult:
        """The whole run of one seed."""

        def one_interval(state, i):
            return program.interval(state, i * program.schedule.steps_per_interval, *inputs)

        intervals = jnp.arange(program.schedule.num_intervals, dtype=jnp.int32)
        state, metrics = jax.lax.scan(one_interval, program.init(key), intervals)
        sampled = None if program.evaluate_sampled is None else program.evaluate_sampled(state)
        return TrainResult(state, metrics, program.evaluate(state), sampled)

    return train


def make_train_for(make_program: Callable[[Any], Program]) -> Callable[[Any], Callable[[jax.Array], TrainResult]]:
    """An agent module's `make_train(config) -> train(key)`: the whole run of `make_program(config)`, pure;
    `jax.jit(jax.vmap(train))(keys)` trains many seeds (with `keep_best`, the final evaluation plays the
    params that evaluated best after an interval)."""

    def agent_make_train(config: Any) -> Callable[[jax.Array], TrainResult]:
        """`train(key) -> TrainResult`: the whole run, pure. `jax.jit(jax.vmap(train))(keys)` trains many seeds."""
        return make_train(make_program(config))

    agent_make_train.__name__ = agent_make_train.__qualname__ = "make_train"
    agent_make_train.__module__ = make_program.__module__
    return agent_make_train


def reset_envs(env: Environment, env_params: EnvParams, key: jax.Array, num_envs: int):
    """`num_envs` fresh episodes, one key each: (obs, env_state), batched on a leading axis (a multi-task batch:
    each game's group with its own params)."""
    groups = env.mixed_groups(num_envs, env_params)
    reset = jax.vmap(env.reset, in_axes=(0, None))
    return in_groups(groups, lambda p, keys: reset(keys, p), env_params, jax.random.split(key, num_envs))


def tie_to_seed(tree: Any, key: jax.Array) -> Any:
    """Return `tree` unchanged, but with every leaf formally depending on `key`.

    Under `vmap` over seeds, JAX keeps a value that does not depend on the seed (a zero-filled buffer, an
    optimiser's step count) unbatched. Then `vmap(train)` and the command line, which vmaps one chunk at a
    time over states that all carry the seed axis, would compile different arithmetic and could differ in
    the last bit. Tying every leaf of the initial state to the key makes both batch alike, so a chunked,
    checkpointed run equals the one-program run bit for bit.
    """
    same = key.ravel()[0] == key.ravel()[0]
    return jax.tree.map(lambda x: jnp.where(same, x, x), tree)


def clip_then(max_grad_norm: Any, optimizer: optax.GradientTransformation) -> optax.GradientTransformation:
    """`optimizer` after clipping the gradients' global norm to `max_grad_norm` (0: no clipping). A traced
    norm (a swept value, see `grid`) always clips, at an infinite norm where the value is 0, so every value
    of a sweep has the same optimiser state and 0 passes the gradients through unchanged."""
    if isinstance(max_grad_norm, jax.Array):
        limit = jnp.where(max_grad_norm > 0, max_grad_norm, jnp.inf)
        return optax.chain(optax.clip_by_global_norm(limit), optimizer)
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optimizer) if max_grad_norm > 0 else optimizer


def bind_config(fn: Callable, config: Any, *fields: str, **kwargs: Any) -> Callable:
    """`fn` with the config's `fields` bound as its keywords of the same names, and `kwargs` (the networks):
    a loss with its hyperparameters."""
    return functools.partial(fn, **kwargs, **{name: getattr(config, name) for name in fields})


def gradient_update(
    loss_fn: Callable, optimizer: optax.GradientTransformation, params: Any, opt_state: Any, *args: Any, has_aux=True
) -> tuple[Any, Any, Any]:
    """One optimiser step on `loss_fn(params, *args)`, the gradient step every agent takes (Brax's
    `gradient_update_fn`): returns the loss (`(loss, aux)` with `has_aux`), the new params and optimiser state."""
    value, grads = jax.value_and_grad(loss_fn, has_aux=has_aux)(params, *args)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return value, optax.apply_updates(params, updates), opt_state
