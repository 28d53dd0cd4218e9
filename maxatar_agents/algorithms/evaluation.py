"""Measuring returns inside JAX: the training episodes' recent returns, and evaluation of a fixed policy.

Both are pure functions of arrays, so they run inside the agents' jitted, vmapped training programs.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from maxatar.core import Environment, EnvParams
from maxatar.prng import uniform

RECENT = 100  # "recent return" = mean undiscounted return of the last 100 finished training episodes


class EpisodeStats(NamedTuple):
    """Running returns of the training environments and a ring of the returns of finished episodes.

    The ring holds at least `RECENT` entries and at least one per environment, so the episodes that finish
    in one step never collide; each entry remembers its episode number so the mean covers exactly the last
    `RECENT` episodes.
    """

    running: jax.Array  # (num_envs,) return of each environment's current episode so far
    returns: jax.Array  # (ring,) returns of finished episodes
    numbers: jax.Array  # (ring,) episode number of each entry, -1 when empty
    finished: jax.Array  # () episodes finished so far


def episode_stats_init(num_envs: int) -> EpisodeStats:
    """No episode finished yet: empty ring, zero running returns."""
    ring = max(RECENT, num_envs)
    return EpisodeStats(
        running=jnp.zeros(num_envs, jnp.float32),
        returns=jnp.zeros(ring, jnp.float32),
        numbers=jnp.full(ring, -1, jnp.int32),
        finished=jnp.int32(0),
    )


def episode_stats_update(stats: EpisodeStats, reward: jax.Array, done: jax.Array) -> EpisodeStats:
    """Add one vector step's rewards; environments with `done` close their episode into the ring."""
    running = stats.running + reward
    number = stats.finished + jnp.cumsum(done) - 1  # episode number of each finishing environment
    ring = stats.returns.shape[0]
    slot = jnp.where(done, number % ring, ring)  # out of range = dropped
    return EpisodeStats(
        running=jnp.where(done, 0.0, running),
        returns=stats.returns.at[slot].set(running, mode="drop"),
        numbers=stats.numbers.at[slot].set(number, mode="drop"),
        finished=stats.finished + jnp.sum(done, dtype=jnp.int32),
    )


def recent_return(stats: EpisodeStats) -> jax.Array:
    """Mean return of the last `RECENT` finished episodes (NaN before the first one finishes)."""
    recent = (stats.numbers >= 0) & (stats.numbers >= stats.finished - RECENT)
    return jnp.sum(jnp.where(recent, stats.returns, 0.0)) / jnp.where(jnp.any(recent), jnp.sum(recent), jnp.nan)


def evaluate(
    env: Environment,
    env_params: EnvParams,
    act: Callable[[jax.Array], jax.Array],
    key: jax.Array,
    num_episodes: int,
    max_steps: int,
) -> jax.Array:
    """Undiscounted returns of `num_episodes` episodes played in parallel by `act(obs) -> actions`
    (batched over episodes; evaluation policies here are deterministic): `play_episodes`' returns."""
    return play_episodes(env, env_params, act, key, num_episodes, max_steps)[0]


def play_episodes(
    env: Environment,
    env_params: EnvParams,
    act: Callable,
    key: jax.Array,
    num_episodes: int,
    max_steps: int,
    act_needs_key: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """Undiscounted returns and lengths of `num_episodes` episodes played in parallel by `act(obs) -> actions`,
    or with `act_needs_key` by `act(obs, key) -> actions` with a fresh key every step (a random or sampled
    policy).

    Each environment plays exactly one episode (no auto-reset). The loop stops when every episode has
    terminated or truncated, or after `max_steps` steps: an episode still running then counts with the
    return it has so far (a safety net for policies that never finish; MinAtar games have no time limit).
    A multi-task environment's episodes are spread over its games (`mixed_groups`), each game's played by a
    loop of its own, the results concatenated in the games' order.
    """
    groups = env.mixed_groups(num_episodes, env_params)
    if groups is None:
        return _play(env, env_params, act, key, num_episodes, max_steps, act_needs_key)
    parts = [
        _play(env, p, act, jax.random.fold_in(key, i), b - a, max_steps, act_needs_key)
        for i, (p, a, b) in enumerate(groups)
    ]
    return tuple(jnp.concatenate(x) for x in zip(*parts, strict=True))


def _play(env, env_params, act, key, num_episodes, max_steps, act_needs_key):
    reset_key, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_episodes), env_params)
    step = jax.vmap(env.transition, in_axes=(0, 0, 0, None))
    draws = jax.vmap(env.draws_from_uniforms, in_axes=(0, 0, None))

    def running(carry):
        t, *_, done, _ = carry
        return (t < max_steps) & ~jnp.all(done)

    def one_step(carry):
        t, obs, state, returns, lengths, done, key = carry
        if act_needs_key:
            key, action_key, env_key = jax.random.split(key, 3)
            action = act(obs, action_key)
        else:
            key, env_key = jax.random.split(key)
            action = act(obs)
        uniforms = uniform(env_key, (num_episodes, env.num_draws))
        obs, state, reward, terminated, truncated, _ = step(
            state, action, draws(uniforms, state, env_params), env_params
        )
        returns = returns + jnp.where(done, 0.0, reward)
        lengths = lengths + jnp.where(done, 0, 1)
        return t + 1, obs, state, returns, lengths, done | terminated | truncated, key

    zeros = jnp.zeros(num_episodes)
    init = (jnp.int32(0), obs, state, zeros, zeros.astype(jnp.int32), zeros.astype(bool), key)
    return jax.lax.while_loop(running, one_step, init)[3:5]


def keep_best(
    state,
    params: Any,
    act: Callable,
    env: Environment,
    env_params: EnvParams,
    t_end: jax.Array,
    config,
):
    """SB3's EvalCallback "best model" inside JAX: evaluate `act(params, obs)` for `config.keep_best_episodes`
    episodes and keep `params` in `state.best_params` if their mean return is at least `state.best_return`
    (ties go to the later, longer-trained params). The key derives from the interval's end `t_end`, not from
    the training stream, so keeping the best changes nothing about the training itself. Returns the state
    and the metrics to log (`eval_return`, `best_eval_return`)."""
    key = jax.random.fold_in(state.key, t_end)
    policy = functools.partial(act, params)
    score = evaluate(env, env_params, policy, key, config.keep_best_episodes, config.eval_max_steps).mean()
    better = score >= state.best_return
    state = state._replace(
        best_params=jax.tree.map(lambda new, old: jnp.where(better, new, old), params, state.best_params),
        best_return=jnp.where(better, score, state.best_return),
    )
    return state, {"eval_return": score, "best_eval_return": state.best_return}


def interval_metrics(frames: jax.Array, stats: EpisodeStats) -> dict[str, jax.Array]:
    """What every agent logs after an interval: frames per seed so far, finished episodes, and the mean
    return of the last 100 of them."""
    return {"frames": frames, "episodes": stats.finished, "recent_return": recent_return(stats)}


def final_evaluation(env: Environment, env_params: EnvParams, act: Callable, policy_field: str, config: Any):
    """`evaluate(state)`: returns of `config.eval_episodes` episodes of the evaluation policy `act` with the
    params at the state's `policy_field` path, from a key the training stream never draws."""
    policy_params = operator.attrgetter(policy_field)

    def evaluate_state(state) -> jax.Array:
        key = jax.random.fold_in(state.key, 1)
        policy = functools.partial(act, policy_params(state))
        return evaluate(env, env_params, policy, key, config.eval_episodes, config.eval_max_steps)

    return evaluate_state


def sampled_evaluation(env: Environment, env_params: EnvParams, sample: Callable, policy_field: str, config: Any):
    """`evaluate_sampled(state)`: returns of `config.eval_episodes` episodes played by actions drawn from the
    policy, `sample(params, obs, key)` with the params at `policy_field`, from `final_evaluation`'s key (the
    same first states) with a fresh key for the actions every step."""
    policy_params = operator.attrgetter(policy_field)

    def evaluate_state(state) -> jax.Array:
        key = jax.random.fold_in(state.key, 1)
        policy = functools.partial(sample, policy_params(state))
        return play_episodes(env, env_params, policy, key, config.eval_episodes, config.eval_max_steps, True)[0]

    return evaluate_state
