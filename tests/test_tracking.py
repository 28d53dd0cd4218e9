"""`--track mlflow` and `--track tensorboard` of the agents' command line, read back with the libraries
themselves: MLflow's client on a file store, TensorBoard's event accumulator on the event files.

One tiny PQN CartPole config (compiled once, shared by every run here) trains for 4 logging intervals.
"""

from __future__ import annotations

import csv
import json
import os

import pytest
from mlflow import MlflowClient
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from maxatar_agents import commands
from maxatar_agents.algorithms import pqn
from maxatar_agents.experiments import tracking
from maxatar_agents.run import checkpoint, cli

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no network calls from the tests

INTERVALS = 4
FRAMES_PER_INTERVAL = 1024
# PQN's cartpole preset made tiny: 8 environments x 32 steps, 4 rollouts per interval, a 16-unit network.
TINY = {
    "total_steps": INTERVALS * FRAMES_PER_INTERVAL,
    "log_points": INTERVALS,
    "num_envs": 8,
    "num_steps": 32,
    "num_minibatches": 2,
    "num_epochs": 1,
    "hidden": 16,
    "eval_episodes": 4,
    "eval_max_steps": 200,
    "keep_best": False,
}


def tiny_args(out, *extra: str) -> list[str]:
    sets = [f"--set={k}={v}" for k, v in TINY.items()]
    return [
        "--env",
        "CartPole-v1",
        "--preset",
        "cartpole",
        "--seeds",
        "2",
        *sets,
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


def run_id_of(out) -> str:
    return json.loads((out / tracking.RUN_FILE).read_text())["mlflow"]["run_id"]


@pytest.fixture(scope="module")
def mlflow_run(tmp_path_factory):
    """A run tracked in a file store, interrupted after 2 intervals, then resumed with --gif."""
    root = tmp_path_factory.mktemp("mlflow")
    store, out = root / "mlruns", root / "run"
    track = ["--track", "mlflow", "--track-uri", str(store)]

    def ctrl_c_after_two(done: int):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(SystemExit) as stop:
        commands.run("pqn", tiny_args(out, *track), on_interval=ctrl_c_after_two)
    assert stop.value.code == cli.EXIT_INTERRUPTED
    client = MlflowClient(tracking_uri=store.as_uri())
    run_id = run_id_of(out)
    interrupted = client.get_run(run_id).info.status, len(client.get_metric_history(run_id, "recent_return/mean"))
    summary = commands.run("pqn", ["--out", str(out), "--resume", "--no-progress", "--gif", *track])
    return client, out, summary, interrupted


def test_mlflow_run_holds_config_metrics_and_files(mlflow_run):
    client, out, summary, _ = mlflow_run
    run = client.get_run(run_id_of(out))
    params = run.data.params
    assert params["lr"] == "0.0003" and params["hidden"] == "16" and params["num_envs"] == "8"
    assert (params["preset"], params["seeds"], params["algorithm"]) == ("cartpole", "0,1", "pqn")
    assert params["env_id"] == "maxatar/CartPole-v1"

    rows = list(csv.DictReader(open(out / "metrics.csv")))
    steps = [FRAMES_PER_INTERVAL * (i + 1) for i in range(INTERVALS)]
    for seed in (0, 1):
        history = client.get_metric_history(run.info.run_id, f"recent_return/seed{seed}")
        assert [m.step for m in history] == steps
        logged = [float(r["recent_return"]) for r in rows if int(r["seed"]) == seed]
        assert [m.value for m in history] == pytest.approx(logged)
    means = client.get_metric_history(run.info.run_id, "recent_return/mean")
    assert [m.step for m in means] == steps
    assert len(client.get_metric_history(run.info.run_id, "loss/seed1")) == INTERVALS
    assert run.data.metrics["summary/final_eval_return_mean"] == pytest.approx(summary["final_eval_return_mean"])

    files = {a.path for a in client.list_artifacts(run.info.run_id)}
    expected = {"summary.json", "metrics.csv", "learning_curve.png", "policy.gif"}
    assert expected | {checkpoint.STATE_FILE, checkpoint.META_FILE} <= files
    assert run.info.status == "FINISHED"


def test_resume_continues_the_same_mlflow_run(mlflow_run):
    client, out, _, (status_when_interrupted, points_when_interrupted) = mlflow_run
    assert (status_when_interrupted, points_when_interrupted) == ("KILLED", 2)
    run = client.get_run(run_id_of(out))
    assert len(client.search_runs([run.info.experiment_id])) == 1  # no second run for the resumed session
    history = client.get_metric_history(run.info.run_id, "recent_return/mean")
    assert len(history) == INTERVALS and len({m.step for m in history}) == INTERVALS


@pytest.mark.parametrize("kind", ["mlflow", "tensorboard"])
def test_a_resume_after_a_hard_kill_logs_each_step_once(tmp_path, kind):
    """A killed process leaves the steps after its last checkpoint logged; the resumed run trains them again
    (identically) and must not log them a second time."""
    config, run_dir = pqn.Config(), tmp_path / "run"
    run_dir.mkdir()
    uri = str(tmp_path / "mlruns") if kind == "mlflow" else None
    killed = tracking.make_tracker(kind, uri, run_dir)
    killed.start(config, "cartpole", [0])
    for step in (10, 20, 30):  # the checkpoint was written at step 10, then the process was killed
        killed.log_values(step, {"recent_return/mean": step / 10})
    resumed = tracking.make_tracker(kind, uri, run_dir)
    resumed.start(config, "cartpole", [0], resume=True)
    for step in (20, 30, 40):
        resumed.log_values(step, {"recent_return/mean": step / 10})
    resumed.finish({"frames_per_seed": 30, "value": 5.0})  # a new name at a logged step is still logged
    if kind == "mlflow":
        history = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri()).get_metric_history
        logged = sorted((m.step, m.value) for m in history(run_id_of(run_dir), "recent_return/mean"))
        final = [(m.step, m.value) for m in history(run_id_of(run_dir), "summary/value")]
    else:
        events = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0})
        events.Reload()
        logged = [(s.step, s.value) for s in events.Scalars("recent_return/mean")]
        final = [(s.step, s.value) for s in events.Scalars("summary/value")]
    assert logged == [(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0)]
    assert final == [(30, 5.0)]


def test_tensorboard_event_files_read_back(tmp_path):
    out = tmp_path / "run"
    summary = commands.run("pqn", tiny_args(out, "--track", "tensorboard"))
    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    steps = [FRAMES_PER_INTERVAL * (i + 1) for i in range(INTERVALS)]
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    for seed in (0, 1):
        scalars = events.Scalars(f"recent_return/seed{seed}")
        assert [s.step for s in scalars] == steps
        logged = [float(r["recent_return"]) for r in rows if int(r["seed"]) == seed]
        assert [s.value for s in scalars] == pytest.approx(logged)
    assert [s.step for s in events.Scalars("recent_return/mean")] == steps
    final = events.Scalars("summary/final_eval_return_mean")
    assert final[-1].value == pytest.approx(summary["final_eval_return_mean"])
    assert "learning_curve" in tags["images"]
    assert events.Images("learning_curve")[0].encoded_image_string == (out / "learning_curve.png").read_bytes()
    config_text = events.Tensors("config")[0].tensor_proto.string_val[0].decode()
    assert "| lr | 0.0003 |" in config_text and "| preset | cartpole |" in config_text
    assert (out / "tensorboard" / "files" / checkpoint.STATE_FILE).read_bytes() == (
        out / checkpoint.STATE_FILE
    ).read_bytes()


def test_a_shared_tensorboard_log_dir_gets_one_subdirectory_per_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    commands.run("pqn", tiny_args(tmp_path / "first", "--track", "tensorboard", "--track-uri", "logs"))
    commands.run("pqn", tiny_args(tmp_path / "second"))  # not tracked: nothing written for it
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["first"]
    assert not (tmp_path / "second" / "tensorboard").exists() and not (tmp_path / "second" / tracking.RUN_FILE).exists()
    assert not (tmp_path / "mlruns").exists()


def test_metric_names_per_run_and_mean():
    rows = [
        {"seed": 0, "frames": 64, "recent_return": 10.0, "loss": 1.0, "wall_time": 2.0},
        {"seed": 1, "frames": 64, "recent_return": float("nan"), "loss": 3.0, "wall_time": 2.0},
    ]
    values = tracking.metric_values(rows)
    assert values["recent_return/seed0"] == 10.0 and values["recent_return/mean"] == 10.0  # NaN left out
    assert values["loss/mean"] == 2.0 and values["wall_time"] == 2.0 and "frames/mean" not in values
    grid_rows = [{"lr": 0.1, **rows[0]}, {"lr": 0.2, **rows[1]}]
    names = tracking.metric_values(grid_rows, ("lr", "seed"))
    assert names["loss/lr-0.1/seed0"] == 1.0 and names["loss/lr-0.2/seed1"] == 3.0


def test_a_tracking_json_that_is_a_fifo_or_damaged_is_one_error_naming_it(tmp_path):
    """--resume --track mlflow reads the run's tracking.json: a FIFO there would block the read for ever."""
    for name, damage, said in [
        ("fifo", os.mkfifo, "cannot read {path}: not a regular file"),
        ("deep", lambda path: path.write_text("[" * 100_000), "{path}: cannot read it as JSON: its arrays or objects"),
        ("twice", lambda path: path.write_text('{"mlflow": {}, "mlflow": {}}'), "the key 'mlflow' appears twice"),
        ("list", lambda path: path.write_text("[]"), "{path} names no MLflow run (tracking_uri and run_id)"),
    ]:
        run_dir = tmp_path / name
        run_dir.mkdir()
        damage(run_dir / tracking.RUN_FILE)
        tracker = tracking.make_tracker("mlflow", str(tmp_path / "mlruns"), run_dir)
        with pytest.raises(ValueError) as error:
            tracker.start(pqn.Config(), None, [0], resume=True)
        message = str(error.value)
        assert said.format(path=run_dir / tracking.RUN_FILE) in message and "remove it to start a new run" in message


def test_bad_tracking_options_fail_clearly(capsys, tmp_path):
    out = str(tmp_path / "run")
    for argv, message in [
        (["--track", "wandb"], "invalid choice: 'wandb'"),
        (["--track-uri", "logs"], "--track-uri needs --track"),
        (["--track", "mlflow", "--track-uri", "bogus://nowhere"], "MLflow cannot use it"),
    ]:
        with pytest.raises(SystemExit) as stop:
            commands.agent("pqn", [*argv, "--env", "CartPole-v1", "--out", out])
        assert stop.value.code == 2
        assert message in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown tracker 'wandb'"):
        tracking.make_tracker("wandb", None, tmp_path)
    with pytest.raises(ValueError, match="unknown run status 'DONE'"):
        tracking.make_tracker("tensorboard", None, tmp_path).finish(status="DONE")
