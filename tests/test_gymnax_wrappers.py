"""gymnax 1.0.1's own wrappers and PureJaxRL's wrapper patterns on `maxatar.gymnax`, against the real gymnax.

One jitted program per game (Breakout-MinAtar and CartPole-v1; 8 environments, 48 steps, vmap inside `lax.scan`,
time limits below 48 steps so episodes end both ways) runs the pure wrappers on the facade with the same keys:
gymnax's `LogWrapper` over its `FlattenObservationWrapper` (as PureJaxRL stacks them), `StickyActionWrapper`,
`LegacyStepAPIWrapper` and `GymnaxToDmEnvWrapper`, and PureJaxRL's five-value `LogWrapper` over its
`FlattenObservationWrapper` on the `legacy_step_api` facade (written below from PureJaxRL's
`purejaxrl/wrappers.py`, which cannot be imported without brax and navix). The Gymnasium converters run eagerly;
the other games get the cheap checks (spaces, params). Skipped only where gymnax is not installed: the README's
test command and `.ci/run` install gymnax 1.0.1.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

gymnax_lib = pytest.importorskip(
    "gymnax", reason="gymnax is not installed (the README's test command installs gymnax==1.0.1 --no-deps)"
)

from flax import struct  # noqa: E402  (gymnax's own dependency, as PureJaxRL's wrappers use it)
from gymnax.environments import spaces  # noqa: E402
from gymnax.wrappers import (  # noqa: E402
    FlattenObservationWrapper,
    GymnaxToDmEnvWrapper,
    GymnaxToGymWrapper,
    GymnaxToVectorGymWrapper,
    LegacyStepAPIWrapper,
    LogWrapper,
    StickyActionWrapper,
)

from maxatar import gymnax  # noqa: E402

N, T = 8, 48
LIMITS = {"Breakout-MinAtar": 12, "CartPole-v1": 24}
FACADES = {env_id: gymnax.make(env_id, max_steps_in_episode=limit) for env_id, limit in LIMITS.items()}
LEGACY = {env_id: gymnax.make(env_id, legacy_step_api=True)[0] for env_id in LIMITS}


# --- PureJaxRL's wrappers (gymnax 0.0.x's five-value API), as purejaxrl/wrappers.py writes them -------------


class PureJaxRLWrapper:
    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)


class PureJaxRLFlatten(PureJaxRLWrapper):
    def observation_space(self, params):
        space = self._env.observation_space(params)
        assert isinstance(space, spaces.Box), "Only Box spaces are supported for now."
        return spaces.Box(low=space.low, high=space.high, shape=(np.prod(space.shape),), dtype=space.dtype)

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key, params=None):
        obs, state = self._env.reset(key, params)
        return jnp.reshape(obs, (-1,)), state

    @partial(jax.jit, static_argnums=(0,))
    def step(self, key, state, action, params=None):
        obs, state, reward, done, info = self._env.step(key, state, action, params)
        return jnp.reshape(obs, (-1,)), state, reward, done, info


@struct.dataclass
class PureJaxRLLogState:
    env_state: object
    episode_returns: float
    episode_lengths: int
    returned_episode_returns: float
    returned_episode_lengths: int
    timestep: int


class PureJaxRLLog(PureJaxRLWrapper):
    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key, params=None):
        obs, env_state = self._env.reset(key, params)
        return obs, PureJaxRLLogState(env_state, 0, 0, 0, 0, 0)

    @partial(jax.jit, static_argnums=(0,))
    def step(self, key, state, action, params=None):
        obs, env_state, reward, done, info = self._env.step(key, state.env_state, action, params)
        episode_return, episode_length = state.episode_returns + reward, state.episode_lengths + 1
        state = PureJaxRLLogState(
            env_state=env_state,
            episode_returns=episode_return * (1 - done),
            episode_lengths=episode_length * (1 - done),
            returned_episode_returns=state.returned_episode_returns * (1 - done) + episode_return * done,
            returned_episode_lengths=state.returned_episode_lengths * (1 - done) + episode_length * done,
            timestep=state.timestep + 1,
        )
        info["returned_episode_returns"] = state.returned_episode_returns
        info["returned_episode_lengths"] = state.returned_episode_lengths
        info["timestep"] = state.timestep
        info["returned_episode"] = done
        return obs, state, reward, done, info


# --- the rollouts ------------------------------------------------------------------------------------------


def rollout(env, params, key):
    """PureJaxRL's rollout shape with `env`'s own step API: (observations, states, actions, step outputs)."""
    key, k_reset = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, N), params)

    def body(state, key):
        k_act, k_step = jax.random.split(key)
        action = jax.vmap(env.action_space(params).sample)(jax.random.split(k_act, N))
        out = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(k_step, N), state, action, params)
        return out[1], (out[0], out[1], action, out[2:])

    return jax.lax.scan(body, state, jax.random.split(key, T))[1]


def dm_rollout(env, params, key):
    """The same, through gymnax's dm_env-style wrapper (`TimeStep`s)."""
    key, k_reset = jax.random.split(key)
    timestep = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, N), params)

    def body(timestep, key):
        k_act, k_step = jax.random.split(key)
        action = jax.vmap(env.action_space(params).sample)(jax.random.split(k_act, N))
        timestep = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(k_step, N), timestep, action, params)
        return timestep, timestep

    return jax.lax.scan(body, timestep, jax.random.split(key, T))[1]


@partial(jax.jit, static_argnums=0)
def run_wrappers(env_id, params, key):
    env, legacy = FACADES[env_id][0], LEGACY[env_id]
    return {
        "log": rollout(LogWrapper(FlattenObservationWrapper(env)), params, key),
        "sticky": rollout(StickyActionWrapper(env, sticky_action_prob=0.5), params, key),
        "legacy": rollout(LegacyStepAPIWrapper(env), params, key),
        "dm": dm_rollout(GymnaxToDmEnvWrapper(env), params, key),
        "purejaxrl": rollout(PureJaxRLLog(PureJaxRLFlatten(legacy)), params, key),
    }


@pytest.fixture(scope="module", params=list(LIMITS))
def game(request):
    env_id = request.param
    return env_id, jax.device_get(run_wrappers(env_id, FACADES[env_id][1], jax.random.key(0)))


def episodes(reward, done):
    """(return, length) of the episode each step ends, computed from the reward stream, per environment."""
    returns, lengths = np.zeros_like(reward), np.zeros(reward.shape, np.int32)
    running, length = np.zeros(reward.shape[1], np.float32), np.zeros(reward.shape[1], np.int32)
    for t in range(reward.shape[0]):
        running, length = running + reward[t], length + 1
        returns[t], lengths[t] = running, length
        running, length = np.where(done[t], 0.0, running), np.where(done[t], 0, length)
    return returns, lengths


def check_returned_episodes(reward, done, info):
    """The statistics mean what they mean on gymnax: each finished episode's rewards and steps."""
    assert done.any() and not done.all()
    returns, lengths = episodes(reward, done)
    np.testing.assert_array_equal(info["returned_episode"], done)
    np.testing.assert_allclose(info["returned_episode_returns"][done], returns[done])
    np.testing.assert_array_equal(info["returned_episode_lengths"][done], lengths[done])


def test_log_and_flatten_wrappers(game):
    """gymnax's `LogWrapper` over its `FlattenObservationWrapper`: flat observations and final observations,
    the returns and lengths of the finished episodes, valid from the first one on."""
    env_id, out = game
    obs, _, _, (reward, term, trunc, info) = out["log"]
    env, params = FACADES[env_id]
    size = int(np.prod(env.observation_space(params).shape))
    assert obs.shape == info["final_observation"].shape == (T, N, size)
    assert FlattenObservationWrapper(env).observation_space(params).shape == (size,)
    done = term | trunc
    assert (trunc & ~term).any() and term.any()
    check_returned_episodes(reward, done, info)
    np.testing.assert_array_equal(info["returned_episode_valid"], np.logical_or.accumulate(done, axis=0))
    np.testing.assert_array_equal(info["discount"], 1.0 - term)


def test_purejaxrl_wrappers_on_the_legacy_api(game):
    """PureJaxRL's `LogWrapper` and `FlattenObservationWrapper` (five values, `done`) on `legacy_step_api`: the
    same steps as gymnax 1.x's API under the same keys, and the same episode statistics."""
    env_id, out = game
    obs, _, action, (reward, done, info) = out["purejaxrl"]
    new_obs, _, new_action, (new_reward, term, trunc, _) = out["log"]
    for a, b in ((obs, new_obs), (action, new_action), (reward, new_reward), (done, term | trunc)):
        np.testing.assert_array_equal(a, b)
    check_returned_episodes(reward, done, info)
    np.testing.assert_array_equal(info["timestep"][-1], T)


def test_sticky_action_wrapper(game):
    """gymnax's `StickyActionWrapper`: each executed action is the one asked for or the previous one, both
    happen, and the facade under it steps as before."""
    _, out = game
    _, state, action, (_, term, trunc, info) = out["sticky"]
    executed = state.last_action
    previous = np.concatenate([np.zeros((1, N), executed.dtype), executed[:-1]])
    assert ((executed == action) | (executed == previous)).all()
    assert (executed != action).any() and (executed == action).any()
    np.testing.assert_array_equal(info["terminated"], term)
    np.testing.assert_array_equal(info["truncated"], trunc)


def test_legacy_and_dm_env_wrappers(game):
    """gymnax's `LegacyStepAPIWrapper` (five values) and `GymnaxToDmEnvWrapper` (discount 0 only at a real
    end, the final observation kept) report the steps gymnax 1.x's API does."""
    _, out = game
    _, _, _, (reward, term, trunc, info) = out["log"]
    _, _, _, (legacy_reward, done, legacy_info) = out["legacy"]
    np.testing.assert_array_equal(legacy_reward, reward)
    np.testing.assert_array_equal(done, term | trunc)
    np.testing.assert_array_equal(done, legacy_info["terminated"] | legacy_info["truncated"])
    timestep = out["dm"]
    np.testing.assert_array_equal(timestep.reward, reward)
    np.testing.assert_array_equal(timestep.discount, 1.0 - term)
    np.testing.assert_array_equal(timestep.final_observation.reshape(T, N, -1), info["final_observation"])


def test_gymnasium_converters():
    """`GymnaxToGymWrapper` (which deep-copies the env) and `GymnaxToVectorGymWrapper`, eagerly on CartPole."""
    import gymnasium

    env, params = FACADES["CartPole-v1"]
    gym_env = GymnaxToGymWrapper(env, params, seed=0)
    assert gym_env.observation_space.shape == (4,) and gym_env.action_space == gymnasium.spaces.Discrete(2)
    obs, _ = gym_env.reset(seed=1)
    for t in range(LIMITS["CartPole-v1"]):
        obs, reward, terminated, truncated, info = gym_env.step(t % 2)
        assert obs.shape == (4,) and reward == 1.0
        if terminated or truncated:
            break
    assert (terminated or truncated) and info["final_observation"].shape == (4,)

    vector = GymnaxToVectorGymWrapper(env, num_envs=4, params=params, seed=0)
    obs, _ = vector.reset(seed=2)
    obs, reward, terminated, truncated, _ = vector.step(np.array([0, 1, 0, 1]))
    assert obs.shape == (4, 4) and reward.shape == (4,) and vector.single_action_space.n == 2


@pytest.mark.parametrize("env_id", list(gymnax.GYMNAX_IDS))
def test_every_game_passes_gymnax_checks(env_id):
    """Every gymnax id on the facade: its spaces are gymnax's classes, convert to Gymnasium's, flatten, and its
    params take gymnax's field names (no compilation)."""
    env, params = gymnax.make(env_id, **gymnax.GYMNAX_SETTINGS[env_id])
    theirs, their_params = gymnax_lib.make(env_id)
    space, action_space = env.observation_space(params), env.action_space(params)
    assert isinstance(space, spaces.Box) and isinstance(action_space, spaces.Discrete)
    assert space.shape == theirs.observation_space(their_params).shape
    assert action_space.n == theirs.action_space(their_params).n
    assert spaces.gymnax_space_to_gym_space(space).shape == space.shape
    assert spaces.gymnax_space_to_gym_space(action_space).n == action_space.n
    assert FlattenObservationWrapper(env).observation_space(params).shape == (np.prod(space.shape),)
    assert params.max_steps_in_episode == their_params.max_steps_in_episode
    assert params.replace(max_steps_in_episode=7).max_steps == 7
