"""Runs that fail early or not at all: a bad config value is one `error:` line and exit status 2 before --out
exists, whether it comes from the command line, a preset file, `--set`, a sweep's search space or Python; a
tracker whose store fails mid-run is a warning and the run finishes; an MLflow server that is not there fails
the start in seconds; Ctrl-C stops a sweep with one line and exit status 130.

Nothing here mocks a config or a store: the configs are the agents' own, the stores MLflow's file store and
TensorBoard's event files, removed while the run writes to them. The runs use the tiny PQN CartPole config of
`test_tracking` (compiled once per process, shared with it).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maxatar_agents import commands
from maxatar_agents.algorithms import dqn, ppo, pqn, sac
from maxatar_agents.algorithms.fields import ConfigError, ConfigTypeError
from maxatar_agents.algorithms.registry import agent_module
from maxatar_agents.experiments import sweep, tracking
from maxatar_agents.run import checkpoint, cli
from maxatar_agents.run.configs import make_config
from tests import agent_lists
from tests.test_tracking import INTERVALS, TINY, tiny_args

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no network calls from the tests
ROOT = Path(__file__).resolve().parents[1]

# (algorithm, field, value, what the error line says): every one a value the config refuses.
BAD_VALUES = [
    ("dqn", "sticky_action_prob", 2, "sticky_action_prob must be a probability in [0, 1], got 2"),
    ("dqn", "obs_type", "rbg", "obs_type must be None or one of ('rgb', 'grayscale', 'flat'), got 'rbg'"),
    ("pqn", "env_setting", "foo", "env_setting: setting must be one of ('minatar', 'gymnax', 'pgx'), got 'foo'"),
    ("ppo", "hidden", [0], "hidden must hold integers in [1, 1,048,576], got (0,)"),
    ("sac", "hidden", "abc", "hidden must be a tuple of integers such as (64, 64), got 'abc'"),
    ("dqn", "lr", math.nan, "lr must be a finite number > 0, got nan"),
    ("dqn", "gamma", 1.5, "gamma must be in [0, 1], got 1.5"),
    ("pqn", "gamma", 7, "gamma must be in [0, 1], got 7"),
    ("sac", "actor_lr", 0, "actor_lr must be > 0, got 0"),
    ("sac", "critic_pessimism", 0.3, "critic_pessimism is used only with critic_target='blend', not 'min'"),
    ("ppo", "total_steps", 0, "total_steps must be in [1, 2,147,483,647], got 0"),
    ("pqn", "num_envs", 2.5, "num_envs must be an integer, got 2.5"),
    ("pqn", "keep_best", 1, "keep_best must be true or false, got 1"),
    ("dqn", "env_id", "Pong-v5", "env_id: unknown environment id 'Pong-v5'"),
    ("q_learning", "env_id", "maxatar/Breakout-v0", "env_id 'maxatar/Breakout-v0': breakout has no small discrete"),
    ("q_learning", "lr", 1.5, "lr must be in (0, 1], got 1.5"),
]
# Those the command line can give as text (text that is not of the field's type, such as 2.5 for an int, is
# refused by the option's parser itself, with argparse's message).
CLI_BAD = [case for case in BAD_VALUES if case[1] not in ("keep_best", "num_envs") and case[2] != "abc"]
MODULES = {name: agent_module(name) for name in agent_lists.agents()}
CARTPOLE = dict.fromkeys(agent_lists.cartpole_agents(), "CartPole-v1")


def as_text(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def env_args(algorithm: str, field: str) -> list[str]:
    return [] if field == "env_id" or algorithm not in CARTPOLE else ["--env", CARTPOLE[algorithm]]


def expect_usage_error(capsys, main, argv: list[str], message: str, out: Path) -> None:
    """`main(argv)` exits with status 2 and one line, `...: error: <message>...`, and leaves no --out."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and ": error: " in lines[0] and message in lines[0], err
    assert not out.exists()


@pytest.mark.parametrize("algorithm, field, value, message", CLI_BAD, ids=lambda c: str(c)[:24])
def test_a_bad_value_from_a_field_option_is_one_line_before_out_exists(
    capsys, tmp_path, algorithm, field, value, message
):
    out = tmp_path / "run"
    option = "--env" if field == "env_id" else f"--{field.replace('_', '-')}"
    argv = [*env_args(algorithm, field), option, as_text(value), "--out", str(out)]
    expect_usage_error(capsys, lambda a: cli.main(algorithm, a), argv, message, out)


@pytest.mark.parametrize("algorithm, field, value, message", CLI_BAD, ids=lambda c: str(c)[:24])
def test_a_bad_value_from_set_is_one_line_before_out_exists(capsys, tmp_path, algorithm, field, value, message):
    out = tmp_path / "run"
    argv = [*env_args(algorithm, field), "--set", f"{field}={as_text(value)}", "--out", str(out)]
    expect_usage_error(capsys, lambda a: cli.main(algorithm, a), argv, message, out)


@pytest.mark.parametrize("algorithm, field, value, message", BAD_VALUES, ids=lambda c: str(c)[:24])
def test_a_bad_value_from_a_preset_file_is_one_line_before_out_exists(
    capsys, tmp_path, algorithm, field, value, message
):
    out, preset = tmp_path / "run", tmp_path / "preset.json"
    preset.write_text(json.dumps({field: value}))  # NaN as JSON's NaN, which Python's json reads back
    argv = [*env_args(algorithm, field), "--preset", str(preset), "--out", str(out)]
    expect_usage_error(capsys, lambda a: cli.main(algorithm, a), argv, message, out)


@pytest.mark.parametrize("algorithm, field, value, message", BAD_VALUES, ids=lambda c: str(c)[:24])
def test_a_bad_value_from_python_raises_naming_the_field(algorithm, field, value, message):
    module = MODULES[algorithm]
    value = tuple(value) if isinstance(value, list) else value
    with pytest.raises((ValueError, TypeError)) as error:
        module.Config(**{field: value})
    assert isinstance(error.value, ConfigError) and error.value.field == field
    assert str(error.value).startswith(field) and message in str(error.value)
    if field not in ("env_id", "sticky_action_prob", "env_setting", "obs_type"):  # the environment's own words
        with pytest.raises(ConfigError, match=field):
            make_config(module, None if algorithm == "q_learning" else "maxatar/CartPole-v1", **{field: value})


def test_types_raise_type_errors_and_edge_values_are_accepted():
    for changes in [dict(hidden="abc"), dict(lr="0.1"), dict(double_q=1), dict(batch_size=True), dict(hidden=[64])]:
        with pytest.raises(ConfigTypeError):
            dqn.Config(**changes)
    with pytest.raises(TypeError, match="sticky_action_prob must be a number or None"):
        pqn.Config(sticky_action_prob="0.1")
    assert dqn.Config(gamma=1, sticky_action_prob=0, learning_starts=32).gamma == 1  # ints where floats go
    assert pqn.Config(gamma=0.0, sticky_action_prob=1.0, epsilon_end=0.0, max_grad_norm=0.0).gamma == 0.0
    assert ppo.Config(hidden=(), difficulty_ramping=None, obs_type="grayscale", obs_scale=2).hidden == ()
    with pytest.raises(ConfigError, match="obs_scale applies only to pixel observations"):
        ppo.Config(obs_scale=2)
    config = pqn.Config()
    with pytest.raises(ConfigError, match=r"tau must be in \(0, 1\], got 0"):
        dataclasses.replace(dqn.Config(), tau=0)
    with pytest.raises(ConfigError, match="epsilon_fraction"):
        dataclasses.replace(config, epsilon_fraction=0.0)


def test_checkpoint_every_must_not_be_negative(capsys, tmp_path):
    out = tmp_path / "run"
    argv = ["--env", "CartPole-v1", "--checkpoint-every", "-5", "--out", str(out)]
    message = "--checkpoint-every must be >= 0 frames"
    expect_usage_error(capsys, lambda a: cli.main("pqn", a), argv, message, out)


def test_a_sweep_refuses_bad_values_before_out_exists(capsys, tmp_path):
    out = tmp_path / "sweep"
    base = ["--algo", "pqn", "--env", "CartPole-v1", "--trials", "1", "--out", str(out)]
    main = sweep.main
    expect_usage_error(capsys, main, [*base, "--set", "gamma=7"], "gamma must be in [0, 1], got 7.0", out)
    expect_usage_error(capsys, main, [*base, "--set", "hidden=0"], "hidden must hold integers in [1, ", out)
    spaces = [
        ({"gamma": {"low": 0.9, "high": 1.5}}, "search space: gamma=1.5: gamma must be in [0, 1], got 1.5"),
        ({"lr": {"choices": [1e-3, 0]}}, "search space: lr=0: lr must be > 0, got 0"),
        ({"num_epochs": {"low": 1.5, "high": 3}}, "num_epochs=1.5: num_epochs must be an integer, got 1.5"),
        ({"hidden": {"choices": [[16], [0]]}}, "search space: hidden=(0,): hidden must hold integers in [1, "),
        ({"sticky_action_prob": {"choices": [0.1, 2]}}, "sticky_action_prob must be a probability"),
        ({"lr": {"choices": ["abc"]}}, "search space: lr: choice 'abc': could not convert"),
    ]
    for space, message in spaces:
        path = tmp_path / "space.json"
        path.write_text(json.dumps(space))
        expect_usage_error(capsys, main, [*base, "--space", str(path)], message, out)
    # A value refused only with the base's other fields is left to the trial, where others may make it valid.
    checked = sweep.load_space("pqn", {"num_minibatches": {"choices": [3, 4]}}, make_config(pqn, "CartPole-v1"))
    assert checked == {"num_minibatches": {"choices": [3, 4]}}
    with pytest.raises(sweep.SweepError, match=r"gamma must be in \[0, 1\], got 7"):
        sweep.optimize("pqn", "maxatar/CartPole-v1", trials=1, out=out, overrides={"gamma": 7})
    assert not out.exists()


def test_names_that_become_paths_and_unknown_keys_are_refused(capsys, tmp_path):
    out = tmp_path / "sweep"
    base = ["--algo", "pqn", "--env", "CartPole-v1", "--trials", "1", "--out", str(out)]
    for name in ("../../escaped-study", "", ".", "..", "a/b", "/abs"):
        expect_usage_error(capsys, sweep.main, [*base, "--study-name", name], "--study-name must be a name", out)
    space = tmp_path / "space.json"
    for entry, key in [({"low": 0.01, "high": 0.9, "Log": True}, "Log"), ({"choices": [0.1], "log": True}, "log")]:
        space.write_text(json.dumps({"lr": entry}))
        message = f"lr has unknown key(s) ['{key}']; an entry takes low, high, log, step (a range) or only choices"
        expect_usage_error(capsys, sweep.main, [*base, "--space", str(space)], message, out)
    preset = tmp_path / "preset.json"
    preset.write_text(json.dumps({"Lr": 0.1}))
    run = tmp_path / "run"
    argv = ["--preset", str(preset), "--out", str(run)]
    expect_usage_error(capsys, lambda a: cli.main("pqn", a), argv, "unknown config field(s) ['Lr']", run)
    with pytest.raises(ValueError, match="fields: env_id, "):
        make_config(pqn, None, str(preset))


def test_the_command_lines_exit_2_with_one_line_and_no_traceback(tmp_path):
    """The real entry points, in processes of their own: no traceback, status 2, --out never made."""
    out = tmp_path / "run"
    commands = [
        (
            ["maxatar_agents.q_learning", "--env", "maxatar/Breakout-v0"],
            "breakout has no small discrete state",
        ),
        (
            ["maxatar_agents.dqn", "--env", "CartPole-v1", "--sticky-action-prob", "2"],
            "sticky_action_prob must be",
        ),
    ]
    for argv, message in commands:
        done = subprocess.run(
            [sys.executable, "-m", *argv, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and message in done.stderr
        assert not out.exists()


EXTRA = 'python -m maxatar_agents.{}: error: {} is not installed: pip install "maxatar[{}]"'
MISSING = [  # the module hidden, the command, the one line it prints
    ("optax", ["dqn"], EXTRA.format("dqn", "optax", "agents")),
    ("matplotlib", ["evaluate", "runs"], EXTRA.format("evaluate", "matplotlib", "agents")),
    ("optuna", ["sweep", "--algo", "pqn", "--trials", "1"], EXTRA.format("sweep", "optuna", "sweep")),
    ("mlflow", ["pqn", "--track", "mlflow"], EXTRA.format("pqn", "mlflow", "track")),
    (
        "tensorboard",
        ["sweep", "--algo", "pqn", "--trials", "1", "--track", "tensorboard"],
        EXTRA.format("sweep", "tensorboard", "track"),
    ),
]


@pytest.mark.parametrize("hidden, argv, said", MISSING, ids=[" ".join(argv[:1] + argv[-2:]) for _, argv, _ in MISSING])
def test_a_missing_extra_is_one_line_naming_it_before_any_work(monkeypatch, capsys, tmp_path, hidden, argv, said):
    """Each command checks its extras (`maxatar.extras.require`) before it reads a file or makes --out; here
    one module of an extra looks uninstalled (tests/test_wheel.py runs the wheel without any)."""
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == hidden else found(name, *rest))
    with pytest.raises(SystemExit) as stop:
        commands.main([*argv, "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines() == [said]
    assert not (tmp_path / "out").exists()


# --- trackers that fail ---


class Exploding(tracking.Tracker):
    """A tracker whose store is gone: every call after `start` raises."""

    def __init__(self):
        self.calls = 0

    def log_values(self, step, values):
        self.calls += 1
        raise OSError(28, "No space left on device")

    def child(self, name):
        raise RuntimeError("the server went away\nwith a second line")


def test_a_guarded_tracker_warns_once_and_is_off_after(capsys):
    inner = Exploding()
    guarded = tracking.Guarded(inner, "mlflow")
    guarded.start(pqn.Config(), "minatar", [0])
    rows = [{"seed": 0, "frames": 8, "recent_return": 1.0}]
    guarded.log_metrics(8, rows)
    guarded.log_metrics(16, rows)
    guarded.log_artifacts([])
    guarded.finish({"frames_per_seed": 16})
    assert inner.calls == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "warning: --track mlflow failed, the run goes on without it (OSError: [Errno 28] No space left on device)"
    ]
    trial = tracking.Guarded(Exploding(), "tensorboard").child("trial-0000")
    assert type(trial) is tracking.Tracker  # untracked, not a crash
    assert capsys.readouterr().err.strip() == (
        "warning: --track tensorboard failed, the run goes on without it (RuntimeError: the server went away)"
    )
    with pytest.raises(ValueError, match="unknown run status 'DONE'"):  # a caller's mistake is not the store's
        guarded.finish(status="DONE")


@pytest.mark.parametrize("kind", ["mlflow", "tensorboard"])
def test_a_store_removed_mid_run_is_a_warning_and_the_run_finishes(capsys, tmp_path, kind):
    out, store = tmp_path / "run", tmp_path / "store"

    def remove_store(done: int) -> None:
        if done == 2:
            shutil.rmtree(store)

    summary = commands.run("pqn", tiny_args(out, "--track", kind, "--track-uri", str(store)), on_interval=remove_store)
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: --track {kind} failed, the run goes on"), err
    assert "Traceback" not in err
    assert summary["frames_per_seed"] == TINY["total_steps"]
    assert checkpoint.exists(out) and checkpoint.read_meta(out)["intervals_done"] == INTERVALS
    assert len((out / "metrics.csv").read_text().splitlines()) == 1 + 2 * INTERVALS  # header, 2 seeds
    assert (out / "summary.json").is_file()


def test_an_mlflow_server_that_is_not_there_fails_the_start_in_seconds(capsys, tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "run"
    argv = ["--env", "CartPole-v1", "--track", "mlflow", "--track-uri", f"http://127.0.0.1:{port}", "--out", str(out)]
    start = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        commands.agent("pqn", argv)
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1
    assert f"error: --track-uri 'http://127.0.0.1:{port}': no MLflow server at 127.0.0.1:{port}" in err
    assert not out.exists()  # a run that cannot start leaves no --out behind


# --- a sweep stopped by Ctrl-C ---


def test_ctrl_c_stops_a_sweep_with_one_line_and_status_130(tmp_path):
    """SIGINT once the first trial has ended (its summary.json and best_preset.json are written as it ends):
    status 130, one line, no traceback, and what the finished trial found is in --out."""
    out = tmp_path / "sweep"
    (tmp_path / "space.json").write_text(json.dumps({"lr": {"choices": [3e-4]}}))
    argv = ["--algo", "pqn", "--env", "CartPole-v1", "--trials", "100", "--out", str(out), "--pruner", "none"]
    argv += ["--space", str(tmp_path / "space.json"), *[f"--set={k}={v}" for k, v in TINY.items()]]
    process = subprocess.Popen(
        [sys.executable, "-m", "maxatar_agents.sweep", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "best_preset.json").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (out / "best_preset.json").exists(), "no trial ended"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "python -m maxatar_agents.sweep: interrupted" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"].get("COMPLETE", 0) >= 1 and summary["best_value"] is not None
    assert json.loads((out / "best_preset.json").read_text())["lr"] == 3e-4


# (algorithm, options, what the error line says): sizes and numbers past their bounds, refused before --out exists.
OUT_OF_BOUNDS = [
    ("pqn", ["--hidden", "100000,100000"], "the training state of 1 run(s) needs about 149.0 GiB"),
    ("dqn", ["--seeds", "100000000"], "the training state of 100000000 run(s) needs"),
    ("dqn", ["--num-envs", "100000000"], "num_envs must be in [1, 65,536], got 100000000"),
    ("dqn", ["--eval-episodes", "1000000000"], "eval_episodes must be in [1, 65,536], got 1000000000"),
    ("dqn", ["--keep-best-episodes", "100000000"], "keep_best_episodes must be in [1, 65,536], got 100000000"),
    ("dqn", ["--eval-max-steps", str(2**31)], "eval_max_steps must be in [1, 2,147,483,647], got 2147483648"),
    ("dqn", ["--frames", "1e30"], "total_steps must be in [1, 2,147,483,647], got 1"),
    ("dqn", ["--seed", "-1"], "--seed must be an integer in 0 .. 2**32 - 1, as a seed keeps 32 bits; got -1"),
    ("dqn", ["--seed", str(2**64)], f"as a seed keeps 32 bits; got {2**64}"),
    ("dqn", ["--seed", str(2**32 - 1), "--seeds", "2"], "(and so must the last of its 2 seeds)"),
    ("sac", ["--critic-pessimism", "0.5"], "critic_pessimism is used only with critic_target='blend', not 'min'"),
]


@pytest.mark.parametrize("algorithm, options, message", OUT_OF_BOUNDS, ids=lambda c: str(c)[:30])
def test_sizes_and_numbers_past_their_bounds_are_refused_before_out_exists(
    capsys, tmp_path, algorithm, options, message
):
    out = tmp_path / "run"
    argv = ["--env", "CartPole-v1", *options, "--out", str(out)]
    expect_usage_error(capsys, lambda a: cli.main(algorithm, a), argv, message, out)


def test_out_must_be_named_and_a_given_critic_pessimism_needs_the_blend_target(capsys, tmp_path):
    with pytest.raises(SystemExit):
        cli.main("dqn", ["--out", ""])
    assert capsys.readouterr().err.endswith("error: --out must name a directory, got ''\n")
    preset = tmp_path / "preset.json"
    preset.write_text(json.dumps({"critic_target": "mean", "critic_pessimism": 0.5}))
    with pytest.raises(ConfigError, match="critic_pessimism is used only with critic_target='blend', not 'mean'"):
        make_config(sac, None, str(preset))
    assert make_config(sac, None, str(preset), critic_target="blend").critic_pessimism == 0.5
