"""Hyperparameter search with Optuna: TPE sampling, pruning at every logging interval, resumable studies.

    python -m maxatar_agents.sweep --algo pqn --env maxatar/CartPole-v1 --trials 20 --out sweeps/pqn-cartpole

Each trial samples a config from the search space (the agent module's `SEARCH_SPACE`, or a JSON file of the same
form) on top of the preset and the fixed `--set` values, trains it with the runner one logging interval at a time
(all seeds in one program, as the agents' command line does), reports the seeds' mean recent return after every
interval (Optuna's step is the interval's number) and stops when the pruner says so (Hyperband by default; median
or none). A completed trial's value is the mean return of the final evaluation (greedy or most probable action).

The study lives in `--storage` (default `sqlite:///OUT/study.db`; the storage layer is `study`) under
`--study-name`: running the command again continues it. SQLite is storage for one machine; every machine that
runs the command with the same server database URL (PostgreSQL, `postgresql+psycopg://USER:PASSWORD@HOST/DB` with
`pip install "psycopg[binary]"`; MySQL: any URL Optuna's RDB storage accepts) works on the same study, which is
how Optuna scales out: `--total-trials N` stops every worker once the study holds N trials between them, and a
heartbeat (`--heartbeat`, on by default for a server database) lets the next worker fail the trial of a worker
that died (kill -9, a lost machine) and run it again (without one, SQLite's default, such a trial stays RUNNING and
counts towards `--total-trials`: the worker that finds the study full names it and the `optuna tell` command that
fails it); a worker waits out a database restart of up to the heartbeat's seconds
(`study.reconnecting_storage`), and past it stops with exit status 75. No password of a storage or tracking URL
is printed or saved (`redaction`). At the end, OUT holds `best_preset.json` (the best trial's
config, which `--preset OUT/best_preset.json` of the agents' command line accepts), `summary.json`, Optuna's
`history.png` and `importance.png` (PED-ANOVA importance: numpy only, no scikit-learn) and, per trial,
`trials/STUDY/trial-NNNN/metrics.csv` and `learning_curve.png`. With `--track`, one parent run holds a nested run
per trial (`tracking`).

A search space maps config fields to {"low": a, "high": b} (optionally "log": true, "step": s; an int field
samples integers) or {"choices": [...]} (a tuple field's choices as lists, e.g. [[64], [128, 128]]).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import shlex
import shutil
import sys
import time
import unicodedata
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from maxatar import files, sharding
from maxatar.checks import check_key_seeds
from maxatar_agents.algorithms.fields import ConfigError, config_error_text, field_types
from maxatar_agents.algorithms.registry import AGENT_MODULES, agent_module
from maxatar_agents.experiments import tracking
from maxatar_agents.experiments.redaction import redact
from maxatar_agents.experiments.study import (
    DEFAULT_HEARTBEAT,
    StorageLost,
    SweepError,
    check_same_setting,
    fail_stale_trials,
    heartbeat_seconds,
    load_study,
    require_optuna,
    trials_held,
)
from maxatar_agents.run import artifacts, datasets, interrupts, runner
from maxatar_agents.run.cli import EXIT_INTERRUPTED
from maxatar_agents.run.configs import (
    Parser,
    config_to_dict,
    default_preset,
    make_config,
    parse_assignments,
    parse_value,
)
from maxatar_agents.run.interrupts import stops_like_ctrl_c

PRUNERS = ("hyperband", "median", "none")
EXIT_STORAGE_LOST = 75  # sysexits' EX_TEMPFAIL, "try again later": the server database stayed out of reach


class InvalidTrial(Exception):
    """The sampled values make no valid config (e.g. a minibatch count that does not divide the rollout): the
    trial fails and the study goes on."""


class StudyFull(Exception):
    """The study already holds its `--total-trials` (another worker asked for a trial at the same moment): the
    trial is not run, fails (so it does not count) and this worker stops."""


# --- the search space ---


def load_space(algorithm: str, space: dict | str | Path | None, base: Any = None) -> dict[str, dict[str, Any]]:
    """The search space: the agent's default (its module's `SEARCH_SPACE`: step sizes, discount and the agent's main
    knobs, none of which changes how a run is cut into intervals, so pruners compare trials at equal frames), a
    dict, or a JSON file of one; checked against the agent's config fields and, with `base` (the config trials
    start from), each field's bounds and choices against the field's own checks (`_check_values`)."""
    if space is None:
        space = getattr(agent_module(algorithm), "SEARCH_SPACE", None)
        if space is None:
            raise SweepError(f"{algorithm} declares no SEARCH_SPACE: give one with --space FILE.json")
    elif not isinstance(space, dict):
        path = Path(space)
        try:
            space = files.read_json(path)  # a regular file only: a FIFO would block
        except (OSError, files.JSONError) as error:
            reason = getattr(error, "reason", None) or error.strerror or error
            raise SweepError(f"--space {str(path)!r}: cannot read a JSON search space: {reason}") from None
    if not isinstance(space, dict) or not space:
        raise SweepError(f"the search space must be a non-empty JSON object of fields, got {space!r}")
    hints = field_types(agent_module(algorithm).Config)
    for name, spec in space.items():
        if name not in hints:
            raise SweepError(f"search space: {name!r} is not a {algorithm} config field; fields: {', '.join(hints)}")
        _check_spec(name, spec, hints[name])
        if base is not None:
            _check_values(base, name, spec, hints[name])
    return space


def _check_values(base: Any, name: str, spec: dict[str, Any], kind: Any) -> None:
    """Each of a field's choices (or its low and high) in `base`, so that a value the field can never take
    (gamma 1.5, an lr of 0, text for a number) is refused before the study starts. A value refused only with
    the base's other fields (a minibatch count that does not divide the base's rollout) is left to the trial,
    where other sampled values may make it valid."""
    values = spec["choices"] if "choices" in spec else [spec["low"], spec["high"]]
    for value in values:
        if isinstance(value, list | str):  # as `sample` passes a choice through Optuna and back
            try:
                value = parse_value(",".join(map(str, value)) if isinstance(value, list) else value, kind)
            except ValueError as error:
                raise SweepError(f"search space: {name}: choice {value!r}: {error}") from None
        try:
            dataclasses.replace(base, **{name: value})
        except ConfigError as error:
            if error.field == name:
                raise SweepError(f"search space: {name}={value!r}: {error}") from None
        except (TypeError, ValueError):
            pass


# The keys of a search-space entry: a range for Optuna's suggest_int / suggest_float, or categorical choices.
RANGE_KEYS, CHOICE_KEYS = ("low", "high", "log", "step"), ("choices",)


def _check_spec(name: str, spec: Any, kind: Any) -> None:
    if not isinstance(spec, dict):
        raise SweepError(f"search space: {name} must be {{'low': .., 'high': ..}} or {{'choices': [..]}}, got {spec!r}")
    allowed = CHOICE_KEYS if "choices" in spec else RANGE_KEYS
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise SweepError(
            f"search space: {name} has unknown key(s) {unknown}; an entry takes {', '.join(RANGE_KEYS)} "
            f"(a range) or only {', '.join(CHOICE_KEYS)}"
        )
    if "choices" in spec:
        if not isinstance(spec["choices"], list) or not spec["choices"]:
            raise SweepError(f"search space: {name}'s choices must be a non-empty list, got {spec['choices']!r}")
        return
    if kind not in (int, float):
        raise SweepError(f"search space: {name} is not a number field; give it {{'choices': [..]}}")
    low, high = spec.get("low"), spec.get("high")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)) or not low <= high:
        raise SweepError(f"search space: {name} needs numbers low <= high, got low={low!r}, high={high!r}")
    if spec.get("log") and low <= 0:
        raise SweepError(f"search space: {name} is sampled on a log scale, so low must be > 0, got {low!r}")
    if "step" in spec:
        step, whole = spec["step"], kind is int
        if isinstance(step, bool) or not isinstance(step, int if whole else int | float) or not step > 0:
            number = "a whole number" if whole else "a number"
            raise SweepError(f"search space: {name}'s step must be {number} > 0, got {step!r}")
        if spec.get("log"):
            raise SweepError(f"search space: {name} takes a step or a log scale, not both")


def sample(trial: Any, space: dict[str, dict[str, Any]], hints: dict[str, Any]) -> dict[str, Any]:
    """The trial's values of the searched fields. Optuna's categorical choices are plain values, so a tuple
    field's choices go through it as text (`64,64`) and are parsed back."""
    values = {}
    for name, spec in space.items():
        kind = hints[name]
        if "choices" in spec:
            encoded = [",".join(map(str, c)) if isinstance(c, list) else c for c in spec["choices"]]
            chosen = trial.suggest_categorical(name, encoded)
            values[name] = parse_value(chosen, kind) if isinstance(chosen, str) else chosen
        elif kind is int:
            values[name] = trial.suggest_int(
                name, spec["low"], spec["high"], step=spec.get("step", 1), log=spec.get("log", False)
            )
        else:
            values[name] = trial.suggest_float(
                name, spec["low"], spec["high"], step=spec.get("step"), log=spec.get("log", False)
            )
    return values


# --- one trial ---


class Objective:
    """Trains one trial's config and returns its final evaluation, reporting to Optuna after each interval."""

    def __init__(self, algorithm, env_id, preset, fixed, space, seeds, out: Path, parent: tracking.Tracker, total=None):
        self.algorithm, self.env_id, self.preset, self.fixed = algorithm, env_id, preset, fixed
        self.space, self.seeds, self.out, self.parent = space, seeds, out, parent
        self.hints = field_types(agent_module(algorithm).Config)
        self.total = total  # --total-trials
        self.running: int | None = None  # the trial this worker runs, from its start until Optuna records its end

    def __call__(self, trial) -> float:
        optuna = require_optuna()
        self.running = trial.number
        if self.total is not None and trials_held(trial.study, before=trial.number) >= self.total:
            trial.study.stop()
            raise StudyFull(f"the study already holds its {self.total} trials (--total-trials); trial not run")
        values = sample(trial, self.space, self.hints)
        try:
            config = make_config(agent_module(self.algorithm), self.env_id, self.preset, **{**self.fixed, **values})
        except (TypeError, ValueError) as error:
            raise InvalidTrial(f"trial {trial.number}: {values} make no valid config: {error}") from None
        trial.set_user_attr("config", config_to_dict(config))
        plan = runner.Plan(self.algorithm, config, self.seeds, self.preset, None)
        runs = plan.runs()
        inputs = datasets.inputs_for(config)  # an offline agent's dataset; nothing for the others
        shapes = {"inputs": runner.shapes_of(inputs)} if inputs else {}
        parts = runner.bind_inputs(runner.compiled(self.algorithm, config, len(runs), **shapes), inputs)
        sched = parts["program"].schedule
        progress = runner.Progress(parts["init"](runner.seed_keys(self.seeds)), 0, [], 0.0)
        directory = self.out / "trials" / trial.study.study_name / f"trial-{trial.number:04d}"
        directory.mkdir(parents=True, exist_ok=True)
        tracker = self.parent.child(directory.name)
        tracker.start(config, self.preset, self.seeds, extra={"trial": trial.number})

        def after_interval(metrics: dict[str, np.ndarray], elapsed: float) -> None:
            tracker.log_metrics(progress.done * sched.frames_per_interval, progress.rows[-len(runs) :], tuple(runs[0]))
            recent = metrics["recent_return"]
            if np.any(np.isfinite(recent)):  # no episode has ended yet: nothing to compare
                trial.report(float(np.nanmean(recent)), progress.done)
            if trial.should_prune():
                raise optuna.TrialPruned(f"pruned after {progress.done} of {sched.num_intervals} intervals")

        try:
            runner.run_intervals(parts, progress, runs, None, after_interval)
        except optuna.TrialPruned:
            self._close(tracker, directory, progress, {"pruned_at_interval": progress.done}, "KILLED")
            raise
        except BaseException as error:  # Ctrl-C or a crash: the trial's tracked run is closed, not left RUNNING
            tracker.finish(status="KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
            raise
        evaluation = artifacts.final_eval(sharding.to_numpy(parts["evaluate"](progress.state)))
        trial.set_user_attr("eval_return_per_seed", evaluation["return_per_seed"])
        summary = {
            "value": evaluation["return_mean"],
            "frames_per_seed": sched.total_frames,
            "wall_time": progress.wall,
        }
        self._close(tracker, directory, progress, summary, "FINISHED")
        return evaluation["return_mean"]

    def _close(self, tracker, directory: Path, progress, summary: dict, status: str) -> None:
        """The trial's metrics.csv and learning curve, handed to its tracker, which is then closed."""
        artifacts.write_metrics(directory / "metrics.csv", progress.rows)
        files = [directory / "metrics.csv"]
        if progress.rows:
            title = f"{self.algorithm.upper()} trial {directory.name.split('-')[-1]}"
            artifacts.plot_learning_curve(directory / "learning_curve.png", progress.rows, title)
            files.append(directory / "learning_curve.png")
        tracker.log_artifacts(files)
        tracker.finish(summary, status)


# --- the study ---


NAME_BYTES = 255  # the longest name of one directory (NAME_MAX on Linux and macOS)


def check_name(option: str, name: Any) -> None:
    """A name that becomes a directory under --out (`trials/<study name>/`) stays one directory there, one a
    shell lists and types: text that is not blank, without '/' or control characters (a newline), not '.' or
    '..', and at most `NAME_BYTES` bytes long."""
    if (
        not isinstance(name, str)
        or name.strip() in ("", ".", "..")
        or "/" in name
        or any(unicodedata.category(c) == "Cc" for c in name)
        or len(name.encode(errors="replace")) > NAME_BYTES
    ):
        raise SweepError(
            f"{option} must be a name of 1 to {NAME_BYTES} bytes (it names a directory), not blank, '.' or '..', "
            f"without '/' or control characters, got {name!r}"
        )


def make_pruner(pruner: Any, num_intervals: int):
    """An Optuna pruner from its name (`PRUNERS`), or the pruner object itself. Hyperband's budget runs from one
    interval to the whole run."""
    optuna = require_optuna()
    if isinstance(pruner, optuna.pruners.BasePruner):
        return pruner
    if pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=max(num_intervals, 1), reduction_factor=3)
    if pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=max(1, num_intervals // 4))
    if pruner == "none":
        return optuna.pruners.NopPruner()
    raise SweepError(f"unknown pruner {pruner!r}; known: {', '.join(PRUNERS)} (or an optuna.pruners object)")


def optimize(
    algorithm: str,
    env_id: str | None = None,
    *,
    trials: int | None = None,
    out: str | Path,
    total_trials: int | None = None,
    heartbeat: int | None = None,
    storage: str | None = None,
    study_name: str | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    space: dict | str | Path | None = None,
    seeds: int = 1,
    first_seed: int = 0,
    frames: int | None = None,
    pruner: Any = "hyperband",
    sampler_seed: int | None = None,
    timeout: float | None = None,
    track: str | None = None,
    track_uri: str | None = None,
):
    """Run `trials` trials of a study (more, on top of those it holds when it already exists) and write the
    best preset and plots into `out`; returns the `optuna.Study`. With `total_trials`, stop (or do not start)
    once the study holds that many trials (`trials_held`), whichever worker ran them: the way to ask several
    workers sharing a database for N trials between them (`trials` then caps this worker's share, or is None).

        study = optimize("pqn", "maxatar/CartPole-v1", trials=20, out="sweeps/pqn-cartpole")
        study.best_params, study.best_value

    `overrides` fixes config fields for every trial (`frames` is `total_steps`, `--total-steps` on the command
    line); a study continued with another setting than it was run with is refused (`check_same_setting`);
    `pruner` is "hyperband",
    "median", "none" or an `optuna.pruners` object; `storage` any database URL Optuna accepts (default a SQLite
    file in `out`), with a heartbeat every `heartbeat` seconds (`heartbeat_seconds`: by default one for a
    server database, none for SQLite); `track` "mlflow" or "tensorboard" logs a parent run with a nested run
    per trial.
    """
    if study_name is not None:
        check_name("--study-name", study_name)
    optuna = require_optuna()
    if algorithm not in AGENT_MODULES:
        raise SweepError(f"unknown algorithm {algorithm!r}; known: {', '.join(AGENT_MODULES)}")
    if trials is None and total_trials is None:
        raise SweepError("give --trials N (trials this worker runs) or --total-trials N (trials of the study)")
    for option, count in (("--trials", trials), ("--total-trials", total_trials)):
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise SweepError(f"{option} must be an integer >= 1, got {count!r}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise SweepError(f"--seeds must be an integer >= 1, got {seeds!r}")
    if frames is not None and frames < 1:
        raise SweepError(f"--total-steps (--frames) must be >= 1, got {frames!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0):
        raise SweepError(f"--timeout must be a number of seconds > 0, got {timeout!r}")  # NaN is not > 0
    try:
        check_key_seeds("--seed", first_seed, seeds)
        if sampler_seed is not None:
            check_key_seeds("--sampler-seed", sampler_seed)  # numpy's RandomState takes 32 bits
        tracking.check_track_uri(track, track_uri)
    except ValueError as error:
        raise SweepError(str(error)) from None
    module = agent_module(algorithm)
    fixed = {**(overrides or {}), **({} if frames is None else {"total_steps": frames})}
    try:
        preset = preset or default_preset(module, env_id or module.Config.env_id)
        base = make_config(module, env_id, preset, **fixed)
    except (TypeError, ValueError) as error:
        raise SweepError(config_error_text(error)) from None
    searched = load_space(algorithm, space, base)
    try:
        files.check_out(out)  # not the working directory unnamed, nor an installed package
    except ValueError as error:
        raise SweepError(str(error)) from None
    out = Path(out)
    storage = storage or f"sqlite:///{(out / 'study.db').resolve()}"
    heartbeat = heartbeat_seconds(storage, heartbeat)
    study_name = study_name or f"{algorithm}-{base.env_id.split('/')[-1]}"
    sampler = optuna.samplers.TPESampler(seed=sampler_seed)
    num_intervals = module.make_program(base).schedule.num_intervals
    seed_list = list(range(first_seed, first_seed + seeds))
    settings = {"algorithm": algorithm, "study_name": study_name, "trials": trials, "pruner": str(pruner)}
    settings.update(total_trials=total_trials, heartbeat=heartbeat, storage=redact(storage))
    made_out = not out.exists()
    # The tracking URI is checked first (a tracker that cannot start stops the sweep; one that fails later is a
    # warning, `tracking.Guarded`), then the storage; a sweep that cannot start leaves no --out of its own.
    try:
        parent = tracking.guarded(tracking.make_tracker(track, track_uri, out, name=study_name), track)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise SweepError(f"cannot create --out {str(out)!r}: {error}") from None
        study = load_study(storage, study_name, sampler, make_pruner(pruner, num_intervals), heartbeat)
        check_same_setting(study, base, searched, seeds, storage)
        parent.start(base, preset, seed_list, extra={**settings, "space": json.dumps(searched)})
    except ValueError as error:  # a SweepError too
        if made_out:
            shutil.rmtree(out, ignore_errors=True)
        raise SweepError(str(error)) from None
    objective = Objective(algorithm, base.env_id, preset, fixed, searched, seed_list, out, parent, total_trials)

    def log_trial(study, trial) -> None:
        """As each trial ends: summary.json and best_preset.json (`write_results`, without the plots), so that
        an interrupted study leaves what its finished trials found; and the parent run's view of the study,
        each completed trial's value and the best so far (a pruned trial carries its last reported value,
        but only completed trials count for the best)."""
        objective.running = None  # Optuna recorded its end
        write_results(study, algorithm, out, plots=False)
        interrupts.check()  # between trials: a Ctrl-C whose KeyboardInterrupt was lost
        if trial.state == optuna.trial.TrialState.COMPLETE:
            parent.log_values(trial.number, {"trial_value": trial.value, "best_value": study.best_value})
        if total_trials is not None and not room_left(study):
            study.stop()

    def room_left(study) -> bool:
        """Whether the study holds fewer than --total-trials trials, once those of dead workers are failed
        (and queued again, for this worker to run)."""
        if trials_held(study) < total_trials:
            return True
        if heartbeat:
            fail_stale_trials(study)
        return trials_held(study) < total_trials

    try:
        with quiet_interrupted_trials():
            if heartbeat:  # first, the trials of workers that died: failed, and queued again
                fail_stale_trials(study)
            if total_trials is None or room_left(study):
                study.optimize(
                    objective, n_trials=trials, timeout=timeout, catch=(InvalidTrial, StudyFull), callbacks=[log_trial]
                )
            else:
                running = [t.number for t in study.get_trials(False, states=(optuna.trial.TrialState.RUNNING,))]
                note = "" if heartbeat or not running else without_heartbeat(running, storage, study_name)
                print(
                    f"sweep: {study_name!r} already holds its {total_trials} trials (--total-trials), {len(running)} "
                    f"of them running{note}",
                    file=sys.stderr,
                )
    except BaseException as error:  # Ctrl-C or a crash: the parent run is closed too, not left RUNNING
        parent.finish(status="KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        if isinstance(error, KeyboardInterrupt):
            with contextlib.suppress(Exception):  # the interrupted trial counted (as failed) in summary.json
                write_results(study, algorithm, out, plots=False)
        if isinstance(error, StorageLost):
            raise StorageLost(f"{error}; {trial_left(objective.running, heartbeat)}") from None
        raise
    summary = write_results(study, algorithm, out)
    parent.log_artifacts([out / name for name in ("summary.json", "best_preset.json", "history.png", "importance.png")])
    parent.finish({k: v for k, v in summary.items() if k in ("best_value", "best_trial")})
    return study


def without_heartbeat(running: list[int], storage: str, study_name: str) -> str:
    """What to do about running trials recorded without a heartbeat, of which no worker can tell whether their
    worker died: such a trial stays RUNNING and counts towards --total-trials until someone fails it."""
    return (
        f"; without a heartbeat (--heartbeat SECONDS) a trial whose worker died stays RUNNING and counts: if no "
        f"worker runs trial {running[0]} any more, fail it with `optuna tell --storage {shlex.quote(redact(storage))} "
        f"--study-name {shlex.quote(study_name)} --trial-number {running[0]} --state fail` (and so for the others)"
    )


def trial_left(number: int | None, heartbeat: int) -> str:
    """What becomes of the trial a worker that lost its database was running (`StorageLost`)."""
    if number is None:
        return "no trial of this worker was running"
    if not heartbeat:
        return f"its trial {number} stays RUNNING there (without --heartbeat, no worker fails it)"
    return (
        f"its trial {number} stays RUNNING there until, once the database is back, a worker that starts a trial "
        f"more than {2 * heartbeat} s after the trial's last heartbeat marks it failed and runs it again"
    )


@contextlib.contextmanager
def quiet_interrupted_trials():
    """Optuna logs a trial that Ctrl-C (or SIGTERM, `stops_like_ctrl_c`) ended as failed, with the
    KeyboardInterrupt's traceback; inside, those two warnings are left out (the command line says it was
    interrupted in one line)."""
    logger = logging.getLogger("optuna.study._optimize")
    interrupted: set[str] = set()

    def keep(record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and issubclass(record.exc_info[0], KeyboardInterrupt):
            interrupted.add(message.split(" failed", 1)[0])  # "Trial N"
            return False
        return not any(message.startswith(f"{trial} failed with value") for trial in interrupted)

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def write_results(study, algorithm: str, out: Path, plots: bool = True) -> dict[str, Any]:
    """summary.json, best_preset.json (when a trial completed) and, unless `plots` is False, the plots;
    returns the summary. Each file is replaced whole, so an interruption never leaves half of one."""
    optuna = require_optuna()
    states = [t.state.name for t in study.trials]
    summary: dict[str, Any] = {
        "algorithm": algorithm,
        "study_name": study.study_name,
        "trials": {state: states.count(state) for state in sorted(set(states))},
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if complete:
        best = study.best_trial
        summary.update(best_trial=best.number, best_value=best.value, best_params=best.params)
        files.write_json(out / "best_preset.json", best.user_attrs["config"])
    if plots:
        summary["plots"] = plot(study, out) if complete else []
    else:  # those of an earlier call, until the end of this one draws them again
        summary["plots"] = [name for name in ("history.png", "importance.png") if (out / name).is_file()]
    files.write_json(out / "summary.json", summary)
    return summary


def plot(study, out: Path) -> list[str]:
    """Optuna's optimisation history and parameter importance (PED-ANOVA, which needs only numpy) as PNGs;
    returns the names written (importance needs at least two completed trials that differ)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    optuna = require_optuna()
    from optuna.visualization import matplotlib as optuna_plots

    written = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        figures = {
            "history.png": lambda: optuna_plots.plot_optimization_history(study),
            "importance.png": lambda: optuna_plots.plot_param_importances(
                study, evaluator=optuna.importance.PedAnovaImportanceEvaluator()
            ),
        }
        for name, draw in figures.items():
            try:
                axes = draw()
            except (ValueError, RuntimeError) as error:
                print(f"sweep: no {name} ({error})", file=sys.stderr)
                continue
            figure = axes.figure if hasattr(axes, "figure") else axes.flat[0].figure
            figure.tight_layout()
            figure.savefig(out / name, dpi=120)
            plt.close(figure)
            written.append(name)
    return written


# --- the command line ---


def build_parser() -> argparse.ArgumentParser:
    """The sweep's options."""
    parser = Parser(
        prog="python -m maxatar_agents.sweep",
        description="Tune an agent's hyperparameters with Optuna (TPE, pruning at every logging interval); "
        "rerun with the same --storage and --study-name to continue a study, from any machine.",
    )
    parser.add_argument("--algo", required=True, choices=sorted(AGENT_MODULES), help="the agent to tune")
    parser.add_argument("--env", help="environment id (default: the agent's Config default)")
    parser.add_argument(
        "--trials", type=int, help="trials this process runs at most (added to the study's; default: no limit)"
    )
    parser.add_argument(
        "--total-trials",
        type=int,
        metavar="N",
        help="stop once the study holds N trials, those of every worker on --storage together (finished or "
        "running; a failed one does not count); give --trials, --total-trials or both",
    )
    parser.add_argument("--out", required=True, help="directory for study.db, best_preset.json, plots, trials/")
    parser.add_argument(
        "--storage",
        help="Optuna storage URL (default sqlite:///OUT/study.db, for one machine; for several, a server "
        "database: postgresql+psycopg://USER:PASSWORD@HOST/DB, mysql://...; its password is never printed)",
    )
    parser.add_argument(
        "--heartbeat",
        type=int,
        metavar="SECONDS",
        help="a running trial's heartbeat in the database; one silent for twice that (its worker died) is "
        f"failed by the next worker and run again (default {DEFAULT_HEARTBEAT} for a server database, 0 (none) "
        "for SQLite). A worker waits out a server database that stops answering (a restart) for up to this "
        f"long ({DEFAULT_HEARTBEAT} s with 0), then stops with exit status {EXIT_STORAGE_LOST}",
    )
    parser.add_argument("--study-name", help="the study in the storage (default ALGO-ENV)")
    parser.add_argument(
        "--preset", help="the preset (or preset JSON file) trials start from (default: chosen by --env)"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="fix a config field in every trial"
    )
    parser.add_argument("--space", help="JSON file of the search space (default: the agent module's SEARCH_SPACE)")
    parser.add_argument("--pruner", default="hyperband", choices=PRUNERS, help="default hyperband")
    parser.add_argument("--seeds", type=int, default=1, help="seeds trained together per trial (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument(
        "--total-steps",
        "--frames",
        dest="frames",
        type=int,
        metavar="FRAMES",
        help="frames per seed per trial, the agents' --total-steps (--frames is an alias, in both commands); "
        "default: the preset's total_steps",
    )
    parser.add_argument("--sampler-seed", type=int, help="seed of the TPE sampler")
    parser.add_argument("--timeout", type=float, help="stop starting trials after this many seconds")
    parser.add_argument(
        "--track", type=tracking.track_kind, choices=tracking.KINDS, help="log a parent run with a nested run per trial"
    )
    parser.add_argument(
        "--track-uri", metavar="URI", help="MLflow tracking URI (default ./mlruns) or TensorBoard log dir"
    )
    return parser


def parse_set(items: list[str], algorithm: str) -> dict[str, Any]:
    """--set FIELD=VALUE items as {field: value} in the fields' types (`configs.parse_assignments`, as the
    agents' command line reads them, without its comma lists: a sweep searches with `--space`)."""
    try:
        return parse_assignments(items, agent_module(algorithm).Config)
    except ValueError as error:
        raise SweepError(str(error)) from None


# The options `main` hands to `optimize` under their own names.
OPTIMIZE_OPTIONS = (
    *("trials", "out", "total_trials", "heartbeat", "storage", "study_name", "preset", "space", "seeds", "frames"),
    *("pruner", "sampler_seed", "timeout", "track", "track_uri"),
)


def main(argv: list[str] | None = None):
    """The sweep's command line: bad input exits with status 2 and one `error:` line; SIGTERM stops it as
    Ctrl-C does (the running trial and its tracked run are closed as interrupted), which prints one line and
    raises KeyboardInterrupt (`command_line` turns it into exit status 130)."""
    args = build_parser().parse_args(argv)
    try:
        with stops_like_ctrl_c():
            overrides = parse_set(args.set, args.algo)
            options = {name: getattr(args, name) for name in OPTIMIZE_OPTIONS}
            study = optimize(args.algo, args.env, overrides=overrides, first_seed=args.seed, **options)
    except SweepError as error:
        print(f"python -m maxatar_agents.sweep: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except StorageLost as error:
        print(f"python -m maxatar_agents.sweep: error: {error}", file=sys.stderr)
        raise SystemExit(EXIT_STORAGE_LOST) from None
    except KeyboardInterrupt:
        summary = Path(args.out) / "summary.json"
        kept = (
            f"the study keeps its finished trials and {summary} (and best_preset.json) what they found"
            if summary.is_file()
            else "no trial had finished"
        )
        print(
            f"\npython -m maxatar_agents.sweep: interrupted; {kept}; run the same command again to continue it",
            file=sys.stderr,
        )
        raise
    if any(t.value is not None for t in study.trials):
        print(
            f"best trial {study.best_trial.number}: {study.best_value:.2f} with {study.best_params}; "
            f"train it: python -m maxatar_agents.{args.algo} --preset {Path(args.out) / 'best_preset.json'} --out DIR",
            file=sys.stderr,
        )
    return study


def command_line(argv: list[str] | None = None) -> None:
    """`python -m maxatar_agents.sweep`: `main`, with Ctrl-C or SIGTERM ending the process with status 130
    (after `main`'s one line) instead of a traceback, as the agents' command line does."""
    try:
        main(argv)
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INTERRUPTED) from None


if __name__ == "__main__":
    command_line()
