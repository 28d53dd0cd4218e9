"""Stable-Baselines3 and CleanRL-style loops run on MaxAtar unchanged."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import maxatar
from maxatar.core import Draws, EnvState
from maxatar.games.cartpole.rules import CartPoleState
from maxatar.sb3 import make_sb3_vec_env

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two cores: torch's thread pool would fight JAX's
    yield
    torch.set_num_threads(threads)


def test_sb3_dqn_trains_on_gymnasium_make():
    from stable_baselines3 import DQN

    env = gymnasium.make("maxatar/Breakout-v0", full_action_space=False)
    model = DQN("MlpPolicy", env, learning_starts=1000, buffer_size=5000, train_freq=8, seed=0, device="cpu")
    model.learn(total_timesteps=2000)
    assert model.num_timesteps >= 2000 and model._n_updates > 0
    action, _ = model.predict(env.reset(seed=0)[0], deterministic=True)
    assert env.action_space.contains(int(action))


def test_sb3_ppo_on_vec_env_adapter():
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecEnv

    venv = make_sb3_vec_env("maxatar/CartPole-v1", num_envs=8, seed=0, max_steps=30)
    assert isinstance(venv, VecEnv)
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=128, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=8 * 64 * 2)
    assert model.num_timesteps == 8 * 64 * 2
    assert len(model.ep_info_buffer) > 0  # ep_rew_mean is logged without VecMonitor: infos carry "episode"
    assert all(info["r"] == info["l"] <= 30 for info in model.ep_info_buffer)  # CartPole pays 1 per step

    # Same-step resets, with the finished episode's last observation in the infos.
    obs = venv.reset()
    seen_done = False
    returns, lengths = np.zeros(8), np.zeros(8, int)
    for _ in range(40):
        venv.step_async(np.ones(8, np.int64))
        obs, reward, dones, infos = venv.step_wait()
        returns, lengths = returns + reward, lengths + 1
        for i in np.flatnonzero(dones):
            assert infos[i]["episode"]["r"] == returns[i] and infos[i]["episode"]["l"] == lengths[i]
        returns[dones], lengths[dones] = 0, 0
        assert obs.shape == (8, 4) and reward.dtype == np.float32 and len(infos) == 8
        assert obs.flags.writeable  # SB3 warns about read-only observations; ours are writable copies
        for done, info, o in zip(dones, infos, obs, strict=True):
            assert done == ("terminal_observation" in info)
            if done:
                seen_done = True
                assert np.abs(o).max() <= 0.05  # already the next episode
                # Pushing right from upright topples the pole well before the 30-step limit.
                assert not info["TimeLimit.truncated"] and abs(info["terminal_observation"][2]) > 0.2
    assert seen_done
    assert venv.get_attr("num_envs") == [8] * 8 and venv.env_is_wrapped(gymnasium.Wrapper) == [False] * 8


ENV, PARAMS = maxatar.make("CartPole-v1")


@jax.jit
def replay_dynamics(obs, actions):
    """What the pure environment says each (obs, action) leads to: a check on stored transitions."""

    def one(o, a):
        state = EnvState(CartPoleState(*o), jnp.int32(0), jnp.int32(0), jnp.bool_(False))
        return ENV.transition(state, a, Draws(jnp.float32(1.0), ()), PARAMS)[0]

    return jax.vmap(one)(obs, actions)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_cleanrl_style_loop_stores_only_real_transitions(mode):
    """A CleanRL-style collection loop: with next-step autoreset the step after an episode ends is not a
    transition; with same-step autoreset the real next observation is `info["final_obs"]`."""
    envs = gymnasium.make_vec("maxatar/CartPole-v1", num_envs=16, autoreset_mode=mode)
    assert envs.metadata["autoreset_mode"] == mode
    obs, _ = envs.reset(seed=1)
    rng = np.random.default_rng(0)
    stored, ended = [], np.zeros(16, bool)
    episodes = 0
    for _ in range(120):
        actions = rng.integers(0, 2, 16)
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        assert next_obs.flags.writeable and rewards.flags.writeable
        real_next_obs = next_obs.copy()
        if mode == AutoresetMode.SAME_STEP:
            finished = infos["_final_obs"]
            real_next_obs[finished] = infos["final_obs"][finished]
            valid = np.ones(16, bool)
        else:
            valid = ~ended
        for i in np.flatnonzero(valid):
            stored.append((obs[i], actions[i], rewards[i], real_next_obs[i], terminations[i]))
        ended = terminations | truncations
        episodes += ended.sum()
        obs = next_obs
    assert episodes >= 16
    o, a, r, n, d = map(np.array, zip(*stored, strict=True))
    np.testing.assert_allclose(np.asarray(replay_dynamics(o, a)), n, rtol=1e-5, atol=1e-6)
    assert (r == 1).all() and d.sum() >= 16
