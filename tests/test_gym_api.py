"""Gymnasium front end: registration, checkers, the single and vector classes and their autoreset modes."""

import subprocess
import sys

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import maxatar
from maxatar.gym import MaxAtarFuncEnv, MaxAtarVectorEnv

IDS = maxatar.registered_ids()


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_and_sb3_checkers_pass(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gymnasium.make(env_id)
    check_env(env.unwrapped)
    sb3_check_env(env, warn=False)
    assert isinstance(env.unwrapped.func_env, MaxAtarFuncEnv)
    obs, _ = env.reset(seed=3)
    assert isinstance(obs, np.ndarray) and env.observation_space.contains(obs)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert type(reward) is float and type(terminated) is bool and type(truncated) is bool


def test_registration_without_import_and_kwargs_pass_through():
    code = (
        "import gymnasium, sys; env = gymnasium.make('maxatar:maxatar/CartPole-v1');"
        "assert 'maxatar' in sys.modules; print(env.reset(seed=0)[0].shape)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "(4,)", out.stderr
    env = gymnasium.make("maxatar/Doors-v0", sticky_action_prob=0.5, difficulty_ramping=False, max_steps=7, size=9)
    params = env.unwrapped.params
    assert (params.sticky_action_prob, params.difficulty_ramping, params.max_steps) == (0.5, False, 7)
    assert env.observation_space.shape == (81,)
    with pytest.raises(gymnasium.error.Error):
        gymnasium.make("maxatar/Pong-v0")
    with pytest.raises(ValueError, match="sticky_action_prob"):
        gymnasium.make("maxatar/CartPole-v1", sticky_action_prob=2.0)


def test_envs_of_one_id_share_nothing_mutable():
    """`make` builds an id's params and observation space once (both are a large share of a make): what two
    envs share must be immutable, and each space samples from its own generator."""
    a, b = gymnasium.make("maxatar/CartPole-v1"), gymnasium.make("maxatar/CartPole-v1")
    assert a.observation_space is not b.observation_space and a.observation_space == b.observation_space
    a.observation_space.seed(1)
    b.observation_space.seed(2)
    assert not np.array_equal(a.observation_space.sample(), b.observation_space.sample())
    with pytest.raises(ValueError, match="read-only"):
        a.observation_space.high[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        gymnasium.make("maxatar/Doors-v0").observation_space.nvec[0] = 2
    # The cached params are keyed by each value's type: 1 is a probability, True (equal to 1) is not.
    assert maxatar.make("Breakout-v0", sticky_action_prob=1)[1].sticky_action_prob == 1.0
    with pytest.raises(ValueError, match="sticky_action_prob"):
        maxatar.make("Breakout-v0", sticky_action_prob=True)
    assert maxatar.make("Breakout-v0", sticky_action_prob=np.array([0.0, 0.5]))[1].sticky_action_prob.shape == (2,)


def test_single_env_seeding_outputs_and_bad_actions():
    env = gymnasium.make("maxatar/CartPole-v1")
    first = [env.reset(seed=11)[0]] + [env.step(i % 2)[0] for i in range(5)]
    again = [env.reset(seed=11)[0]] + [env.step(i % 2)[0] for i in range(5)]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    assert not np.array_equal(env.reset(seed=12)[0], first[0])
    for bad in (2, -1):
        with pytest.raises(ValueError, match="outside the action space"):
            env.step(bad)
    with pytest.raises(TypeError, match="integer"):
        env.step(0.5)
    for numpy_action in (np.int64(0), np.uint8(0)):  # what Discrete.sample() and numpy arrays hand out
        env.reset(seed=11)
        np.testing.assert_array_equal(env.step(numpy_action)[0], first[1])
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(np.int64(2))
    with pytest.raises(TypeError, match="integer"):
        env.step(np.bool_(False))
    jax_env = gymnasium.make("maxatar/CartPole-v1", output="jax")
    obs, _ = jax_env.reset(seed=0)
    assert isinstance(obs, jax.Array)
    with pytest.raises(ValueError, match="output"):
        gymnasium.make("maxatar/CartPole-v1", output="torch")
    with pytest.raises(ValueError, match="render_mode"):
        gymnasium.make("maxatar/CartPole-v1", render_mode="ascii")
    with pytest.raises(gymnasium.error.ResetNeeded):
        gymnasium.make("maxatar/CartPole-v1").step(0)
    with pytest.raises(RuntimeError, match="reset"):
        gymnasium.make("maxatar/CartPole-v1").unwrapped.step(0)


def short_episodes(mode, num_envs=3, **kwargs):
    """CartPole with a 4-step limit: every sub-environment truncates on steps 4, 8, ... (pushing one way
    from a near-upright start cannot topple the pole that fast)."""
    return gymnasium.make_vec("maxatar/CartPole-v1", num_envs=num_envs, autoreset_mode=mode, max_steps=4, **kwargs)


def test_vector_next_step_mode():
    venv = short_episodes("next_step")
    assert isinstance(venv, MaxAtarVectorEnv) and venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, _ = venv.reset(seed=0)
    actions = np.ones(3, np.int64)
    for _ in range(3):
        obs, reward, terminated, truncated, _ = venv.step(actions)
        assert (reward == 1).all() and not (terminated | truncated).any()
    last_obs, reward, terminated, truncated, _ = venv.step(actions)
    assert truncated.all() and not terminated.any() and (reward == 1).all()
    obs, reward, terminated, truncated, _ = venv.step(actions)  # the reset step: action ignored
    assert (reward == 0).all() and not (terminated | truncated).any()
    assert np.abs(obs).max() <= 0.05 and (np.asarray(venv.state.time) == 0).all()
    obs, reward, *_ = venv.step(actions)
    assert (reward == 1).all() and (np.asarray(venv.state.time) == 1).all()


def test_vector_same_step_mode_reports_final_observation():
    venv = short_episodes(AutoresetMode.SAME_STEP)
    venv.reset(seed=0)
    actions = np.ones(3, np.int64)
    for _ in range(3):
        obs, reward, terminated, truncated, info = venv.step(actions)
        assert not info["_final_obs"].any()
    before = obs
    obs, reward, terminated, truncated, info = venv.step(actions)
    assert truncated.all() and (reward == 1).all() and info["_final_obs"].all()
    final = info["final_obs"]
    assert np.abs(final[:, 1]).min() > np.abs(before[:, 1]).min()  # the cart kept accelerating
    assert np.abs(obs).max() <= 0.05 and (np.asarray(venv.state.time) == 0).all()
    obs, reward, terminated, truncated, info = venv.step(actions)
    assert (reward == 1).all() and not info["_final_obs"].any()


def test_vector_disabled_mode_and_partial_reset():
    venv = short_episodes("disabled")
    venv.reset(seed=0)
    for _ in range(4):
        obs, reward, terminated, truncated, _ = venv.step(np.zeros(3, np.int64))
    assert truncated.all()
    with pytest.raises(RuntimeError, match="reset_mask"):
        venv.step(np.zeros(3, np.int64))
    kept = np.asarray(venv.state.game.x)
    obs, _ = venv.reset(options={"reset_mask": np.array([True, False, True])})
    time = np.asarray(venv.state.time)
    assert list(time) == [0, 4, 0] and np.asarray(venv.state.game.x)[1] == kept[1]
    with pytest.raises(RuntimeError, match="reset_mask"):
        venv.step(np.zeros(3, np.int64))
    venv.reset(options={"reset_mask": np.array([False, True, False])})
    venv.step(np.zeros(3, np.int64))


def test_vector_bad_input_seeding_and_jax_output():
    venv = short_episodes("next_step")
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(3, np.int64))
    first, _ = venv.reset(seed=5)
    np.testing.assert_array_equal(venv.reset(seed=5)[0], first)
    with pytest.raises(TypeError, match="shape"):
        venv.step(np.zeros(4, np.int64))
    with pytest.raises(TypeError, match="integers"):
        venv.step(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="outside the action space"):
        venv.step(np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="autoreset_mode"):
        short_episodes("sometimes")
    with pytest.raises(ValueError, match="num_envs"):
        gymnasium.make_vec("maxatar/CartPole-v1", num_envs=0)
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(options={"reset_mask": np.array([1, 0, 1])})
    jvenv = short_episodes("next_step", output="jax")
    obs, _ = jvenv.reset(seed=5)
    assert isinstance(obs, jax.Array)
    # CartPole's Python twin (numpy output) is the reference's float64 arithmetic, the JAX backend float32.
    np.testing.assert_allclose(np.asarray(obs), first, rtol=1e-6)
    obs, reward, *_ = jvenv.step(jax.numpy.zeros(3, jax.numpy.int32))
    assert isinstance(reward, jax.Array)


@pytest.mark.parametrize("env_id", IDS)
def test_vector_env_steps_every_id(env_id):
    venv = gymnasium.make_vec(env_id, num_envs=4, autoreset_mode="same_step")
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (4, *venv.single_observation_space.shape) and venv.observation_space.contains(obs)
    for _ in range(3):
        obs, reward, terminated, truncated, info = venv.step(venv.action_space.sample())
    assert reward.shape == (4,) and terminated.dtype == np.bool_ and venv.observation_space.contains(obs)


def test_numpy_outputs_are_writable_copies():
    """Gymnasium's own environments return writable arrays; ours are fresh copies, so writing to them never
    reaches the environment's state (or a later result)."""
    env, twin = gymnasium.make("maxatar/Breakout-v0").unwrapped, gymnasium.make("maxatar/Breakout-v0").unwrapped
    obs, _ = env.reset(seed=0)
    expected = twin.reset(seed=0)[0]
    assert obs.flags.writeable
    obs[...] = ~obs  # scribble
    np.testing.assert_array_equal(np.asarray(env.func_env.env.observation(env.state)), expected)
    for action in (1, 2, 1):
        obs, *_ = env.step(action)
        assert obs.flags.writeable
        np.testing.assert_array_equal(obs, twin.step(action)[0])
        obs[...] = True

    venv = gymnasium.make_vec("maxatar/CartPole-v1", num_envs=4, autoreset_mode="same_step", max_steps=2)
    other = gymnasium.make_vec("maxatar/CartPole-v1", num_envs=4, autoreset_mode="same_step", max_steps=2)
    obs, _ = venv.reset(seed=1)
    other.reset(seed=1)
    assert obs.flags.writeable
    obs[...] = 9.0
    for _ in range(3):  # the second step truncates every sub-environment: final_obs is filled
        actions = np.ones(4, np.int64)
        results = venv.step(actions)
        expected = other.step(actions)
        arrays = (*results[:4], results[4]["final_obs"], results[4]["_final_obs"])
        assert all(a.flags.writeable for a in arrays)
        jax.tree.map(np.testing.assert_array_equal, results, expected)
        for a in arrays:
            a[...] = 1
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(venv.state), jax.device_get(other.state))


@pytest.mark.parametrize("output", ["numpy", "jax"])
@pytest.mark.parametrize("env_id", ["maxatar/Breakout-v0", "maxatar/CartPole-v1", "maxatar/Breakout-flat-v0"])
def test_make_reset_and_step_do_not_warn(env_id, output):
    """No Gymnasium warning from make, reset or step, numpy or JAX output: the ids are registered as Gymnasium
    registers its own JAX environments (`disable_env_checker=True`), since the passive checker wants numpy
    values; Gymnasium's full `check_env` runs on the numpy output above instead."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make(env_id, output=output)
        for seed in (0, None):
            env.reset(seed=seed)
            env.step(0)
            env.step(1)
        envs = gymnasium.make_vec(env_id, num_envs=2, output=output)
        envs.reset(seed=0)
        envs.step(np.zeros(2, np.int64))
    assert [str(w.message) for w in caught] == []
    assert gymnasium.spec(env_id).disable_env_checker
    # The checker is still there for whoever asks for it.
    assert "PassiveEnvChecker" in str(gymnasium.make(env_id, disable_env_checker=False))
