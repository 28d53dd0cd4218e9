"""The functional contract of docs/architecture.md, checked for every registered environment."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import maxatar
from maxatar.core import EnvState
from maxatar.episode import AutoReset

IDS = maxatar.registered_ids()
STEPS = 40
MAX_STEPS = 15  # short time limit, so truncation and auto-reset happen inside the rollout


@functools.cache
def setup(env_id):
    env, params = maxatar.make(env_id, max_steps=MAX_STEPS)
    auto = AutoReset(env)

    def rollout(key, params):
        """Random play with auto-reset; records what each step saw and produced."""
        reset_key, key = jax.random.split(key)
        obs, state = env.reset(reset_key, params)

        def body(state, key):
            action_key, step_key = jax.random.split(key)
            action = jax.random.randint(action_key, (), 0, env.num_actions)
            obs, next_state, reward, terminated, truncated, info = auto.step(step_key, state, action, params)
            seen = (state.time, obs, reward, terminated, truncated, next_state.time, next_state.last_action)
            return next_state, seen

        return jax.lax.scan(body, state, jax.random.split(key, STEPS))

    batched = jax.jit(jax.vmap(rollout, in_axes=(0, None)))
    return env, params, batched


@pytest.mark.parametrize("env_id", IDS)
def test_rollout_contract(env_id):
    env, params, rollout = setup(env_id)
    keys = jax.random.split(jax.random.key(7), 3)
    final, seen = jax.device_get(rollout(keys, params))
    time_before, obs, reward, terminated, truncated, time_after, last_action = seen

    # Static shapes and dtypes, as declared.
    assert obs.shape == (3, STEPS, *env.obs_shape) and obs.dtype == np.dtype(env.obs_dtype)
    assert reward.dtype == np.float32 and terminated.dtype == truncated.dtype == np.bool_
    reset_state = jax.eval_shape(env.reset, jax.random.key(0), params)[1]
    assert jax.tree.structure(final) == jax.tree.structure(jax.tree.map(lambda x: x[0], final))
    for leaf, ref in zip(jax.tree.leaves(final), jax.tree.leaves(reset_state), strict=True):
        assert leaf.shape == (3, *ref.shape) and leaf.dtype == ref.dtype

    # Truncation is the time limit and nothing else; termination is the game's own.
    np.testing.assert_array_equal(truncated, time_before + 1 >= MAX_STEPS)
    # Auto-reset: a finished step hands over a fresh episode; otherwise the counter advances.
    done = terminated | truncated
    np.testing.assert_array_equal(time_after, np.where(done, 0, time_before + 1))
    assert np.all(time_before[:, 1:] == time_after[:, :-1])
    assert done.any(), "the rollout should exercise the time limit"
    assert ((0 <= last_action) & (last_action < env.num_game_actions)).all()

    # Same key, same trajectory, whatever the batch size.
    single_final, single_seen = jax.device_get(rollout(keys[:1], params))
    for a, b in zip(jax.tree.leaves((single_final, single_seen)), jax.tree.leaves((final, seen)), strict=True):
        np.testing.assert_array_equal(a[0], b[0])


@functools.cache
def probes(env_id):
    env, params, _ = setup(env_id)

    @jax.jit
    def probe(key, action, params):
        _, state = env.reset(key, params)
        stepped = env.step(key, state, action, params)
        replayed = env.transition(state, action, env.sample_draws(key, state, params), params)
        frozen_state = dataclasses.replace(state, terminated=jnp.bool_(True))
        frozen = env.step(key, frozen_state, action, params)
        # AutoReset from a finished state: the same reset with or without final_obs (which skips the freeze)
        auto = [AutoReset(env, final_obs=f).step(key, frozen_state, action, params) for f in (False, True)]
        return state, stepped, replayed, frozen, auto, env.observation(state)

    return probe


@pytest.mark.parametrize("env_id", IDS)
def test_step_is_transition_after_sample_draws_and_terminal_states_freeze(env_id):
    env, params, _ = setup(env_id)
    probe = probes(env_id)
    for seed in range(3):
        state, stepped, replayed, frozen, auto, start_obs = jax.device_get(
            probe(jax.random.key(seed), jnp.int32(seed % 2), params)
        )
        for a, b in zip(jax.tree.leaves(stepped), jax.tree.leaves(replayed), strict=True):
            np.testing.assert_array_equal(a, b)
        _, frozen_state, reward, terminated, _, _ = frozen
        for a, b in zip(jax.tree.leaves(frozen_state.game), jax.tree.leaves(state.game), strict=True):
            np.testing.assert_array_equal(a, b)
        assert reward == 0 and terminated and frozen_state.time == 1

        (obs, next_state, reward, terminated, truncated, _), with_final = auto
        for a, b in zip(
            jax.tree.leaves((obs, next_state, reward, terminated, truncated)),
            jax.tree.leaves(with_final[:5]),
            strict=True,
        ):
            np.testing.assert_array_equal(a, b)
        assert reward == 0 and terminated and next_state.time == 0 and not next_state.terminated
        assert next_state.last_action == frozen_state.last_action
        np.testing.assert_array_equal(with_final[5]["final_obs"], start_obs)  # the frozen game's observation


@pytest.mark.parametrize("env_id", IDS)
def test_sticky_actions_and_params_batch_without_recompiling(env_id):
    env, params, _ = setup(env_id)
    probe = probes(env_id)
    action = jnp.int32(env.num_actions - 1)
    executed = env.action_set[-1]
    # Probability 1 always repeats the previous executed action (0 after construction); 0 never does.
    always = probe(jax.random.key(0), action, params.replace(sticky_action_prob=1.0))[1][1]
    never = probe(jax.random.key(0), action, params.replace(sticky_action_prob=0.0))[1][1]
    assert int(always.last_action) == 0 and int(never.last_action) == executed
    assert probe._cache_size() == 1, "changing params must not recompile"

    batched = dataclasses.replace(params, sticky_action_prob=jnp.array([0.0, 1.0]))
    axes = dataclasses.replace(jax.tree.map(lambda _: None, params), sticky_action_prob=0)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, None, axes)))
    _, states = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(1), 2), params)
    out = step(jax.random.split(jax.random.key(2), 2), states, action, batched)
    np.testing.assert_array_equal(np.asarray(out[1].last_action), [executed, 0])


@pytest.mark.parametrize("env_id", IDS)
def test_bad_input_is_rejected(env_id):
    env, params, _ = setup(env_id)
    _, state = jax.jit(env.reset)(jax.random.key(0), params)
    with pytest.raises(ValueError, match="outside"):
        env.step(jax.random.key(0), state, env.num_actions, params)
    with pytest.raises(ValueError, match="outside"):
        env.step(jax.random.key(0), state, -1, params)
    with pytest.raises(TypeError, match="integer"):
        env.step(jax.random.key(0), state, 1.5, params)
    with pytest.raises(TypeError, match="integer"):
        env.step(jax.random.key(0), state, np.array([0, 1]), params)
    # Inside jit an out-of-range action cannot raise: it is clipped and flagged, the state stays valid.
    info = jax.jit(env.step)(jax.random.key(0), state, jnp.int32(99), params)[-1]
    assert bool(info["invalid_action"])
    assert isinstance(state, EnvState)


def test_make_rejects_bad_configuration():
    with pytest.raises(ValueError, match="unknown environment id") as refused:
        maxatar.make("maxatar/Pong-v0")
    assert "did you mean" not in str(refused.value)  # nothing close
    for typo in ("maxatar/breakout-v0", "Breakot-v0"):  # every front end checks ids here (maxatar.checks)
        with pytest.raises(ValueError, match=r"did you mean 'maxatar/Breakout-v0'\?"):
            maxatar.make(typo)
    with pytest.raises(ValueError, match="sticky_action_prob"):
        maxatar.make("CartPole-v1", sticky_action_prob=1.5)
    with pytest.raises(ValueError, match="sticky_action_prob"):
        maxatar.make("CartPole-v1", sticky_action_prob=-0.1)
    with pytest.raises(ValueError, match="max_steps"):
        maxatar.make("CartPole-v1", max_steps=-1)
    with pytest.raises(ValueError, match="max_steps"):
        maxatar.make("CartPole-v1", max_steps=2.5)
    with pytest.raises(TypeError, match="unexpected argument"):
        maxatar.make("CartPole-v1", gravity=3.0)
    for kwargs in ({"foo": 1}, {"foo": 1, "full_action_space": False}):
        with pytest.raises(TypeError, match=r"unexpected argument\(s\) \['foo'\]; it takes setting, full") as error:
            maxatar.make("Breakout-v0", **kwargs)
        assert "minimal_actions" not in str(error.value)  # the user's keywords only, not make's own
    env, params = maxatar.make("maxatar/CartPole-v1", sticky_action_prob=0.25, max_steps=0)
    assert (params.sticky_action_prob, params.max_steps) == (0.25, 0)
    assert hash(env) == hash(maxatar.make("CartPole-v1")[0]) and env == maxatar.make("CartPole-v1")[0]


# The sticky draw is a float32 uniform, a multiple of 2**-23 (JAX's mantissa trick): never subnormal, which XLA
# on CPU would flush to zero. So u ranges over those draws and over the other normal float32 values.
DRAWS = st.one_of(st.integers(0, 2**23 - 1).map(lambda k: k / 2**23), st.floats(2.0**-126, 1.0, width=32))


@given(st.floats(0.0, 1.0), DRAWS)
@example(1e-308, 0.0)  # a subnormal threshold would be flushed to zero by XLA on CPU
@example(1.401298464324817e-45, 2.0**-23)  # the smallest subnormal threshold against the smallest positive draw
def test_sticky_threshold_decides_like_the_float64_reference(p, u):
    """The reference compares a float64 draw with p; ours is float32, against p's float32 ceiling, on the device."""
    params = maxatar.make("Breakout-v0", sticky_action_prob=p)[1]
    assert bool(jnp.float32(u) < jnp.asarray(params.sticky_action_prob, jnp.float32)) == (u < p)
