"""Pixel observations (`obs_type="rgb"` / `"grayscale"`): spaces and checkers, the same pixels from the Python
and JAX backends, the pure wrapper under jit/vmap/scan, the vector, SB3 and gymnax front ends, bad values."""

from __future__ import annotations

import dataclasses
from functools import partial

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

import maxatar
from maxatar import gymnax
from maxatar.pixels import PixelObservation, grayscale, grid_image, numpy_picture, palette_of
from maxatar.sb3 import make_sb3_vec_env

GRID_IDS = [i for i in maxatar.registered_ids() if "CartPole" not in i]
OBS_TYPES = ["rgb", "grayscale"]


@pytest.mark.parametrize("obs_type", OBS_TYPES)
@pytest.mark.parametrize("env_id", ["maxatar/Breakout-v0", "maxatar/CartPole-v1", "maxatar/Doors-v0"])
def test_spaces_and_checkers(env_id, obs_type):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gymnasium.make(env_id, obs_type=obs_type)
    rows, cols = {"Breakout": (160, 160), "CartPole": (160, 320), "Doors": (165, 165)}[env_id[8:].split("-")[0]]
    shape = (rows, cols, 3) if obs_type == "rgb" else (rows, cols)
    assert env.observation_space == spaces.Box(0, 255, shape, np.uint8)
    check_env(env.unwrapped)
    sb3_check_env(env, warn=False)
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.uint8 and obs.shape == shape and obs.flags.writeable
    assert len(np.unique(obs)) > 2  # a picture, not a blank


@pytest.mark.parametrize("env_id", GRID_IDS)
def test_python_and_jax_backends_give_the_same_pixels(env_id):
    """The Python backend draws in numpy from a table of cell blocks; the JAX backend runs the JAX drawing."""
    kwargs = dict(obs_type="rgb", obs_scale=5, max_steps=30, sticky_action_prob=0.2)
    python, jaxed = (gymnasium.make(env_id, backend=b, **kwargs) for b in ("python", "jax"))
    assert python.unwrapped.backend == "python" and jaxed.unwrapped.backend == "jax"
    actions = np.random.default_rng(0).integers(0, python.action_space.n, 60).tolist()
    obs = [env.reset(seed=4)[0] for env in (python, jaxed)]
    np.testing.assert_array_equal(*obs)
    for action in actions:
        outs = [env.step(action) for env in (python, jaxed)]
        np.testing.assert_array_equal(outs[0][0], outs[1][0])
        assert outs[0][1:4] == outs[1][1:4]
        if outs[0][2] or outs[0][3]:
            np.testing.assert_array_equal(*(env.reset()[0] for env in (python, jaxed)))
    # Grayscale is the integer luma of the same picture on either path.
    gray = gymnasium.make(env_id, **{**kwargs, "obs_type": "grayscale"})
    np.testing.assert_array_equal(gray.reset(seed=4)[0], grayscale(python.reset(seed=4)[0]))


def test_pure_wrapper_under_jit_vmap_scan():
    env, params = maxatar.make("maxatar/Asterix-v0", obs_type="grayscale", obs_scale=3)
    base, _ = maxatar.make("maxatar/Asterix-v0")
    assert isinstance(env, PixelObservation) and env.env == base and env.obs_shape == (30, 30)
    assert env.num_actions == base.num_actions and env.default_params() == base.default_params()

    @partial(jax.jit, static_argnums=0)
    def rollout(env, keys):
        return jax.vmap(partial(play, env))(keys)

    def play(env, key):
        auto = maxatar.AutoReset(env)
        obs, state = env.reset(key, params)

        def body(state, key):
            obs, state, reward, *_ = auto.step(key, state, jax.random.randint(key, (), 0, env.num_actions), params)
            return state, (obs, state, reward)

        return jax.lax.scan(body, state, jax.random.split(key, 40))[1]

    keys = jax.random.split(jax.random.key(0), 3)
    obs, states, rewards = rollout(env, keys)
    assert obs.shape == (3, 40, 30, 30) and obs.dtype == jnp.uint8
    # The same dynamics as the wrapped game, key for key.
    jax.tree.map(np.testing.assert_array_equal, (states, rewards), rollout(base, keys)[1:])
    # The pixels (a gather from a table of cell blocks) are `grid_image`'s drawing of the state, and the numpy
    # path draws the same from the game's observation.
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), states)
    draw = lambda state: grayscale(grid_image(base.grid(base.observation(state)), palette_of(base, 4), 3))
    expected = jax.vmap(draw)(flat)
    np.testing.assert_array_equal(obs.reshape(-1, 30, 30), expected)
    base_obs = np.asarray(jax.vmap(base.observation)(flat))
    for i in (0, 77, 119):
        np.testing.assert_array_equal(numpy_picture(base, base_obs[i], "grayscale", 3), expected[i])


@pytest.mark.parametrize("backend", ["python", "jax"])
def test_vector_and_sb3_front_ends(backend):
    venv = gymnasium.make_vec(
        "maxatar/Breakout-v0", num_envs=3, obs_type="rgb", obs_scale=4, backend=backend, autoreset_mode="same_step"
    )
    assert venv.single_observation_space == spaces.Box(0, 255, (40, 40, 3), np.uint8)
    single = gymnasium.make("maxatar/Breakout-v0", obs_type="rgb", obs_scale=4)
    obs, _ = venv.reset(seed=7)
    np.testing.assert_array_equal(obs[0], single.reset(seed=7)[0])  # sub-environment 0 reads the single env's row
    for _ in range(30):
        obs, reward, terminated, truncated, info = venv.step(venv.action_space.sample())
        assert venv.observation_space.contains(obs)
        if info["_final_obs"].any():
            assert info["final_obs"][info["_final_obs"]][0].shape == (40, 40, 3)

    kwargs = dict(obs_type="grayscale", obs_scale=4, backend=backend)
    sb3 = make_sb3_vec_env("maxatar/Breakout-v0", num_envs=2, seed=0, **kwargs)
    assert sb3.observation_space == spaces.Box(0, 255, (40, 40), np.uint8)
    obs = sb3.reset()
    for _ in range(20):
        sb3.step_async(np.array([5, 5]))
        obs, reward, dones, infos = sb3.step_wait()
        assert obs.shape == (2, 40, 40) and obs.dtype == np.uint8
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"].shape == (40, 40)


def test_sb3_cnn_policy_learns_from_pixels():
    from stable_baselines3 import PPO

    venv = make_sb3_vec_env("maxatar/Breakout-v0", num_envs=2, seed=0, obs_type="rgb", obs_scale=4)
    model = PPO("CnnPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=64)
    assert model.num_timesteps == 64


def test_render_and_gymnax_facade_show_the_observation():
    env = gymnasium.make("maxatar/Asterix-v0", obs_type="rgb", render_mode="rgb_array")
    obs, _ = env.reset(seed=2)
    np.testing.assert_array_equal(env.render(), obs)  # rendering draws the wrapped game, without an overlay
    genv, gparams = gymnax.make("Asterix-MinAtar", obs_type="rgb", obs_scale=2)
    assert genv.observation_space(gparams).shape == (20, 20, 3) and genv.observation_space(gparams).high == 255
    obs, state = genv.reset(jax.random.key(0), gparams)
    obs, state, reward, terminated, truncated, info = genv.step(jax.random.key(1), state, 0, gparams)
    assert obs.shape == info["final_observation"].shape == (20, 20, 3) and obs.dtype == jnp.uint8


def test_bad_values_raise():
    with pytest.raises(ValueError, match="obs_type"):
        gymnasium.make("maxatar/Breakout-v0", obs_type="ram")
    with pytest.raises(ValueError, match="obs_scale"):
        maxatar.make("maxatar/Breakout-v0", obs_type="rgb", obs_scale=0)
    with pytest.raises(ValueError, match="obs_scale"):
        gymnasium.make_vec("maxatar/Breakout-v0", num_envs=2, obs_scale=4)  # no pixels to scale
    env, _ = maxatar.make("maxatar/Breakout-v0", obs_type="rgb")
    with pytest.raises(TypeError, match="PixelObservation"):
        PixelObservation(env)


@pytest.mark.slow  # a whole training / fresh interpreters
def test_pqn_trains_and_evaluates_on_pixels():
    from maxatar_agents.algorithms import pqn
    from maxatar_agents.algorithms.networks import encoder_for, make_network
    from maxatar_agents.run.configs import make_config

    env, params = maxatar.make("maxatar/Breakout-v0", obs_type="rgb", obs_scale=2)
    assert (encoder_for(env).kind, encoder_for(env).cell) == ("pixels", 2)
    frames = jnp.stack([env.reset(jax.random.key(i), params)[0] for i in range(2)])  # (2, 20, 20, 3) uint8
    network = make_network(env, (8,))
    assert network.apply(network.init(jax.random.key(1), frames), frames).shape == (2, env.num_actions)

    config = make_config(pqn, "maxatar/Breakout-v0", preset="pixels", obs_scale=2, total_steps=2048, num_envs=8)
    config = dataclasses.replace(config, num_steps=8, num_minibatches=2, log_points=2, eval_episodes=2)
    result = jax.jit(pqn.make_train(dataclasses.replace(config, eval_max_steps=50)))(jax.random.key(0))
    assert config.obs_type == "rgb" and np.all(np.isfinite(np.asarray(result.eval_returns)))
