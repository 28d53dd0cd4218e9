"""The memory guards (`maxatar.memory`): a vector environment or an agents' run too large for the machine is refused
before anything is allocated, naming the parameter and the bytes, and the estimates they are refused by are the
measured peaks of small runs (the slow tests, each in a fresh interpreter: the growth of the peak resident memory
between two sizes, so that compilation and imports cancel out)."""

from __future__ import annotations

import resource
import subprocess
import sys
import types

import gymnasium
import jax.numpy as jnp
import pytest

import maxatar
from maxatar import memory
from maxatar.checks import InputError
from maxatar.gym import vector
from maxatar.gym.backend import pick_twin
from maxatar.gym.functional import observation_space
from maxatar_agents.run import cli

GIB = 2**30
TOO_MANY = r"num_envs=10000000 of maxatar/Breakout-v0 .* needs about \d\d\.\d GiB .* more than the 8\.0 GiB"


def estimate(env_id: str, num_envs: int, backend: str, **kwargs) -> int:
    """`vector.held_bytes` of a vector environment, built from shapes only."""
    env, params = maxatar.make(env_id, **kwargs)
    spec = vector._VectorSpec(env, num_envs, vector.AutoresetMode.NEXT_STEP)
    twin = pick_twin(backend, "numpy", env_id, env, params, num_envs)
    return vector.held_bytes(spec, params, observation_space(env), "numpy", twin)


def test_a_vector_env_too_large_for_the_machine_is_refused_before_anything_is_allocated(monkeypatch):
    """The issue's `make_vec("maxatar/Breakout-v0", num_envs=10**7)`, which grew until the kernel killed it, on
    a machine of 8 GiB: refused with one line naming num_envs and the bytes, in a fraction of the memory."""
    monkeypatch.setattr(memory, "host_memory", lambda: 8 * GIB)
    monkeypatch.setattr(memory, "device_memory", lambda device: 8 * GIB)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for backend in ("auto", "jax", "python"):
        with pytest.raises(InputError, match=TOO_MANY):
            gymnasium.make_vec("maxatar/Breakout-v0", num_envs=10**7, backend=backend)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 2**10  # KiB: nothing batched
    gymnasium.make_vec("maxatar/Breakout-v0", num_envs=64).close()  # what fits is made as before


def test_the_estimates_grow_with_what_is_held():
    """Linear in num_envs; numpy output holds host copies that JAX output does not; a pixel observation more."""
    small, large = estimate("maxatar/Breakout-v0", 1000, "jax"), estimate("maxatar/Breakout-v0", 2000, "jax")
    assert large == 2 * small
    env, params = maxatar.make("Breakout-v0")
    spec = vector._VectorSpec(env, 1000, vector.AutoresetMode.NEXT_STEP)
    space = observation_space(env)
    assert vector.held_bytes(spec, params, space, "jax", None) < vector.held_bytes(spec, params, space, "numpy", None)
    assert estimate("maxatar/Breakout-v0", 1000, "jax", obs_type="rgb") > 10 * small


# The peak resident memory of a fresh interpreter from here on: Linux's high-water mark, reset once the imports
# are done (their transient peak, which a test session's environment can raise, would hide the growth).
PEAK = """
import pathlib
pathlib.Path("/proc/self/clear_refs").write_text("5")
def peak():
    status = pathlib.Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024
"""

MEASURE = (
    PEAK
    + """
import sys
import gymnasium, numpy as np, maxatar
env_id, backend, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = gymnasium.make_vec(env_id, n, backend=backend)
env.reset(seed=0)
for _ in range(3):
    env.step(np.zeros(n, np.int32))
print(peak())
"""
)


def measured(code: str, *argv) -> str:
    """The last line `code` prints, run in a fresh interpreter with `argv`."""
    done = subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


# (id, backend, the two sizes, the bounds of the estimate's growth over the measured peak's; measured: about 1.0
# on the JAX backend, 1.0 (Doors, which sets the factor) to 2.1 (Space Invaders) on the Python backend)
PYTHON_GAMES = ["Breakout", "Asterix", "Freeway", "Seaquest", "SpaceInvaders", "CartPole-v1", "Doors"]
MEASURED = [("maxatar/Breakout-v0", "jax", (10_000, 110_000), (0.85, 1.5))] + [
    (f"maxatar/{game}" if game.endswith("-v1") else f"maxatar/{game}-v0", "python", (2_000, 12_000), (1.0, 2.5))
    for game in PYTHON_GAMES
]


@pytest.mark.slow
@pytest.mark.parametrize("env_id, backend, sizes, within", MEASURED)
def test_a_vector_envs_estimate_is_its_measured_peak(env_id, backend, sizes, within):
    """The estimate's growth between two sizes over the measured peak's: near 1 on the JAX backend (shapes
    are what it holds); at least 1 on the Python backend, whose twins' objects are bounded by a measured factor."""
    small, large = sizes
    real = int(measured(MEASURE, env_id, backend, large)) - int(measured(MEASURE, env_id, backend, small))
    ratio = (estimate(env_id, large, backend) - estimate(env_id, small, backend)) / real
    assert within[0] <= ratio <= within[1], ratio


# --- the agents' runs --------------------------------------------------------------------------------------


def test_a_run_whose_compiled_interval_does_not_fit_is_refused_before_its_first_frame(tmp_path, monkeypatch, capsys):
    """XLA's count of the compiled interval (its rollout, evaluations and temporaries, not only the training
    state) is checked before the state is allocated; the refused run leaves no --out."""

    class Interval:
        def memory_analysis(self):
            sizes = dict.fromkeys(["argument", "output", "alias"], 0)
            return types.SimpleNamespace(
                **{f"{k}_size_in_bytes": v for k, v in sizes.items()}, temp_size_in_bytes=2**50
            )

    template = {"params": jnp.zeros(1000, jnp.float32)}
    monkeypatch.setattr(cli, "compile_plan", lambda *args: {"interval": Interval(), "template": template})
    monkeypatch.setattr(cli, "initial_progress", lambda *args: pytest.fail("the state was allocated"))
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        cli.main("ppo", ["--env", "CartPole-v1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert "error: a logging interval of 1 run(s) needs about 1,048,576.0 GiB (1,125,899,906,846,624 bytes)" in err
    assert "fewer --seeds" in err and not out.exists()


RUN = (
    PEAK
    + """
import sys, tempfile
from maxatar import memory
from maxatar_agents.run import cli
held = []
check = cli.check_run_memory
def spy(parts, num_runs, mesh):
    held.append(memory.compiled_bytes(parts["interval"]) + memory.nbytes(parts["template"]))
    return check(parts, num_runs, mesh)
cli.check_run_memory = spy
with tempfile.TemporaryDirectory() as out:
    cli.run("ppo", ["--env", "CartPole-v1", "--seeds", sys.argv[1], "--total-steps", "4096", "--eval-episodes", "1",
                    "--out", out + "/run", "--no-progress"])
print(held[0], peak())
"""
)


@pytest.mark.slow
def test_a_runs_estimate_is_its_measured_peak():
    """PPO on CartPole at 128 and 1024 seeds (the issue's 10,000 seeds peaked at 9.1 GB): the estimate's growth
    is the measured peak's (1.07 when measured at 256 and 2048), where the training state alone is a sixth of it."""
    (small, small_peak), (large, large_peak) = (map(int, measured(RUN, seeds).split()) for seeds in (128, 1024))
    ratio = (large - small) / (large_peak - small_peak)
    assert 0.85 <= ratio <= 1.5, ratio
