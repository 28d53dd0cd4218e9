"""Deterministic play (docs/reference-quirks.md, "Deterministic play"): with `sticky_action_prob=0`, Breakout,
SpaceInvaders, CartPole and Doors are deterministic given the reset state and the actions, while Asterix,
Freeway and Seaquest draw on later steps; and one seed replays the same episode in every front end."""

from __future__ import annotations

import gymnasium
import jax
import numpy as np
import pytest

import maxatar
from maxatar.episode import TwinEnv
from maxatar.sb3 import make_sb3_vec_env
from maxatar.tape import tape_row
from maxatar.twin import load_twin

DETERMINISTIC = ["Breakout-v0", "SpaceInvaders-v0", "CartPole-v1", "Doors-v0"]
RANDOM = ["Asterix-v0", "Freeway-v0", "Seaquest-v0"]


def play(env_id: str, step_seed: int, steps: int = 400) -> list:
    """One episode from a fixed reset, stepped with uniforms from `step_seed` (the twins, which equal the JAX
    step bit for bit, tests/test_twins.py): every observation, reward and flag."""
    env, params = maxatar.make(env_id, sticky_action_prob=0.0, max_steps=0)
    twin_env = TwinEnv(env, params, load_twin(env, params))
    reset_rng, step_rng = np.random.default_rng(0), np.random.default_rng(step_seed)
    trace = [twin_env.reset(reset_rng.random(env.num_auto_reset_uniforms).tolist(), fresh=True).tolist()]
    # Freeway's chicken goes up (a crossing redraws the cars); the others act at random, from a fixed sequence.
    actions = [2] * steps if "Freeway" in env_id else np.random.default_rng(1).integers(0, env.num_actions, steps)
    for action in np.asarray(actions).tolist():
        obs, reward, terminated, truncated = twin_env.step(action, step_rng.random(env.num_draws).tolist())
        trace.append((obs.tolist(), reward, terminated))
    return trace


@pytest.mark.parametrize("env_id", DETERMINISTIC + RANDOM)
def test_which_games_are_deterministic_without_sticky_actions(env_id):
    env, _ = maxatar.make(env_id)
    assert (env.num_step_uniforms == 0) == (env_id in DETERMINISTIC)  # the only step variate is the sticky one
    same = [play(env_id, step_seed) == play(env_id, 0) for step_seed in (1, 2, 3)]
    assert all(same) if env_id in DETERMINISTIC else not any(same)


def test_space_invaders_reset_draws_nothing():
    """SpaceInvaders has no reset variate either: with sticky 0 an episode depends on the actions only."""
    env, params = maxatar.make("SpaceInvaders-v0", sticky_action_prob=0.0)
    assert env.num_reset_uniforms == 0
    (obs_a, _), (obs_b, _) = env.reset(jax.random.key(0), params), env.reset(jax.random.key(1), params)
    np.testing.assert_array_equal(obs_a, obs_b)


def test_one_seed_replays_one_episode_in_every_front_end():
    """Call t after `reset(seed=s)` reads row t of the tape of `jax.random.key(s)` (`maxatar.tape`): the single
    env on both backends, sub-environment 0 of a vector env and of the SB3 adapter, and a pure JAX replay of
    the tape all play the same episode (sticky actions on, so the draws matter)."""
    env_id, seed, steps = "maxatar/Asterix-v0", 11, 60
    actions = np.random.default_rng(seed).integers(0, 6, steps)
    runs = {}
    for backend in ("python", "jax"):
        env = gymnasium.make(env_id, backend=backend)
        obs = [env.reset(seed=seed)[0]] + [env.step(int(a))[0] for a in actions]
        runs[f"gymnasium.make {backend}"] = obs
        venv = gymnasium.make_vec(env_id, num_envs=2, backend=backend)
        obs = [venv.reset(seed=seed)[0][0]] + [venv.step(np.array([a, 0]))[0][0] for a in actions]
        runs[f"make_vec {backend}"] = obs
    sb3 = make_sb3_vec_env(env_id, num_envs=2, seed=seed)
    obs = [sb3.reset()[0]]
    for a in actions:
        sb3.step_async(np.array([a, 0]))
        obs.append(sb3.step_wait()[0][0])
    runs["sb3"] = obs

    pure, params = maxatar.make(env_id)
    key, shape = jax.random.key(seed), (pure.num_auto_reset_uniforms,)
    obs, state = pure.reset_from_uniforms(tape_row(key, 0, shape)[pure.num_draws :], params)

    @jax.jit
    def step(state, t, action):
        draws = pure.draws_from_uniforms(tape_row(key, t, shape)[: pure.num_draws], state, params)
        return pure.transition(state, action, draws, params)[:2]

    replay = [obs]
    for t, a in enumerate(actions, start=1):
        obs, state = step(state, np.uint32(t), np.int32(a))
        replay.append(obs)
    assert not bool(state.terminated)  # one episode throughout, so every front end consumed the same rows
    for name, obs in runs.items():
        np.testing.assert_array_equal(np.stack(obs), np.stack(replay), err_msg=name)
