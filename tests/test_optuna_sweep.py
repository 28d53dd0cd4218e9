"""`python -m maxatar_agents.sweep`: a real Optuna study in a temporary SQLite file, continued by a second
call, pruned by a pruner that must prune, tracked with MLflow, and its best config trained again through
`--preset best_preset.json`.

The trials use the tiny PQN CartPole config of `test_tracking` and choose lr between the preset's value and
one other, so at most two programs are compiled for the whole module (one shared with `test_tracking`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import warnings
from pathlib import Path

import optuna
import pytest
from mlflow import MlflowClient

from maxatar_agents.algorithms import pqn
from maxatar_agents.experiments import study as study_storage
from maxatar_agents.experiments import sweep
from maxatar_agents.experiments.redaction import redact
from maxatar_agents.experiments.study import make_storage
from maxatar_agents.run import cli
from maxatar_agents.run.configs import config_from_dict, make_config, preset_values
from tests.test_tracking import INTERVALS, TINY

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no network calls from the tests

SPACE = {"lr": {"choices": [3e-4, 1e-3]}, "hidden": {"choices": [[16]]}}
OVERRIDES = {**TINY, "hidden": (16,)}
SETS = [f"--set={k}={v}" for k, v in TINY.items()]


@pytest.fixture(scope="module")
def cli_study(tmp_path_factory):
    """Two trials from the command line, tracked in an MLflow file store."""
    root = tmp_path_factory.mktemp("sweep")
    out, store = root / "sweep", root / "mlruns"
    (root / "space.json").write_text(json.dumps(SPACE))
    argv = ["--algo", "pqn", "--env", "maxatar/CartPole-v1", "--trials", "2", "--out", str(out), "--seeds", "2"]
    argv += ["--space", str(root / "space.json"), "--study-name", "tiny", "--sampler-seed", "0", *SETS]
    study = sweep.main([*argv, "--pruner", "none", "--track", "mlflow", "--track-uri", str(store)])
    return study, out, store


def test_trials_are_stored_in_sqlite_with_a_value_per_interval(cli_study):
    _, out, _ = cli_study
    study = optuna.load_study(study_name="tiny", storage=f"sqlite:///{out / 'study.db'}")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 2
    for trial in study.trials:
        assert sorted(trial.intermediate_values) == list(range(1, INTERVALS + 1))
        assert trial.params["lr"] in (3e-4, 1e-3) and len(trial.user_attrs["eval_return_per_seed"]) == 2
        assert (out / "trials" / "tiny" / f"trial-{trial.number:04d}" / "learning_curve.png").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["best_trial"], summary["best_value"]) == (study.best_trial.number, study.best_value)
    assert summary["trials"] == {"COMPLETE": 2}
    assert (out / "history.png").stat().st_size > 0 and (out / "importance.png").stat().st_size > 0


def test_best_preset_json_is_a_preset_of_the_agent_command_line(cli_study):
    study, out, _ = cli_study
    best = config_from_dict(pqn.Config, study.best_trial.user_attrs["config"])
    assert best.lr == study.best_params["lr"] and best.hidden == (16,)
    path = str(out / "best_preset.json")
    args = cli.build_parser("pqn", pqn).parse_args(["--preset", path, "--out", "unused"])
    assert cli.config_from_args(args, pqn) == (best, path)
    assert make_config(pqn, preset=path) == best  # the same from Python
    summary = cli.run("pqn", ["--preset", path, "--seeds", "2", "--out", str(out / "best-run"), "--no-progress"])
    assert summary["final_eval_return_per_seed"] == study.best_trial.user_attrs["eval_return_per_seed"]


def test_mlflow_holds_a_parent_run_with_a_nested_run_per_trial(cli_study):
    study, out, store = cli_study
    client = MlflowClient(tracking_uri=store.as_uri())
    parent_id = json.loads((out / "tracking.json").read_text())["mlflow"]["run_id"]
    parent = client.get_run(parent_id)
    assert parent.info.run_name == "tiny" and parent.data.params["study_name"] == "tiny"
    assert len(client.get_metric_history(parent_id, "trial_value")) == 2
    assert {"best_preset.json", "history.png", "importance.png", "summary.json"} <= {
        a.path for a in client.list_artifacts(parent_id)
    }
    children = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent_id}'")
    assert sorted(run.info.run_name for run in children) == ["trial-0000", "trial-0001"]
    for run in children:
        trial = study.trials[int(run.data.params["trial"])]
        assert float(run.data.params["lr"]) == trial.params["lr"]
        assert len(client.get_metric_history(run.info.run_id, "recent_return/mean")) == INTERVALS
        assert run.data.metrics["summary/value"] == pytest.approx(trial.value)


def test_running_again_continues_the_study(cli_study):
    _, out, _ = cli_study
    study = sweep.optimize(
        "pqn", "maxatar/CartPole-v1", trials=1, out=out, study_name="tiny", overrides=OVERRIDES, space=SPACE, seeds=2
    )
    assert [t.number for t in study.trials] == [0, 1, 2]
    assert json.loads((out / "summary.json").read_text())["trials"] == {"COMPLETE": 3}


def test_a_study_continued_with_another_setting_is_refused(cli_study):
    """Trials of another frame budget, environment setting or seed count would not compare: the study records
    its setting and a worker with another one stops before running a trial, naming what differs."""
    _, out, _ = cli_study
    run = lambda **kw: sweep.optimize(
        "pqn", "maxatar/CartPole-v1", trials=1, out=out, study_name="tiny", space=SPACE, **kw
    )
    held = len(optuna.load_study(study_name="tiny", storage=f"sqlite:///{out / 'study.db'}").trials)
    longer = {**OVERRIDES, "total_steps": 2 * TINY["total_steps"]}
    with pytest.raises(sweep.SweepError, match=r"another setting \(--total-steps 4096 -> 8192\)"):
        run(overrides=longer, seeds=2)
    with pytest.raises(sweep.SweepError, match=r"--total-steps 4096 -> 8192"):
        run(overrides=OVERRIDES, frames=2 * TINY["total_steps"], seeds=2)
    with pytest.raises(sweep.SweepError, match=r"--seeds 2 -> 1.*--study-name"):
        run(overrides=OVERRIDES, seeds=1)
    with pytest.raises(sweep.SweepError, match=r"sticky_action_prob"):
        run(overrides={**OVERRIDES, "sticky_action_prob": 0.25}, seeds=2)
    assert len(optuna.load_study(study_name="tiny", storage=f"sqlite:///{out / 'study.db'}").trials) == held


def test_total_steps_and_frames_are_one_option_of_the_sweep():
    """The sweep's frame budget is the agents' `--total-steps`; `--frames` is its alias (in both commands)."""
    parser = sweep.build_parser()
    for flag in ("--total-steps", "--frames"):
        assert parser.parse_args(["--algo", "pqn", "--out", "x", flag, "5000"]).frames == 5000


def test_a_pruner_that_must_prune_stops_the_trial_after_its_first_interval(tmp_path):
    never_good_enough = optuna.pruners.ThresholdPruner(lower=1e9)  # every reported return is below it
    study = sweep.optimize(
        "pqn",
        "maxatar/CartPole-v1",
        trials=1,
        out=tmp_path,
        overrides=OVERRIDES,
        space=SPACE,
        seeds=2,
        pruner=never_good_enough,
    )
    (trial,) = study.trials
    assert trial.state == optuna.trial.TrialState.PRUNED and list(trial.intermediate_values) == [1]
    rows = (tmp_path / "trials" / study.study_name / "trial-0000" / "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 2  # header, the two seeds' rows of the only interval
    assert not (tmp_path / "best_preset.json").exists()  # no completed trial, no best config
    assert json.loads((tmp_path / "summary.json").read_text())["trials"] == {"PRUNED": 1}


def test_a_crashed_trial_closes_its_tracked_runs_as_failed(tmp_path, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("the machine caught fire")

    monkeypatch.setattr(sweep.runner, "run_intervals", crash)
    store = tmp_path / "mlruns"
    with pytest.raises(RuntimeError, match="caught fire"):
        sweep.optimize(
            "pqn", "maxatar/CartPole-v1", trials=1, out=tmp_path, overrides=OVERRIDES, space=SPACE, seeds=2,
            track="mlflow", track_uri=str(store),
        )  # fmt: skip
    client = MlflowClient(tracking_uri=store.as_uri())
    parent_id = json.loads((tmp_path / "tracking.json").read_text())["mlflow"]["run_id"]
    parent = client.get_run(parent_id)
    (child,) = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent_id}'")
    assert parent.info.status == child.info.status == "FAILED"


def test_pruners_by_name():
    assert isinstance(sweep.make_pruner("hyperband", 20), optuna.pruners.HyperbandPruner)
    assert isinstance(sweep.make_pruner("median", 20), optuna.pruners.MedianPruner)
    assert isinstance(sweep.make_pruner("none", 20), optuna.pruners.NopPruner)
    with pytest.raises(sweep.SweepError, match="unknown pruner 'asha'"):
        sweep.make_pruner("asha", 20)


def test_bad_sweep_inputs_fail_clearly(tmp_path, capsys):
    run = lambda **kw: sweep.optimize("pqn", "maxatar/CartPole-v1", **{"trials": 1, "out": tmp_path, **kw})
    with pytest.raises(sweep.SweepError, match="--trials must be an integer >= 1, got 0"):
        run(trials=0)
    with pytest.raises(sweep.SweepError, match="--storage 'notadb://x': Optuna cannot open it"):
        run(storage="notadb://x")
    with pytest.raises(sweep.SweepError, match="'learning_rate' is not a pqn config field"):
        run(space={"learning_rate": {"low": 1e-4, "high": 1e-3}})
    with pytest.raises(sweep.SweepError, match="lr needs numbers low <= high"):
        run(space={"lr": {"low": 1e-3, "high": 1e-4}})
    with pytest.raises(sweep.SweepError, match="hidden is not a number field"):
        run(space={"hidden": {"low": 1, "high": 2}})
    for step, message in [(0, "lr's step must be a number > 0, got 0"), ("1", "lr's step must be a number")]:
        with pytest.raises(sweep.SweepError, match=message):
            run(space={"lr": {"low": 1e-4, "high": 1e-3, "step": step}})
    with pytest.raises(sweep.SweepError, match="num_envs's step must be a whole number > 0, got 0.5"):
        run(space={"num_envs": {"low": 2, "high": 8, "step": 0.5}})
    with pytest.raises(sweep.SweepError, match="lr takes a step or a log scale, not both"):
        run(space={"lr": {"low": 1e-4, "high": 1e-3, "step": 1e-4, "log": True}})
    with pytest.raises(sweep.SweepError, match="unknown tracker|invalid"):
        run(track="wandb")
    for argv, message in [
        (["--trials", "0"], "--trials must be an integer >= 1"),
        (["--total-trials", "0"], "--total-trials must be an integer >= 1"),
        ([], "give --trials N (trials this worker runs) or --total-trials N"),
        (["--trials", "1", "--heartbeat", "-1"], "--heartbeat must be a whole number of seconds >= 0"),
        (["--trials", "1", "--storage", "notadb://x"], "Optuna cannot open it"),
        (["--trials", "1", "--set", "nonsense=1"], "--set expects FIELD=VALUE"),
        (["--trials", "1", "--pruner", "asha"], "invalid choice: 'asha'"),
        (["--trials", "1", "--track", "wandb"], "invalid choice: 'wandb'"),
        *[
            (["--trials", "1", option, value], f"{option} must be an integer in 0 .. 2**32 - 1")
            for option in ("--seed", "--sampler-seed")
            for value in ("-1", str(2**64))
        ],
        (["--trials", "1", "--seed", str(2**32 - 1), "--seeds", "2"], "(and so must the last of its 2 seeds)"),
        *[
            (["--trials", "1", "--study-name", name], "--study-name must be a name of 1 to 255 bytes")
            for name in ("x" * 300, "é" * 128, "\n", " ", "a\nb", "a/b", "..")
        ],
        *[(["--trials", "1", "--timeout", t], "--timeout must be a number of seconds > 0") for t in ("-1", "0", "nan")],
        (["--trials", "1", "--track-uri", "mlruns"], "--track-uri needs --track mlflow or --track tensorboard"),
    ]:
        with pytest.raises(SystemExit) as stop:
            sweep.main(["--algo", "pqn", "--out", str(tmp_path), *argv])
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def test_a_space_file_that_is_a_fifo_or_damaged_is_one_line_and_the_interrupt_line_claims_no_files(
    tmp_path, capsys, monkeypatch
):
    argv = ["--algo", "pqn", "--env", "maxatar/CartPole-v1", "--trials", "1", "--out", str(tmp_path / "sweep")]
    os.mkfifo(tmp_path / "fifo.json")  # a plain read waits for a writer for ever
    (tmp_path / "deep.json").write_text("[" * 100_000)
    (tmp_path / "twice.json").write_text('{"lr": {"choices": [0.1]}, "lr": {"choices": [0.2]}}')
    for name, said in [
        ("fifo.json", "not a regular file"),
        ("deep.json", "deep.json': cannot read a JSON search space: its arrays or objects are nested too deeply"),
        ("twice.json", "twice.json': cannot read a JSON search space: the key 'lr' appears twice in one object"),
    ]:
        with pytest.raises(SystemExit) as stop:
            sweep.main([*argv, "--space", str(tmp_path / name)])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "sweep").exists()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "optimize", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep.main(argv)
    err = capsys.readouterr().err
    assert "interrupted; no trial had finished; run the same command again" in err and "summary.json" not in err


def test_a_trial_running_without_a_heartbeat_that_fills_the_study_is_explained(tmp_path, capsys):
    """With SQLite's default (no heartbeat), a trial whose worker was killed stays RUNNING and counts towards
    --total-trials: the worker that finds the study full says how to fail it."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=url, study_name="held", direction="maximize")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        study.ask()  # its worker was killed: RUNNING, no heartbeat
    sweep.optimize(
        "pqn", "maxatar/CartPole-v1", out=tmp_path, storage=url, study_name="held", total_trials=1,
        overrides=OVERRIDES, space=SPACE, seeds=2,
    )  # fmt: skip
    err = capsys.readouterr().err
    assert "already holds its 1 trials (--total-trials), 1 of them running; without a heartbeat (--heartbeat" in err
    assert f"`optuna tell --storage {url} --study-name held --trial-number 0 --state fail`" in err


def test_total_trials_counts_the_trials_of_the_whole_study(tmp_path, capsys):
    run = lambda **kw: sweep.optimize(
        "pqn", "maxatar/CartPole-v1", out=tmp_path, study_name="total", overrides=OVERRIDES, space=SPACE, seeds=2, **kw
    )
    assert [t.state for t in run(trials=5, total_trials=2).trials] == [optuna.trial.TrialState.COMPLETE] * 2
    assert len(run(total_trials=2).trials) == 2  # a study that holds its total runs nothing more
    assert "sweep: 'total' already holds its 2 trials (--total-trials), 0 of them running" in capsys.readouterr().err
    assert len(run(total_trials=3).trials) == 3


def test_a_heartbeat_by_default_on_a_server_database_only(tmp_path):
    assert sweep.heartbeat_seconds(f"sqlite:///{tmp_path / 'study.db'}", None) == 0
    assert sweep.heartbeat_seconds("postgresql+psycopg://host/optuna", None) == sweep.DEFAULT_HEARTBEAT
    assert sweep.heartbeat_seconds("mysql://host/optuna", 0) == 0
    storage = make_storage(f"sqlite:///{tmp_path / 'study.db'}", 5)
    assert storage.get_heartbeat_interval() == 5 and storage.grace_period == 10


def test_a_trial_whose_worker_died_is_failed_and_run_again(tmp_path, capsys):
    """A RUNNING trial whose heartbeat stopped (its worker died: simulated by a trial asked for and left) is
    failed by the next worker, which runs it again with the same parameters (here on SQLite, with
    `--heartbeat 1`; `test_sweep_postgres` kills a real worker on a PostgreSQL server)."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=make_storage(url, 1), study_name="dead", direction="maximize")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Optuna: a heartbeat is meant for Study.optimize
        dead = study.ask()
    dead.suggest_categorical("lr", [3e-4, 1e-3])
    study._storage.record_heartbeat(dead._trial_id)
    time.sleep(3.1)  # twice the heartbeat, and SQLite's clock counts whole seconds
    study = sweep.optimize(
        "pqn", "maxatar/CartPole-v1", out=tmp_path, storage=url, study_name="dead", heartbeat=1, total_trials=1,
        overrides=OVERRIDES, space=SPACE, seeds=2,
    )  # fmt: skip
    failed, retry = study.trials
    assert failed.state == optuna.trial.TrialState.FAIL and retry.state == optuna.trial.TrialState.COMPLETE
    assert retry.params["lr"] == failed.params["lr"] and retry.system_attrs["failed_trial"] == failed.number
    assert "trial 0 of 'dead' has had no heartbeat for 2 s (its worker stopped): marked failed and queued again" in (
        capsys.readouterr().err
    )


def test_workers_racing_to_create_the_database_try_again(tmp_path, monkeypatch):
    from sqlalchemy.exc import IntegrityError, OperationalError

    attempts, create_study = [], optuna.create_study

    def racing(**kwargs):  # the first attempt meets another worker's table, as on a new PostgreSQL database
        attempts.append(kwargs["study_name"])
        if len(attempts) == 1:
            raise IntegrityError(
                "CREATE TABLE studies", {}, Exception("duplicate key value violates unique constraint")
            )
        return create_study(**kwargs)

    monkeypatch.setattr(optuna, "create_study", racing)
    monkeypatch.setattr(sweep.time, "sleep", lambda seconds: None)
    study = sweep.load_study(f"sqlite:///{tmp_path / 'study.db'}", "raced", None, None)
    assert study.study_name == "raced" and attempts == ["raced", "raced"]

    def unreachable(**kwargs):
        attempts.append(kwargs["study_name"])
        raise OperationalError("connect", {}, Exception("connection refused"))

    monkeypatch.setattr(optuna, "create_study", unreachable)
    monkeypatch.setattr(study_storage, "make_storage", lambda url, heartbeat: url)  # which would connect to it first
    with pytest.raises(sweep.SweepError, match="Optuna cannot open it: .*connection refused"):
        sweep.load_study("postgresql+psycopg://nowhere/optuna", "raced", None, None)
    assert len(attempts) == 3  # not tried again: a database that cannot be reached is the user's to fix


def test_preset_files_are_checked(tmp_path, capsys):
    with pytest.raises(ValueError, match="cannot read it as JSON"):
        preset_values(pqn, str(tmp_path / "missing.json"))
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        preset_values(pqn, str(tmp_path / "list.json"))
    (tmp_path / "twice.json").write_text('{"lr": 0.1, "lr": 0.2}')  # which one counts, JSON leaves open
    with pytest.raises(ValueError, match=r"preset file '.*twice.json': cannot read it as JSON: the key 'lr' appears"):
        preset_values(pqn, str(tmp_path / "twice.json"))
    (tmp_path / "deep.json").write_text("[" * 100_000)
    with pytest.raises(ValueError, match=r"deep.json': cannot read it as JSON: its arrays or objects are nested"):
        preset_values(pqn, str(tmp_path / "deep.json"))
    (tmp_path / "other.json").write_text(json.dumps({"lr": 0.1, "buffer_size": 10}))
    with pytest.raises(ValueError, match=r"unknown config field\(s\) \['buffer_size'\]"):
        preset_values(pqn, str(tmp_path / "other.json"))
    with pytest.raises(SystemExit) as stop:
        cli.main("pqn", ["--preset", str(tmp_path / "missing.json"), "--out", str(tmp_path / "run")])
    assert stop.value.code == 2 and "invalid config: preset file" in capsys.readouterr().err


def test_sigterm_stops_a_sweep_as_ctrl_c_does(tmp_path, monkeypatch, stray_sigterm_fails):
    # A scheduler's SIGTERM reaches the study as Ctrl-C (KeyboardInterrupt), which Optuna records as a failed
    # trial and the trackers as KILLED runs, instead of killing the process with everything left RUNNING.
    def terminated_mid_study(*args, **kwargs):
        signal.raise_signal(signal.SIGTERM)
        pytest.fail("SIGTERM did not interrupt the study")

    monkeypatch.setattr(sweep, "optimize", terminated_mid_study)
    with pytest.raises(KeyboardInterrupt):
        sweep.main(["--algo", "pqn", "--out", str(tmp_path), "--trials", "1"])
    assert signal.getsignal(signal.SIGTERM) is stray_sigterm_fails


def test_redact_hides_the_passwords_of_urls_and_of_messages_that_quote_them():
    assert redact("postgresql+psycopg://alice:s3cret@db:5432/optuna") == "postgresql+psycopg://alice:***@db:5432/optuna"
    assert redact("mysql://u:p@ss@db/optuna?ssl=1") == "mysql://u:***@db/optuna?ssl=1"  # to the last @ of the host
    assert redact("https://h/x?a=1&password=abc&api_token=t0k#f") == "https://h/x?a=1&password=***&api_token=***#f"
    said = "API request to http://alice:s3cret@127.0.0.1:9/api/2.0/x?name=a failed"
    assert redact(said) == "API request to http://***@127.0.0.1:9/api/2.0/x?name=a failed"
    # A password that holds '/', '?', '#' or '@' runs to the last @, as SQLAlchemy reads it.
    for secret in ("S3cr/etPW", "a?b", "a#b", "p@ss/w"):
        url = f"postgresql+psycopg://alice:{secret}@127.0.0.1:1/optuna"
        assert redact(url) == "postgresql+psycopg://alice:***@127.0.0.1:1/optuna"
        assert redact(f"error: could not reach {url} (refused)") == f"error: could not reach {redact(url)} (refused)"
    # A token as an http(s) URL's user info, and secrets named in the query or the fragment.
    assert redact("http://TOKEN@host/x") == "http://***@host/x"
    assert redact("https://TOKEN:x-oauth-basic@host") == "https://***@host"
    assert redact("http://h/x?auth=A1&pw=B2#password=C3") == "http://h/x?auth=***&pw=***#password=***"
    for plain in ("postgresql://postgres@db/optuna", "http://host:8080/x", "sqlite:////tmp/a.db", "./mlruns"):
        assert redact(plain) == plain


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--storage", "postgresql+psycopg://alice:s3cret@127.0.0.1:{port}/optuna"], "Optuna cannot open it"),
        (["--track", "mlflow", "--track-uri", "http://alice:s3cret@127.0.0.1:{port}"], "no MLflow server"),
        (["--track", "mlflow", "--track-uri", "{file}"], "is a file, where a directory is needed"),
        (["--track", "tensorboard", "--track-uri", "{file}"], "is a file, where a directory is needed"),
    ],
)
def test_a_storage_or_tracking_uri_that_fails_is_one_line_without_its_password_and_leaves_nothing(
    tmp_path, capsys, argv, said
):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "file").write_text("not a directory")
    argv = [arg.format(port=port, file=tmp_path / "file") for arg in argv]
    out = tmp_path / "sweep"
    with pytest.raises(SystemExit) as stop:
        sweep.main(["--algo", "pqn", "--env", "maxatar/CartPole-v1", "--out", str(out), "--trials", "1", *argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and said in err, err
    assert "s3cret" not in err and ("***@127.0.0.1" in err or "s3cret" not in " ".join(argv))
    assert not out.exists()


@pytest.mark.parametrize("where", ["", "package"])
def test_an_out_that_is_empty_or_inside_the_installed_package_is_one_line_and_nothing_is_made(capsys, where):
    out = str(Path(sweep.__file__).parent / "sweep-out") if where == "package" else ""
    with pytest.raises(SystemExit) as stop:
        sweep.main(["--algo", "pqn", "--env", "maxatar/CartPole-v1", "--out", out, "--trials", "1"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "--out" in err, err
    assert not Path(sweep.__file__).parent.joinpath("sweep-out").exists()
