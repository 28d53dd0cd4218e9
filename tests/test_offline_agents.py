"""The offline agents (behaviour cloning, discrete CQL) on small Minari datasets made here: what each learns, the
command line's run equal to the whole-run program and resumed bit for bit, the dataset its checkpoint records,
and a `--dataset` that cannot be used refused in one line before --out exists.

The datasets are a few hundred steps of the shipped Breakout policy and of random Asterix play
(`tests/offline_data.py`), in a directory of their own (`MINARI_DATASETS_PATH`); the networks are tiny, and
each program is compiled once per module."""

from __future__ import annotations

import csv
import json
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lab import offline
from maxatar_agents.algorithms import bc, cql, grid
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.networks import make_network
from maxatar_agents.run import checkpoint, cli, datasets, runner, saved
from maxatar_agents.run.policies import load_policy

pytestmark = pytest.mark.slow  # whole trainings (docs/contributing.md)
pytest.importorskip("minari")

from tests.offline_data import make_dataset  # noqa: E402  (needs minari)

BREAKOUT = "maxatar/Breakout/test-v0"  # the shipped policy's episodes, each cut at 100 steps
ASTERIX = "maxatar/Asterix/test-v0"  # random play
SEEDS = 2
TINY = dict(hidden=(32,), conv_features=8, eval_episodes=4, keep_best_episodes=2, eval_max_steps=200)
INTERVALS, UPDATES = 3, 600


@pytest.fixture(scope="module")
def minari_dir(tmp_path_factory):
    """The datasets, in a directory of their own for this module."""
    path = tmp_path_factory.mktemp("minari")
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(path)
    make_dataset(
        BREAKOUT, "maxatar/Breakout-v0", 6, 100, "pretrained:maxatar/Breakout-v0", ref_min_score=0.5, ref_max_score=4.5
    )
    make_dataset(ASTERIX, "maxatar/Asterix-v0", episodes=2, max_steps=50)
    yield path
    if before is None:
        del os.environ["MINARI_DATASETS_PATH"]
    else:
        os.environ["MINARI_DATASETS_PATH"] = before


# BC's options on the command line besides --env, --dataset, --seeds and --out: one config, compiled once.
BC_OPTIONS = [
    *("--total-steps", str(UPDATES), "--log-points", str(INTERVALS), "--eval-max-steps", "200", "--no-progress"),
    *("--hidden", "32", "--conv-features", "8", "--eval-episodes", "4", "--keep-best-episodes", "2"),
]


def bc_args(out, *extra: str) -> list[str]:
    where = ["--env", "maxatar/Breakout-v0", "--dataset", BREAKOUT, "--seeds", str(SEEDS), "--out", str(out)]
    return [*where, *BC_OPTIONS, *extra]


_cache: dict = {}


def bc_run(tmp_path_factory):
    """BC's command-line run (computed once): its --out and summary."""
    if "bc" not in _cache:
        out = tmp_path_factory.mktemp("bc")
        _cache["bc"] = out, cli.run("bc", bc_args(out))
    return _cache["bc"]


def keys():
    return jnp.stack([jax.random.PRNGKey(s) for s in range(SEEDS)])


def saved_state(out, config):
    parts = runner.compiled("bc", config, SEEDS, None, (), runner.shapes_of(datasets.inputs_for(config)))
    return checkpoint.load_state(out, parts["template"], checkpoint.read_meta(out), saved.schema(parts["program"]))


def test_bc_learns_the_behaviour_policys_actions_and_its_run_is_the_whole_run_program(minari_dir, tmp_path_factory):
    out, summary = bc_run(tmp_path_factory)
    config = saved.config_for(checkpoint.read_meta(out))
    data, _ = datasets.for_config(config)
    result = jax.jit(jax.vmap(bc.make_train(config), in_axes=(0, None)))(keys(), data)

    params = jax.tree.map(lambda x: x[0], result.state.learner.params)
    accuracy = float(jnp.mean(bc.make_program(config).act(params, data.observation) == data.action))
    chance = np.bincount(np.asarray(data.action)).max() / data.num_steps  # always the most frequent action
    assert accuracy > 2 * chance, (accuracy, chance)
    # The command line's chunked, checkpointed run is the one-program run, bit for bit.
    np.testing.assert_array_equal(result.eval_returns.mean(axis=1), summary["final_eval_return_per_seed"])
    state = saved_state(out, config)
    for a, b in zip(jax.tree.leaves(state.learner), jax.tree.leaves(result.state.learner), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    assert [int(r["frames"]) for r in rows] == [UPDATES // INTERVALS * (i // SEEDS + 1) for i in range(len(rows))]


def test_the_offline_table_trains_the_runs_of_the_local_datasets_and_normalises_them(minari_dir, tmp_path, capsys):
    results = tmp_path / "offline"
    offline.train(results, SEEDS, ["Breakout"], ["test", "absent"], ["bc"], BC_OPTIONS)
    assert "bc on maxatar/Breakout/absent-v0: skipped: --dataset" in capsys.readouterr().out
    summary = json.loads((results / "bc-Breakout-test" / "summary.json").read_text())
    assert summary["dataset"]["ref_min_score"] == 0.5 and summary["dataset"]["ref_max_score"] == 4.5
    assert not (results / "bc-Breakout-absent").exists()
    scores = 100 * (np.asarray(summary["final_eval_return_per_seed"]) - 0.5) / 4.0
    mean, low, high = offline.interval(scores)
    row = f"| `{BREAKOUT}` | {mean:.1f} [{low:.1f}, {high:.1f}] ({SEEDS}) | - |"
    assert row in offline.report(results).splitlines()


def test_cql_values_the_datasets_actions_above_the_others(minari_dir):
    config = cql.Config(dataset=BREAKOUT, total_steps=400, log_points=2, lr=1e-3, target_update_every=100, **TINY)
    data, _ = datasets.for_config(config)
    # alpha 0 (plain DQN on the data) and CQL's alpha 1 in one program (a sweep of the penalty's weight).
    train = grid.make_train(cql, config, {"alpha": [0.0, 1.0]})
    result = jax.jit(jax.vmap(train, in_axes=(0, None)))(keys(), data)
    network = make_network(env_from_config(config)[0], config.hidden, config.conv_features)
    q_values = jax.vmap(jax.vmap(network.apply, in_axes=(0, None)), in_axes=(0, None))
    q = q_values(result.state.learner.params, data.observation)  # (seeds, alphas, steps, actions)
    taken = jax.nn.one_hot(data.action, q.shape[-1], dtype=bool)
    gap = (q * taken).sum(-1) - jnp.where(taken, 0.0, q).sum(-1) / (q.shape[-1] - 1)  # Q(data) - mean Q(other)
    gap = np.asarray(gap.mean(axis=-1))  # (seeds, alphas)
    assert np.all(gap[:, 1] > 0), gap
    assert np.all(gap[:, 1] > gap[:, 0]), gap


def test_resume_after_ctrl_c_equals_the_uninterrupted_run_and_refuses_another_dataset(minari_dir, tmp_path_factory):
    full_out, full_summary = bc_run(tmp_path_factory)
    out = tmp_path_factory.mktemp("bc-resume")

    def ctrl_c_after_one(done: int):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(SystemExit) as stop:
        cli.run("bc", bc_args(out, "--checkpoint-every", str(10**9)), on_interval=ctrl_c_after_one)
    assert stop.value.code == cli.EXIT_INTERRUPTED
    meta = checkpoint.read_meta(out)
    assert meta["intervals_done"] == 1 and meta["dataset"] == datasets.for_config(saved.config_for(meta))[1]
    other = tmp_path_factory.mktemp("bc-other")
    shutil.copytree(out, other, dirs_exist_ok=True)

    summary = cli.run("bc", ["--out", str(out), "--resume", "--no-progress"])
    assert summary["final_eval_return_per_seed"] == full_summary["final_eval_return_per_seed"]
    drop_time = lambda rows: [{k: v for k, v in r.items() if k != "wall_time"} for r in rows]  # noqa: E731
    assert drop_time(csv.DictReader(open(out / "metrics.csv"))) == drop_time(
        csv.DictReader(open(full_out / "metrics.csv"))
    )
    config = saved.config_for(meta)
    for a, b in zip(
        jax.tree.leaves(saved_state(out, config)), jax.tree.leaves(saved_state(full_out, config)), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The trained policy loads from the checkpoint without the dataset.
    env_id, act = load_policy(out)
    assert env_id == "maxatar/Breakout-v0" and act(None, jnp.zeros((10, 10, 4), bool)).shape == ()

    # The same id, other data (another directory of datasets): --resume refuses it, the checkpoint unchanged.
    os.environ["MINARI_DATASETS_PATH"] = str(tmp_path_factory.mktemp("minari-other"))
    try:
        make_dataset(BREAKOUT, "maxatar/Breakout-v0", episodes=2, max_steps=30)
        with pytest.raises(cli.UsageError, match="--dataset 'maxatar/Breakout/test-v0' is not the dataset the chec"):
            cli.run("bc", ["--out", str(other), "--resume", "--no-progress"])
    finally:
        os.environ["MINARI_DATASETS_PATH"] = str(minari_dir)
    assert checkpoint.read_meta(other)["intervals_done"] == 1


@pytest.mark.parametrize(
    "dataset, message",
    [
        (
            "maxatar/Breakout/absent-v0",
            "--dataset 'maxatar/Breakout/absent-v0': Dataset maxatar/Breakout/absent-v0 not",
        ),
        (ASTERIX, f"--dataset {ASTERIX!r} was made for maxatar/Asterix-v0, not --env maxatar/Breakout-v0"),
    ],
)
def test_a_dataset_that_cannot_be_used_is_one_line_naming_dataset_before_out_exists(
    minari_dir, tmp_path, capsys, dataset, message
):
    out = tmp_path / "run"
    argv = ["--env", "maxatar/Breakout-v0", "--dataset", dataset, "--out", str(out)]
    with pytest.raises(SystemExit) as stop:
        cli.main("cql", argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not out.exists()
