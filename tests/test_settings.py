"""Other papers' MinAtar settings one argument away (`setting=`), in every front end and the agents."""

from __future__ import annotations

import dataclasses

import gymnasium
import pytest

import maxatar
from maxatar import gymnax
from maxatar.registry import MINATAR_GAMES
from maxatar.sb3 import make_sb3_vec_env
from maxatar.settings import SETTINGS
from maxatar_agents.algorithms import pqn
from maxatar_agents.algorithms.config import env_from_config, env_kwargs
from maxatar_agents.run.configs import make_config

# (sticky probability, full action set, time limit) per setting; every setting ramps the difficulty.
EXPECTED = {"minatar": (0.1, True, 0), "gymnax": (0.0, False, 1000), "pgx": (0.1, False, 0)}
FULL = 6
MINIMAL = {"Breakout-v0": 3, "Asterix-v0": 5, "Freeway-v0": 3, "SpaceInvaders-v0": 4, "Seaquest-v0": 6}


def expected(name: str, setting: str) -> tuple:
    sticky, full, cap = EXPECTED[setting]
    cap = 2500 if name == "Freeway-v0" and setting == "gymnax" else cap
    return pytest.approx(sticky), FULL if full else MINIMAL[name], cap, True


def observed(num_actions: int, params) -> tuple:
    return params.sticky_action_prob, num_actions, params.max_steps, params.difficulty_ramping


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("name", MINATAR_GAMES)
def test_pure_make(name, setting):
    env, params = maxatar.make(name, setting=setting)
    assert observed(env.num_actions, params) == expected(name, setting)


def test_default_is_minatar_and_keywords_override():
    assert maxatar.make("Breakout-v0") == maxatar.make("Breakout-v0", setting="minatar")
    env, params = maxatar.make("Breakout-v0", setting="gymnax", max_steps=0, full_action_space=True)
    assert (env.num_actions, params.max_steps, params.sticky_action_prob) == (6, 0, 0.0)


def test_bad_settings():
    with pytest.raises(ValueError, match=r"setting must be one of \('minatar', 'gymnax', 'pgx'\)"):
        maxatar.make("Breakout-v0", setting="ale")
    with pytest.raises(ValueError, match="pgx has no CartPole-v1"):
        maxatar.make("CartPole-v1", setting="pgx")
    # gymnax's CartPole is MaxAtar's (and Gymnasium's)
    assert maxatar.make("CartPole-v1", setting="gymnax") == maxatar.make("CartPole-v1")


@pytest.mark.parametrize("setting", SETTINGS)
def test_gymnasium_make_and_make_vec(setting):
    env = gymnasium.make("maxatar/SpaceInvaders-v0", setting=setting)
    assert observed(env.action_space.n, env.unwrapped.params) == expected("SpaceInvaders-v0", setting)
    venv = gymnasium.make_vec("maxatar/Freeway-v0", num_envs=2, setting=setting)
    assert observed(venv.single_action_space.n, venv.params) == expected("Freeway-v0", setting)


def test_sb3_vec_env():
    venv = make_sb3_vec_env("maxatar/Asterix-v0", num_envs=2, setting="gymnax")
    assert observed(venv.action_space.n, venv.venv.params) == expected("Asterix-v0", "gymnax")


@pytest.mark.parametrize("gymnax_id", list(gymnax.GYMNAX_IDS))
def test_gymnax_facade(gymnax_id):
    by_keywords = gymnax.make(gymnax_id, **gymnax.GYMNAX_SETTINGS[gymnax_id])
    assert gymnax.make(gymnax_id, setting="gymnax") == by_keywords
    if gymnax_id != "CartPole-v1":
        name = gymnax.GYMNAX_IDS[gymnax_id]
        env, params = gymnax.make(gymnax_id, setting="pgx")
        assert observed(env.num_actions, params) == expected(name, "pgx")
        env, params = gymnax.make(gymnax_id, setting="gymnax", use_minimal_action_set=False)
        assert env.num_actions == FULL


@pytest.mark.parametrize("setting", SETTINGS)
def test_agents_env_setting(setting):
    config = make_config(pqn, "maxatar/Breakout-v0", env_setting=setting)
    env, params = env_from_config(config)
    assert observed(env.num_actions, params) == expected("Breakout-v0", setting)
    assert env_kwargs(config)["setting"] == setting  # what a renderer plays the trained policy in
    # the config's own sticky choice still wins over the setting's
    env, params = env_from_config(dataclasses.replace(config, sticky_action_prob=0.25))
    assert params.sticky_action_prob == pytest.approx(0.25)
