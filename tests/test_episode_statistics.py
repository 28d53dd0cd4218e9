"""`maxatar.EpisodeStatistics`: episode returns and lengths in the pure API, under jit, vmap and scan.

One jitted program rolls out CartPole (16 environments, 96 steps, a 20-step time limit so episodes end both
ways) through `EpisodeStatistics(AutoReset(env))` with `step`, through it with `step_from_uniforms`, and through
the bare `AutoReset` with the same keys: the wrapper changes nothing of the steps and reports every finished
episode's rewards and steps.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import maxatar
from maxatar.prng import uniform

N, T = 16, 96
ENV, PARAMS = maxatar.make("maxatar/CartPole-v1", max_steps=20)
AUTO = maxatar.AutoReset(ENV)
STATS = maxatar.EpisodeStatistics(AUTO)


def rollout(stepper, key, from_uniforms=False):
    """Reset N environments, then T vmapped steps of random actions inside `lax.scan`."""
    key, k_reset = jax.random.split(key)
    state = jax.vmap(stepper.reset, in_axes=(0, None))(jax.random.split(k_reset, N), PARAMS)[1]

    def body(state, key):
        k_act, k_step = jax.random.split(key)
        action = jax.random.randint(k_act, (N,), 0, ENV.num_actions)
        keys = jax.random.split(k_step, N)
        if from_uniforms:  # the batched caller's path: the same uniforms `step` draws from each key
            uniforms = jax.vmap(lambda k: uniform(k, (stepper.num_uniforms,)))(keys)
            out = jax.vmap(stepper.step_from_uniforms, in_axes=(0, 0, 0, None))(uniforms, state, action, PARAMS)
        else:
            out = jax.vmap(stepper.step, in_axes=(0, 0, 0, None))(keys, state, action, PARAMS)
        return out[1], (out[0], out[1], *out[2:])

    return jax.lax.scan(body, state, jax.random.split(key, T))[1]


@pytest.fixture(scope="module")
def runs():
    @jax.jit
    def run(key):
        return rollout(STATS, key), rollout(STATS, key, from_uniforms=True), rollout(AUTO, key)

    return jax.device_get(run(jax.random.key(0)))


def test_the_steps_are_autoresets(runs):
    stats, from_uniforms, bare = runs
    obs, state, reward, terminated, truncated, info = stats
    bare_obs, bare_state, *bare_rest, _ = bare
    for a, b in zip(
        jax.tree.leaves((obs, state.env_state, reward, terminated, truncated)),
        jax.tree.leaves((bare_obs, bare_state, *bare_rest)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(jax.tree.leaves(stats), jax.tree.leaves(from_uniforms), strict=True):
        np.testing.assert_array_equal(a, b)


def test_finished_episodes_are_reported(runs):
    """Each finished episode's return and length, as the reward stream gives them; valid from the first on."""
    _, state, reward, terminated, truncated, info = runs[0]
    done = terminated | truncated
    assert terminated.any() and (truncated & ~terminated).any()
    running, length = np.zeros(N, np.float32), np.zeros(N, np.int32)
    for t in range(T):
        running, length = running + reward[t], length + 1
        ended = done[t]
        np.testing.assert_array_equal(info["returned_episode_returns"][t][ended], running[ended])
        np.testing.assert_array_equal(info["returned_episode_lengths"][t][ended], length[ended])
        np.testing.assert_array_equal(state.episode_return[t], np.where(ended, 0.0, running))
        running, length = np.where(ended, 0.0, running), np.where(ended, 0, length)
    np.testing.assert_array_equal(info["returned_episode"], done)
    valid = np.logical_or.accumulate(done, axis=0)
    np.testing.assert_array_equal(info["returned_episode_valid"], valid)
    # Until an environment's first episode ends there is nothing to report; afterwards the last one stays.
    assert (info["returned_episode_returns"][~valid] == 0).all() and (info["returned_episode_lengths"][valid] > 0).all()
    assert info["returned_episode_returns"].dtype == np.float32 and info["returned_episode_lengths"].dtype == np.int32


def test_forwarding_and_statics():
    assert STATS.num_actions == 2 and STATS.num_uniforms == AUTO.num_uniforms
    assert STATS == maxatar.EpisodeStatistics(maxatar.AutoReset(ENV)) and hash(STATS) == hash(
        maxatar.EpisodeStatistics(maxatar.AutoReset(ENV))
    )
    state = STATS.start(ENV.reset(jax.random.key(0), PARAMS)[1])
    assert float(state.episode_return) == 0 and not state.returned_episode_valid
