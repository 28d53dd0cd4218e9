"""The flat observation ids (`maxatar/<Game>-flat-v0`, ALE's precedent of ids for observation variants): a
float32 vector, the game's own observation flattened, on every front end and backend, so that CleanRL's MLP
scripts (`dqn.py`, `dqn_jax.py`, `ppo.py`), which take only an id, run unchanged.

CleanRL's scripts themselves run where a checkout is given: `MAXATAR_CLEANRL=/path/to/cleanrl` (a clone of
github.com/vwxyzjn/cleanrl, with its requirements: tyro, tensorboard, flax, optax); otherwise that test skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import maxatar
from maxatar.pixels import FlatObservation, flat_observation
from maxatar.registry import MINATAR_GAMES

REPO = Path(__file__).resolve().parents[1]
FLAT_IDS = [f"maxatar/{name.replace('-v0', '-flat-v0')}" for name in MINATAR_GAMES]


def test_every_minatar_game_has_a_flat_id():
    assert FLAT_IDS == [i for i in gymnasium.registry if i.startswith("maxatar/") and "-flat-" in i]
    assert not set(FLAT_IDS) & set(maxatar.registered_ids())  # the plain ids stay the games' list
    assert set(FLAT_IDS) <= set(maxatar.registered_ids(variants=True))


@pytest.mark.parametrize("flat_id", FLAT_IDS)
def test_flat_id_passes_the_checkers_and_is_the_flattened_plain_observation(flat_id):
    plain_id = flat_id.replace("-flat-", "-")
    env, plain = gymnasium.make(flat_id), gymnasium.make(plain_id)
    check_env(env.unwrapped)
    shape = plain.observation_space.shape
    assert env.observation_space == gymnasium.spaces.Box(0.0, 1.0, (int(np.prod(shape)),), np.float32)
    for kind in ("python", "jax"):  # the Python twins and the jitted step give the same vectors
        env, plain = gymnasium.make(flat_id, backend=kind), gymnasium.make(plain_id, backend=kind)
        obs, _ = env.reset(seed=5)
        expected, _ = plain.reset(seed=5)
        assert obs.dtype == np.float32 and env.observation_space.contains(obs)
        np.testing.assert_array_equal(obs, expected.reshape(-1).astype(np.float32))
        for t in range(30):
            step, plain_step = env.step(t % env.action_space.n), plain.step(t % env.action_space.n)
            np.testing.assert_array_equal(step[0], plain_step[0].reshape(-1).astype(np.float32))
            assert step[1:4] == plain_step[1:4]


@pytest.mark.parametrize("backend", ["python", "jax"])
def test_flat_id_through_make_vec(backend):
    flat_id = "maxatar/Breakout-flat-v0"
    envs = gymnasium.make_vec(flat_id, num_envs=4, backend=backend)
    plain = gymnasium.make_vec("maxatar/Breakout-v0", num_envs=4, backend=backend)
    assert envs.single_observation_space == gymnasium.make(flat_id).observation_space
    obs, _ = envs.reset(seed=2)
    expected, _ = plain.reset(seed=2)
    np.testing.assert_array_equal(obs, expected.reshape(4, -1).astype(np.float32))
    for t in range(20):
        actions = np.full(4, t % 3)
        step, plain_step = envs.step(actions), plain.step(actions)
        assert step[0].dtype == np.float32 and envs.observation_space.contains(step[0])
        np.testing.assert_array_equal(step[0], plain_step[0].reshape(4, -1).astype(np.float32))
        np.testing.assert_array_equal(step[1], plain_step[1])


def test_flat_is_one_obs_type_of_maxatar_make():
    """The ids fix `obs_type="flat"`; the same variant is a keyword of every other id and front end."""
    env, params = maxatar.make("Breakout-flat-v0")
    assert isinstance(env, FlatObservation) and env == maxatar.make("Breakout-v0", obs_type="flat")[0]
    obs, _ = env.reset(jax.random.PRNGKey(0), params)
    plain, _ = env.env.reset(jax.random.PRNGKey(0), params)
    np.testing.assert_array_equal(obs, flat_observation(plain))
    with pytest.raises(ValueError, match="fixes obs_type='flat'"):
        maxatar.make("Breakout-flat-v0", obs_type="rgb")
    doors = gymnasium.make("maxatar/Doors-v0", obs_type="flat", size=5).observation_space
    assert doors == gymnasium.spaces.Box(0.0, 3.0, (25,), np.float32)
    frame = gymnasium.make("maxatar/Breakout-flat-v0", render_mode="rgb_array")
    frame.reset(seed=0)
    drawn = gymnasium.make("maxatar/Breakout-v0", render_mode="rgb_array")
    drawn.reset(seed=0)
    np.testing.assert_array_equal(frame.render(), drawn.render())  # drawn as the game it wraps


CLEANRL = os.environ.get("MAXATAR_CLEANRL")
SCRIPTS = {
    "dqn.py": ["--total-timesteps", "400", "--learning-starts", "200"],
    "dqn_jax.py": ["--total-timesteps", "400", "--learning-starts", "200"],
    "ppo.py": ["--total-timesteps", "256", "--num-envs", "2", "--num-steps", "128"],
}


@pytest.mark.skipif(not CLEANRL, reason="set MAXATAR_CLEANRL to a checkout of github.com/vwxyzjn/cleanrl")
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_cleanrl_scripts_run_unchanged_on_the_flat_id(script, tmp_path):
    """`python cleanrl/<script> --env-id maxatar:maxatar/Breakout-flat-v0`, as CleanRL's docs run any id."""
    path = Path(CLEANRL) / "cleanrl" / script
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), CLEANRL]), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, str(path), "--env-id", "maxatar:maxatar/Breakout-flat-v0", "--seed", "1"]
    done = subprocess.run([*argv, *SCRIPTS[script]], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SPS:" in done.stdout
