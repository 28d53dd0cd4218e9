"""A new game is one folder and one registry line: Catch (`tests/toy_game/`, a game that exists only in the tests)
is registered by the line a contributor adds to `maxatar.registry.SPECS`, and every generic layer picks it up
with no other edit: `maxatar.make`, `gymnasium.make` and `make_vec` on both backends, pixels and the renderers,
the gymnax facade, the agents' command line, the docs page generator and the quick performance check.
docs/architecture.md's "Adding a game" checklist is what this test needs.

The layers run in one fresh interpreter (`python -m tests.test_new_game`), so that the registry line comes first,
as it does in a checkout that has it, and nothing of it leaks into the other tests."""

from __future__ import annotations

import json
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


# A user's own package: the toy game without its Python twin, registered by the package's __init__ in one call.
USER_PACKAGE = {
    "__init__.py": """import maxatar

maxatar.register("my_games/Catch-v0", "my_games.catch:Catch")
""",
    "catch.py": """from tests.toy_game import Catch as ToyCatch


class Catch(ToyCatch):
    twin = None  # no plain-Python twin: the JAX engine plays every backend
""",
}
# Run in a fresh interpreter that knows nothing of the game until Gymnasium's `my_games:` prefix imports the package.
USER_CHECK = """
import gymnasium, numpy as np, pytest

env = gymnasium.make("my_games:my_games/Catch-v0")
obs, _ = env.reset(seed=0)
assert obs.shape == (5, 5, 2) and env.step(1)[0].shape == (5, 5, 2)
vec = gymnasium.make_vec("my_games/Catch-v0", num_envs=3, vectorization_mode="vector_entry_point")
vec.reset(seed=0)
assert vec.step(np.array([0, 1, 2]))[0].shape == (3, 5, 5, 2)
with pytest.raises(ValueError, match="my_games/Catch-v0 has no Python twin; use backend='jax'"):
    gymnasium.make("my_games/Catch-v0", backend="python").reset(seed=0)
print("gymnasium.make, make_vec: ok")
"""


def test_a_users_package_registers_its_game_in_one_call(tmp_path):
    """`maxatar.register` in a user's package: `gymnasium.make` with the package's module prefix, `make_vec`,
    the JAX engine where the game has no twin (the `python` backend refused, `auto` plays), and the agents'
    command line with the same id."""
    package = tmp_path / "my_games"
    package.mkdir()
    for name, text in USER_PACKAGE.items():
        (package / name).write_text(text)
    env = {**os.environ, "MAXATAR_CACHE_DIR": "off", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    commands = {
        "api": [sys.executable, "-c", USER_CHECK],
        "agents": [sys.executable, "-m", "maxatar_agents.pqn", "--env", "my_games:my_games/Catch-v0"]
        + ["--total-steps", "2048", "--out", str(tmp_path / "run"), "--no-progress"],
    }
    for name, argv in commands.items():
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (name, done.stdout + done.stderr[-3000:])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["env_id"] == "my_games:my_games/Catch-v0" and summary["frames_per_seed"] >= 2048


if __name__ == "__main__":
    check_every_layer(Path(sys.argv[1]))
