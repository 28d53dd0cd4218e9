"""A new game is one folder and one registry line: Catch (`tests/toy_game/`, a game that exists only in the tests)
is registered by the line a contributor adds to `maxatar.registry.SPECS`, and every generic layer picks it up
with no other edit: `maxatar.make`, `gymnasium.make` and `make_vec` on both backends, pixels and the renderers,
the gymnax facade, the agents' command line, the docs page generator and the quick performance check.
docs/architecture.md's "Adding a game" checklist is what this test needs.

The layers run in one fresh interpreter (`python -m tests.test_new_game`), so that the registry line comes first,
as it does in a checkout that has it, and nothing of it leaks into the other tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

ROOT = Path(__file__).resolve().parent.parent
ENV_ID = "maxatar/Catch-v0"


def register() -> None:
    from maxatar.registry import SPECS, Spec

    SPECS["Catch-v0"] = Spec("tests.toy_game:Catch", {})  # the one registry line a contributor adds


def check_every_layer(out: Path) -> None:
    register()
    import gymnasium
    import jax
    import numpy as np
    from gymnasium.utils.env_checker import check_env

    import maxatar
    from maxatar import gymnax
    from maxatar.gym import register_envs

    register_envs()  # what `import maxatar` does for the registry it finds
    assert ENV_ID in maxatar.registered_ids()

    # The pure API, under jit and scan, with same-step auto-reset and episode statistics.
    env, params = maxatar.make(ENV_ID)
    stats = maxatar.EpisodeStatistics(maxatar.AutoReset(env))

    def play(key):
        obs, state = stats.reset(key, params)

        def body(state, key):
            obs, state, reward, terminated, truncated, info = stats.step(key, state, jax.random.randint(key, (), 0, 3))
            return state, (reward, info["returned_episode"], info["returned_episode_returns"])

        return jax.lax.scan(body, state, jax.random.split(key, 40))[1]

    rewards, done, returns = jax.jit(play)(jax.random.key(0))
    assert int(done.sum()) == 10 and set(np.unique(rewards).tolist()) <= {-1.0, 0.0, 1.0}  # a ball every 4 steps
    np.testing.assert_array_equal(returns[done], rewards[done])
    print("pure API: ok")

    # Gymnasium on both backends (the Python twin and one jitted call), checked and played alike.
    runs = {}
    for backend in ("python", "jax"):
        gym_env = gymnasium.make(ENV_ID, backend=backend)
        check_env(gym_env.unwrapped, skip_render_check=True)
        obs, _ = gym_env.reset(seed=3)
        runs[backend] = [obs] + [gym_env.step(t % 3)[:3] for t in range(12)]
        vec = gymnasium.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", backend=backend)
        vec.reset(seed=1)
        assert vec.step(np.array([0, 1, 2]))[0].shape == (3, 5, 5, 2)
    for a, b in zip(runs["python"], runs["jax"], strict=True):
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,), strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    print("gymnasium.make, make_vec, both backends: ok")

    # Pixels and the renderers.
    from renderers.cli import main as renderers_main
    from renderers.frames import frame

    pixel_env, pixel_params = maxatar.make(ENV_ID, obs_type="rgb")
    obs, state = pixel_env.reset(jax.random.key(1), pixel_params)
    assert obs.dtype == np.uint8 and obs.ndim == 3 and obs.max() > 0
    assert frame(env, env.reset(jax.random.key(1), params)[1], score=0.0).shape[-1] == 3
    renderers_main(["gif", "--env", ENV_ID, "--steps", "8", "--out", str(out / "catch.gif")])
    assert (out / "catch.gif").stat().st_size > 0
    print("pixels, renderers: ok")

    # The gymnax facade, under its gymnax name.
    gymnax_env, gymnax_params = gymnax.make(type(env).gymnax_name)
    obs, state = gymnax_env.reset(jax.random.key(2), gymnax_params)
    assert gymnax_env.step(jax.random.key(3), state, 1, gymnax_params)[0].shape == (5, 5, 2)
    print("gymnax facade: ok")

    # The agents' command line: PPO trains and evaluates on it.
    from maxatar_agents.run.cli import run

    summary = run("ppo", ["--env", ENV_ID, "--total-steps", "2048", "--out", str(out / "run"), "--no-progress"])
    assert summary["env_id"] == ENV_ID and (out / "run" / "metrics.csv").exists()
    print("agents' CLI: ok")

    # The docs page generator and the quick performance check.
    sys.path.insert(0, str(ROOT / "docs"))
    import make_pages

    name, text = make_pages.page(ENV_ID)
    assert name == "catch" and "paddle" in text and "Catch" in text
    make_pages.channel_picture(ENV_ID, out / "catch_channels.png")
    from benchmarks.check import measure

    rows = measure(ENV_ID, n=8, steps=4, repeats=1, min_time=0.0)
    assert rows and all(row["steps_per_s"] > 0 for row in rows)
    print("docs page generator, benchmarks.check: ok")


def test_a_new_game_is_one_folder_and_one_registry_line(tmp_path):
    env = {**os.environ, "MAXATAR_CACHE_DIR": "off", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.test_new_game", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": ok") == 6, done.stdout


if __name__ == "__main__":
    check_every_layer(Path(sys.argv[1]))
