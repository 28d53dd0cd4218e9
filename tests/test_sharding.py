"""Several devices: sharded stepping equals unsharded stepping, and an agent on 2 devices equals it on 1.

JAX fixes its device count when it starts, so each scenario below runs in a fresh Python process with
`XLA_FLAGS=--xla_force_host_platform_device_count=K` (K virtual CPU devices); one process runs several
checks to share its start-up and compilations. The scenarios are plain functions of this module; the tests
launch them with `python -c "import tests.test_sharding as t; t.<scenario>()"`.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

ROOT = Path(__file__).resolve().parent.parent
STEPS = 9  # CartPole with max_steps=4: several auto-resets within the run


def run_scenario(name: str, devices: int, timeout: float = 600, extra_env: dict | None = None):
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", **(extra_env or {})}
    env.pop("JAX_PLATFORMS", None)
    code = f"import tests.test_sharding as t; t.{name}()"
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen, timeout: float = 600) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"scenario failed (exit {process.returncode}):\n{out}\n{err[-6000:]}"
    return out


# --- helpers used inside the scenario processes ---


def assert_trees_equal(a, b) -> None:
    import jax

    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def assert_refused(call, error_type: type, message: str, what: str) -> None:
    """`call()` raises `error_type` with `message` in its text (these scenario processes run without pytest)."""
    try:
        call()
    except error_type as error:
        assert message in str(error), (what, error)
    else:
        raise AssertionError(f"{what} was accepted")


def assert_split(x, count: int) -> None:
    """`x` is split along its leading axis over `count` devices."""
    assert len(x.sharding.device_set) == count, x.sharding
    assert x.sharding.spec[0] is not None, x.sharding
    assert {shard.data.shape[0] for shard in x.addressable_shards} == {x.shape[0] // count}


def rollout_pure(env, params, mesh, n: int):
    """sharding.reset/step for STEPS steps; the per-environment keys and actions are the same whatever `mesh`."""
    import jax

    from maxatar import sharding

    keys = jax.random.split(jax.random.key(7), (STEPS + 1, n))
    actions = jax.random.randint(jax.random.key(8), (STEPS, n), 0, env.num_actions)
    place = (lambda x: x) if mesh is None else (lambda x: sharding.shard_batch(x, mesh))
    params = params if mesh is None else sharding.replicate(params, mesh)
    obs, state = sharding.reset(env, place(keys[0]), params)
    trace = [obs]
    for t in range(STEPS):
        out = sharding.step(env, place(keys[t + 1]), state, place(actions[t]), params)
        obs, state = out[0], out[1]
        trace.append(out)
    return trace, state


def rollout_gym(env_id: str, n: int, devices, mode: str, output: str = "numpy"):
    import gymnasium

    import maxatar  # noqa: F401  (registers the ids)

    # The JAX backend on one device too: sharding splits its jitted step (the Python twins step one by one).
    venv = gymnasium.make_vec(
        env_id, num_envs=n, autoreset_mode=mode, devices=devices, output=output, max_steps=4, backend="jax"
    )
    rng = np.random.default_rng(0)
    obs, _ = venv.reset(seed=3)
    trace = [obs]
    for _ in range(STEPS):
        out = venv.step(rng.integers(0, venv.single_action_space.n, n))
        trace.append(out)
        done = np.asarray(out[2]) | np.asarray(out[3])
        if mode == "disabled" and done.any():  # reset just the finished ones
            trace.append(venv.reset(options={"reset_mask": done})[0])
    return venv, trace


# --- scenarios (run in a subprocess with several devices) ---


def environments_on_two_devices() -> None:
    import jax

    import maxatar
    from maxatar import sharding

    assert jax.device_count() == 2, jax.devices()
    mesh = sharding.make_mesh("all")
    assert mesh.devices.size == 2 and mesh.axis_names == (sharding.AXIS,)

    # The pure batched API: sharded results equal unsharded ones, and stay split over both devices.
    for env_id in ("CartPole-v1", "Breakout-v0"):
        env, params = maxatar.make(env_id, max_steps=4)
        single, single_state = rollout_pure(env, params, None, 8)
        split, split_state = rollout_pure(env, params, mesh, 8)
        assert_trees_equal(jax.device_get(single), sharding.to_numpy(split))
        assert_trees_equal(single_state, sharding.to_numpy(split_state))
        for leaf in jax.tree.leaves((split[-1], split_state)):
            assert_split(leaf, 2)

    # gymnasium.make_vec(devices=...): every autoreset mode, numpy outputs, equal bit for bit.
    for env_id, mode in [("maxatar/CartPole-v1", m) for m in ("next_step", "same_step", "disabled")] + [
        ("maxatar/Breakout-v0", "same_step")
    ]:
        one, one_trace = rollout_gym(env_id, 8, None, mode)
        two, two_trace = rollout_gym(env_id, 8, 2, mode)
        assert_trees_equal(one_trace, two_trace)
        assert_trees_equal(one.state, two.state)
        assert two.devices == jax.devices() and one.devices == jax.devices()[:1]
        for leaf in jax.tree.leaves(two.state):
            assert_split(leaf, 2)
        obs, reward, terminated, *_ = two_trace[-1]
        assert obs.flags.writeable and reward.flags.writeable and terminated.flags.writeable
    # "all" is every local device; output="jax" keeps the results split, not gathered.
    jax_env, jax_trace = rollout_gym("maxatar/CartPole-v1", 8, "all", "next_step", output="jax")
    for leaf in jax.tree.leaves(jax_trace[-1]):
        assert isinstance(leaf, jax.Array)
        assert_split(leaf, 2)
    assert_trees_equal(rollout_gym("maxatar/CartPole-v1", 8, None, "next_step")[1], jax.device_get(jax_trace))

    # Uneven splits and impossible device counts are refused clearly.
    import gymnasium

    for bad, message in [
        ({"num_envs": 7, "devices": 2}, "cannot be split evenly over 2 devices"),
        ({"num_envs": 8, "devices": 3}, "asked for 3 devices but only 2"),
        ({"num_envs": 8, "devices": 0}, "positive"),
        ({"num_envs": 8, "devices": "most"}, "'all'"),
    ]:
        assert_refused(
            partial(gymnasium.make_vec, "maxatar/CartPole-v1", **bad), ValueError, message, f"make_vec {bad}"
        )
    assert_refused(
        lambda: sharding.shard_batch(np.zeros((5, 3)), mesh),
        ValueError,
        "batch of 5 cannot be split evenly over 2 devices",
        "shard_batch of an uneven batch",
    )
    print("environments ok")


def environments_on_four_devices() -> None:
    import gymnasium
    import jax

    assert jax.device_count() == 4, jax.devices()
    one, one_trace = rollout_gym("maxatar/Breakout-v0", 8, None, "next_step")
    four, four_trace = rollout_gym("maxatar/Breakout-v0", 8, "all", "next_step")
    assert_trees_equal(one_trace, four_trace)
    assert_trees_equal(one.state, four.state)
    for leaf in jax.tree.leaves(four.state):
        assert_split(leaf, 4)
    assert_refused(
        lambda: gymnasium.make_vec("maxatar/Breakout-v0", num_envs=6, devices="all"),
        ValueError,
        "num_envs of 6 cannot be split evenly over 4 devices",
        "make_vec of 6 environments on 4 devices",
    )
    print("four devices ok")


AGENT_ARGS = ["--env", "CartPole-v1", "--preset", "cartpole", "--total-steps", "2000", "--no-progress"]
AGENT_ARGS += ["--set", "learning_starts=500", "--set", "log_points=2", "--set", "eval_episodes=4"]
AGENT_ARGS += ["--set", "buffer_size=4000"]
# The on-policy skeleton too (PPO: rollouts, shuffled minibatches): 4 rollouts of 32 x 32 frames.
PPO_ARGS = ["--env", "CartPole-v1", "--total-steps", "4096", "--log-points", "2", "--eval-episodes", "4"]
PPO_ARGS += ["--no-progress"]


def dqn_on_one_and_two_devices() -> None:
    """Seeds 0 and 1 on 2 devices (one seed each) equal seed 0 and seed 1 trained alone on one device: each
    device runs exactly the one-device program for its seeds. For DQN (off-policy) and PPO (on-policy)."""
    import jax

    from maxatar_agents.run import checkpoint, cli

    assert jax.device_count() == 2, jax.devices()

    def train(tmp: str, name: str, *extra: str, algorithm: str = "dqn"):
        out = Path(tmp) / name
        summary = cli.run(algorithm, [*(AGENT_ARGS if algorithm == "dqn" else PPO_ARGS), *extra, "--out", str(out)])
        with np.load(out / checkpoint.STATE_FILE, allow_pickle=False) as saved:
            state = {k: saved[k] for k in saved.files if k != checkpoint.PROGRESS_KEY}
        rows = [{k: v for k, v in r.items() if k != "wall_time"} for r in csv.DictReader(open(out / "metrics.csv"))]
        return summary, json.loads((out / "summary.json").read_text()), state, rows

    with tempfile.TemporaryDirectory() as tmp:
        for algorithm in ("dqn", "ppo"):
            both = train(tmp, f"{algorithm}-two-devices", "--seeds", "2", "--devices", "2", algorithm=algorithm)
            alone = [
                train(tmp, f"{algorithm}-seed-{s}", "--seeds", "1", "--seed", str(s), algorithm=algorithm)
                for s in (0, 1)
            ]
            summary, saved, state, rows = both
            assert saved["num_devices"] == 2 and len(saved["devices"]) == 2, saved
            assert alone[0][1]["num_devices"] == 1
            for i, (one_summary, _, one_state, one_rows) in enumerate(alone):
                assert one_state.keys() == state.keys()
                for name in state:
                    np.testing.assert_array_equal(state[name][i], one_state[name][0], err_msg=f"{algorithm} {name}")
                assert [r for r in rows if r["seed"] == str(i)] == one_rows and len(one_rows) == 2
                assert summary["final_eval_return_per_seed"][i] == one_summary["final_eval_return_per_seed"][0]
            assert rows[0]["recent_return"] != rows[1]["recent_return"]  # the two seeds are different runs

        bad = [
            (["--seeds", "3", "--devices", "2"], "--seeds 3 cannot be split evenly over 2 devices"),
            (["--devices", "3"], "asked for 3 devices but only 2"),
            (["--devices", "two"], "--devices must be 'all' or a positive integer"),
            (["--coordinator", "127.0.0.1:1"], "only make sense with --distributed"),
            (["--distributed", "--devices", "2"], "pass --devices all"),
        ]
        for extra, message in bad:
            run = partial(cli.run, "dqn", [*AGENT_ARGS, *extra, "--out", str(Path(tmp) / "bad")])
            assert_refused(run, cli.UsageError, message, f"the CLI with {extra}")
    print("agents ok")


def two_processes() -> None:
    """One of two processes joined by jax.distributed (one CPU device each): a mesh over both processes'
    devices steps CartPole exactly as one device does, and `to_numpy` gathers the whole batch everywhere."""
    import jax

    jax.distributed.initialize(
        os.environ["MAXATAR_TEST_COORDINATOR"], num_processes=2, process_id=int(os.environ["MAXATAR_TEST_PROCESS"])
    )
    import maxatar
    from maxatar import sharding

    assert jax.process_count() == 2 and jax.device_count() == 2 and jax.local_device_count() == 1
    env, params = maxatar.make("CartPole-v1", max_steps=4)
    mesh = sharding.make_mesh("all", local=False)
    assert not sharding.batch_sharding(mesh).is_fully_addressable
    split, split_state = rollout_pure(env, params, mesh, 8)
    local, local_state = rollout_pure(env, params, sharding.make_mesh(1), 8)  # this process's device alone
    assert_trees_equal(sharding.to_numpy(local), sharding.to_numpy(split))
    assert_trees_equal(sharding.to_numpy(local_state), sharding.to_numpy(split_state))
    print("two processes ok")


# --- the tests ---


def test_sharded_environments_equal_unsharded_on_two_and_four_devices():
    two = run_scenario("environments_on_two_devices", 2)
    four = run_scenario("environments_on_four_devices", 4)
    assert "environments ok" in finish(two) and "four devices ok" in finish(four)


def test_agent_on_two_devices_equals_one_device():
    assert "agents ok" in finish(run_scenario("dqn_on_one_and_two_devices", 2))


def test_two_processes_with_jax_distributed():
    with socket.socket() as probe:  # a free port on the loopback interface for the coordinator
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    common = {"MAXATAR_TEST_COORDINATOR": f"127.0.0.1:{port}"}
    processes = [run_scenario("two_processes", 1, extra_env={**common, "MAXATAR_TEST_PROCESS": str(i)}) for i in (0, 1)]
    try:
        outputs = [finish(p, timeout=300) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
    assert all("two processes ok" in out for out in outputs)


def test_select_devices_in_this_process():
    import jax

    from maxatar import sharding

    count = jax.local_device_count()
    assert sharding.select_devices(None) == jax.local_devices()[:1]
    assert sharding.select_devices("all") == jax.local_devices()
    assert sharding.select_devices(jax.local_devices()[:1]) == jax.local_devices()[:1]
    with pytest.raises(ValueError, match=f"asked for {count + 1} devices but only {count}"):
        sharding.select_devices(count + 1)
    with pytest.raises(ValueError, match="twice"):
        sharding.select_devices([jax.local_devices()[0]] * 2)
    with pytest.raises(ValueError, match="positive"):
        sharding.select_devices(0)
    with pytest.raises(ValueError, match="'all'"):
        sharding.select_devices(True)
