"""Hyperparameter sweeps in one program (`maxatar_agents.algorithms.grid`): a sweep trains seeds x values together and
must give exactly the runs of each value done one at a time (batched alike), through the command line
(per-value artefacts, comparison files, resume) and from Python.

One PQN CartPole sweep (2 step sizes x 2 seeds, a short run) is compiled and run once per module; the
ordinary runs it is compared with compile once per value.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maxatar_agents.algorithms import grid, pqn, sac
from maxatar_agents.algorithms.fields import field_types
from maxatar_agents.run import checkpoint, cli, policies, runner
from maxatar_agents.run.configs import make_config
from tests import agent_lists

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

LRS = ("0.0003", "0.001")
SEEDS = 2
BASE = ["--env", "CartPole-v1", "--preset", "cartpole", "--total-steps", "16384", "--set=log_points=4"]
BASE += ["--set=eval_episodes=8", "--set=keep_best=false", "--set=hidden=32", "--no-progress"]


def sweep_args(out, *extra: str) -> list[str]:
    return [*BASE, "--lr", ",".join(LRS), "--seeds", str(SEEDS), "--out", str(out), *extra]


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    """The command line's sweep: its --out and what it returned (sweep.json's content)."""
    out = tmp_path_factory.mktemp("sweep")
    return out, cli.run("pqn", sweep_args(out))


def npz_arrays(directory) -> dict[str, np.ndarray]:
    with np.load(directory / checkpoint.STATE_FILE, allow_pickle=False) as saved:
        return {name: saved[name] for name in saved.files}


def metric_rows(path) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k != "wall_time"} for row in csv.DictReader(open(path))]


def assert_same_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def ordinary_runs(config, lr: float, seeds: list[int]):
    """Ordinary (unswept) runs of `config` with step size `lr`, interval by interval as the command line
    runs them: the final state's arrays by checkpoint name, the logged losses, the final evaluation."""
    parts = runner.compiled("pqn", dataclasses.replace(config, lr=lr), len(seeds))
    sched = parts["program"].schedule
    state, losses = parts["init"](runner.seed_keys(seeds)), []
    for i in range(sched.num_intervals):
        state, metrics = parts["interval"](state, jnp.int32(i * sched.steps_per_interval))
        losses.append(np.asarray(metrics["loss"]))
    arrays = dict(zip(checkpoint.tree_paths(state), map(np.asarray, jax.tree.leaves(state)), strict=True))
    return arrays, np.stack(losses, axis=1), np.asarray(parts["evaluate"](state)).mean(axis=1)


def test_sweep_equals_the_runs_one_at_a_time(sweep_run):
    out, content = sweep_run
    args = cli.build_parser("pqn", pqn).parse_args(sweep_args(out))
    config = cli.config_from_args(args, pqn)[0]
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    for j, (lr, result) in enumerate(zip(LRS, content["results"], strict=True)):
        # XLA may round a batch of 4 runs differently from a batch of 2 (ordinary runs too), so the runs of
        # one value are compared with ordinary runs batched as the sweep batches them: 4 runs, this value's
        # seeds at the sweep's places. A swept step size then gives the very bits of the constant one.
        arrays, losses, returns = ordinary_runs(config, float(lr), [0, 1] * len(LRS))
        ours = slice(j * SEEDS, (j + 1) * SEEDS)
        swept = npz_arrays(out / result["dir"])
        assert_same_arrays(
            {k: v for k, v in swept.items() if k != checkpoint.PROGRESS_KEY},
            {name: array[ours] for name, array in arrays.items()},
        )
        logged = [[float(r["loss"]) for r in rows if r["lr"] == str(float(lr)) and r["seed"] == str(s)] for s in (0, 1)]
        np.testing.assert_array_equal(np.float32(logged), losses[ours])
        assert result["final_eval_return_per_seed"] == [float(r) for r in returns[ours]]


def test_sweep_writes_each_value_as_a_run_and_a_comparison(sweep_run):
    out, content = sweep_run
    assert [r["dir"] for r in content["results"]] == [f"lr={lr}" for lr in LRS]
    assert content["sweep"] == {"lr": [float(lr) for lr in LRS]} and content["runs"] == len(LRS) * SEEDS
    for result in content["results"]:
        directory = out / result["dir"]
        for name in ("metrics.csv", "summary.json", "learning_curve.png", checkpoint.STATE_FILE):
            assert (directory / name).stat().st_size > 0, name
        summary = json.loads((directory / "summary.json").read_text())
        assert summary["config"]["lr"] == result["lr"] and summary["seeds"] == [0, 1]
        env_id, act = policies.load_policy(directory)  # an ordinary run's policy
        assert env_id == "maxatar/CartPole-v1" and act(None, jnp.zeros((3, 4))).shape == (3,)
    for name in ("sweep.png", "sweep.csv", "sweep.json", "metrics.csv"):
        assert (out / name).stat().st_size > 0, name
    table = list(csv.DictReader(open(out / "sweep.csv")))
    assert [float(row["lr"]) for row in table] == [float(lr) for lr in LRS]
    assert [float(r["final_eval_return_mean"]) for r in table] == [
        r["final_eval_return_mean"] for r in content["results"]
    ]
    rows = list(csv.DictReader(open(out / "metrics.csv")))  # every run, labelled by its value and seed
    assert {(row["lr"], row["seed"]) for row in rows} == {(str(float(lr)), str(s)) for lr in LRS for s in (0, 1)}
    with pytest.raises(checkpoint.CheckpointError, match="holds a sweep"):
        policies.load_policy(out)


def test_resume_of_an_interrupted_sweep_equals_the_whole_sweep(sweep_run, tmp_path):
    full_out, full = sweep_run

    def ctrl_c_after_two(done: int):
        if done == 2:
            raise KeyboardInterrupt

    out = tmp_path / "resumed"
    with pytest.raises(SystemExit) as stop:
        cli.run("pqn", sweep_args(out, "--checkpoint-every", str(10**9)), on_interval=ctrl_c_after_two)
    assert stop.value.code == cli.EXIT_INTERRUPTED
    assert checkpoint.read_meta(out)["intervals_done"] == 2
    # A resume may repeat the sweep's options or leave them out; other values are refused.
    with pytest.raises(SystemExit) as stop:
        cli.main("pqn", [*BASE, "--lr", "0.0003,0.003", "--out", str(out), "--resume"])
    assert stop.value.code == 2
    resumed = cli.run("pqn", ["--out", str(out), "--resume", "--no-progress"])
    assert [r["final_eval_return_per_seed"] for r in resumed["results"]] == [
        r["final_eval_return_per_seed"] for r in full["results"]
    ]
    assert_same_arrays(npz_arrays(out), npz_arrays(full_out))
    assert metric_rows(out / "metrics.csv") == metric_rows(full_out / "metrics.csv")
    for result in full["results"]:
        assert_same_arrays(npz_arrays(out / result["dir"]), npz_arrays(full_out / result["dir"]))


def test_python_sweep_equals_the_command_line(sweep_run):
    _, content = sweep_run
    config = dataclasses.replace(make_config(pqn, "maxatar/CartPole-v1"), total_steps=16384, log_points=4)
    config = dataclasses.replace(config, eval_episodes=8, keep_best=False, hidden=(32,))
    train = grid.make_train(pqn, config, {"lr": [float(lr) for lr in LRS]})
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(SEEDS)])
    result = jax.device_get(jax.jit(jax.vmap(train))(keys))
    assert result.eval_returns.shape == (SEEDS, len(LRS), 8)
    per_value = result.eval_returns.mean(axis=2).T  # (values, seeds)
    np.testing.assert_array_equal(per_value, [r["final_eval_return_per_seed"] for r in content["results"]])


# --- what cannot be swept ---


def test_a_field_that_sets_shapes_is_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main("pqn", [*BASE, "--num-envs", "16,32", "--out", "unused"])
    assert stop.value.code == 2
    assert "num_envs cannot be swept: it changes the program's shape" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        cli.main("pqn", [*BASE, "--set", "lr=1e-3,-1", "--out", "unused"])
    assert stop.value.code == 2
    assert "lr=-1.0: lr must be > 0" in capsys.readouterr().err


def test_a_float_the_agent_needs_in_python_is_found_by_tracing():
    def make_program(config):
        width = int(config.lr * 1e5)  # a float that sets a shape: it cannot be traced
        return pqn.make_program(dataclasses.replace(config, hidden=(width,)))

    agent = types.SimpleNamespace(Config=pqn.Config, make_program=make_program)
    config = make_config(pqn, "maxatar/CartPole-v1")
    with pytest.raises(grid.SweepError, match="field lr cannot be swept: it changes the program's shape"):
        grid.check_sweep(agent, config, {"lr": [1e-4, 3e-4]})
    with pytest.raises(grid.SweepError, match="unknown config field 'learning_rate'"):
        grid.check_sweep(pqn, config, {"learning_rate": [1e-4]})


def test_the_sticky_action_probability_can_be_swept():
    """`sticky_action_prob` (None: the environment's default) is swept like a float field: the environment's
    params take the traced value, so the swept program plays each value exactly as the constant does, and a
    value that is not a probability is refused before anything compiles."""
    config = dataclasses.replace(make_config(pqn, "maxatar/CartPole-v1"), eval_episodes=8, hidden=(32,))
    assert grid.check_sweep(pqn, config, {"sticky_action_prob": [0, 0.5]}) == {"sticky_action_prob": (0.0, 0.5)}
    swept = grid.swept_program(pqn, config, ["sticky_action_prob"])
    evaluate = jax.jit(swept.evaluate)
    returns = {}
    for prob in (0.0, 0.5):
        values = {"sticky_action_prob": jnp.float32(prob)}
        ordinary = pqn.make_program(dataclasses.replace(config, sticky_action_prob=prob))
        state = ordinary.init(jax.random.key(3))
        returns[prob] = np.asarray(evaluate(state, values))
        np.testing.assert_array_equal(returns[prob], jax.jit(ordinary.evaluate)(state))
    assert not np.array_equal(returns[0.0], returns[0.5])  # the probability reached the environment
    with pytest.raises(grid.SweepError, match="sticky_action_prob=1.5: sticky_action_prob must be a probability"):
        grid.check_sweep(pqn, config, {"sticky_action_prob": [0.1, 1.5]})


@pytest.mark.parametrize("module", agent_lists.cartpole_modules(), ids=lambda m: m.ALGORITHM)
def test_every_float_field_of_every_agent_can_be_swept(module):
    config = make_config(module, "maxatar/CartPole-v1")
    floats = [name for name, kind in field_types(module.Config).items() if kind is float]
    sweep = {name: [getattr(config, name)] for name in floats}
    assert grid.check_sweep(module, config, sweep) == {name: (float(getattr(config, name)),) for name in floats}
    assert grid.combinations({"a": [1.0, 2.0], "b": [3.0]}) == [{"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 3.0}]


def test_sac_blend_target_sweeps_its_pessimism():
    """The pessimism enters the traced program only with critic_target="blend"; with another target a value
    other than the default is refused, naming the field, before anything compiles."""
    config = dataclasses.replace(make_config(sac, "maxatar/CartPole-v1"), critic_target="blend")
    assert grid.check_sweep(sac, config, {"critic_pessimism": [0, 1]}) == {"critic_pessimism": (0.0, 1.0)}
    with pytest.raises(grid.SweepError, match="critic_pessimism is used only with critic_target='blend'"):
        grid.check_sweep(sac, make_config(sac, "maxatar/CartPole-v1"), {"critic_pessimism": [0.25, 0.75]})
