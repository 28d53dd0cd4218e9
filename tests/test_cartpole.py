"""CartPole against Gymnasium's classic numpy `CartPole-v1`: dynamics, reward, termination, reset."""

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from hypothesis import example, given
from hypothesis import strategies as st

import maxatar
from maxatar.core import Draws, EnvState
from maxatar.games.cartpole.rules import THETA_LIMIT, X_LIMIT, CartPoleState

ENV, PARAMS = maxatar.make("CartPole-v1")
LIMITS = np.array([X_LIMIT, np.inf, THETA_LIMIT, np.inf])


def f32(low, high):
    return st.floats(float(np.float32(low)), float(np.float32(high)), width=32, allow_nan=False)


# States inside and around the termination bounds, velocities up to what the dynamics reach and beyond.
STATES = st.tuples(f32(-2.6, 2.6), f32(-4.0, 4.0), f32(-0.25, 0.25), f32(-4.0, 4.0))


@jax.jit
def jax_step(values, action):
    game = CartPoleState(*values)
    state = EnvState(game=game, last_action=jnp.int32(0), time=jnp.int32(0), terminated=jnp.bool_(False))
    obs, _, reward, terminated, truncated, _ = ENV.transition(state, action, Draws(jnp.float32(1.0), ()), PARAMS)
    return obs, reward, terminated


def reference_step(values, action):
    env = CartPoleEnv()
    env.reset(seed=0)
    env.state = np.array(values, dtype=np.float64)
    obs, reward, terminated, truncated, _ = env.step(action)
    return np.array(env.state), obs, reward, terminated


@given(STATES, st.integers(0, 1))
@example((2.4, 0.0, 0.0, 0.0), 1)  # exactly on the x bound stays alive
@example((np.float32(2.4), np.float32(1e-3), 0.0, 0.0), 1)  # just past it terminates
@example((0.0, 0.0, np.float32(THETA_LIMIT), 0.0), 0)
@example((-2.39, -1.0, 0.1, -2.0), 0)
def test_step_matches_classic_cartpole(values, action):
    ref_state, ref_obs, ref_reward, ref_terminated = reference_step(values, action)
    obs, reward, terminated = jax_step(jnp.asarray(values, jnp.float32), jnp.int32(action))
    obs = np.asarray(obs, np.float64)
    np.testing.assert_allclose(obs, ref_state, rtol=1e-5, atol=1e-6)
    assert ref_obs.dtype == np.float32 and obs.shape == ref_obs.shape
    assert float(reward) == ref_reward == 1.0
    # float32 against float64 can only disagree when the reference lands within rounding of a bound;
    # there the rule must still hold exactly on our own float32 state.
    margin = np.abs(np.abs(ref_state) - LIMITS)
    if np.all(margin[[0, 2]] > 1e-5):
        assert bool(terminated) == ref_terminated
    else:
        assert bool(terminated) == bool(np.any(np.abs(obs.astype(np.float64)) > LIMITS))


reset_from_uniforms = jax.jit(lambda u: ENV.reset_from_uniforms(u, PARAMS))


@given(st.lists(f32(0.0, 0.99999994), min_size=4, max_size=4))
def test_reset_maps_uniforms_like_numpy_uniform(uniforms):
    """Gymnasium draws `np_random.uniform(-0.05, 0.05, 4)` = low + (high - low) * u."""
    obs, _ = reset_from_uniforms(jnp.asarray(uniforms, jnp.float32))
    expected = -0.05 + 0.1 * np.asarray(uniforms, np.float64)
    np.testing.assert_allclose(np.asarray(obs), expected, rtol=1e-6, atol=1e-8)


def test_reset_distribution():
    keys = jax.random.split(jax.random.key(0), 10_000)
    obs, state = jax.jit(jax.vmap(ENV.reset, in_axes=(0, None)))(keys, PARAMS)
    obs = np.asarray(obs)
    assert obs.shape == (10_000, 4) and obs.dtype == np.float32
    assert obs.min() >= -0.05 and obs.max() < 0.05
    np.testing.assert_allclose(obs.mean(0), 0.0, atol=0.002)
    np.testing.assert_allclose(obs.std(0), 0.1 / np.sqrt(12), rtol=0.03)
    assert not np.asarray(state.terminated).any()


def test_episode_reward_and_time_limit():
    """+1 per step including the terminating one, 0 afterwards; the 500-step limit is truncation."""
    env, params = maxatar.make("CartPole-v1")
    assert params.max_steps == 500 and params.sticky_action_prob == 0.0

    @jax.jit
    def rollout(key, action_bias):
        _, state = env.reset(key, params)

        def body(state, key):
            # A balancing controller: push towards the side the pole leans to (plus a bias).
            action = (state.game.theta + 0.3 * state.game.theta_dot > action_bias).astype(jnp.int32)
            _, state, reward, terminated, truncated, _ = env.step(key, state, action, params)
            return state, (reward, terminated, truncated)

        return jax.lax.scan(body, state, jax.random.split(key, 600))[1]

    reward, terminated, truncated = map(np.asarray, rollout(jax.random.key(1), 0.0))
    assert not terminated.any() and truncated[499] and not truncated[:499].any() and reward[:500].sum() == 500
    reward, terminated, truncated = map(np.asarray, rollout(jax.random.key(1), 10.0))  # always push left: falls
    end = int(np.argmax(terminated))
    assert 0 < end < 100 and terminated[end:].all()
    assert reward[: end + 1].sum() == end + 1 and reward[end + 1 :].sum() == 0


@given(st.lists(f32(0.0, 0.99999994), min_size=4, max_size=4), st.integers(0, 2**31 - 1), st.floats(0.0, 1.0))
def test_twin_equals_classic_cartpole_exactly(uniforms, seed, push_right):
    """The Python backend's twin is the reference's float64 arithmetic: whole episodes agree bit for bit
    (state, float32 observation, reward, termination), from the reset the same uniforms give."""
    from maxatar.twin import load_twin

    twin = load_twin(ENV, PARAMS)
    game = twin.reset(uniforms)
    ref = CartPoleEnv()
    ref.reset(seed=0)
    ref.state = np.array(game, np.float64)
    np.testing.assert_array_equal(twin.observation(game), np.array(ref.state, np.float32))
    assert game == [-0.05 + 0.1 * u for u in uniforms]  # numpy's uniform(low, high): low + (high - low) * u
    actions = np.random.default_rng(seed).random(500) < push_right
    for action in actions.astype(int).tolist():
        game, reward, terminal = twin.step(game, action, [])
        ref_obs, ref_reward, ref_terminated, _, _ = ref.step(action)
        assert game == ref.state.tolist()
        np.testing.assert_array_equal(twin.observation(game), ref_obs)
        assert (reward, terminal) == (ref_reward, ref_terminated)
        if terminal:
            break
