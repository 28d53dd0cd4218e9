"""Experiment tracking for the agents' runs and sweeps, on MLflow or TensorBoard (`--track`).

A `Tracker` receives a run's config when it starts, its metrics at every logged point, the files the run
leaves (learning curve, GIF, checkpoint, summary) and its summary at the end; `child(name)` opens a nested run
(a sweep's trial). The base class does nothing: it is what a run without `--track` uses, so the training loop
never asks whether one is set. Each metric is logged per seed (`recent_return/seed0`) and as the mean over the
seeds (`recent_return/mean`; MLflow's file store keeps a metric in a file named after it, so the mean cannot
be plain `recent_return` next to the `recent_return/` folder of the seeds). The step is frames per seed.

The libraries are optional (`pip install "maxatar[track]"`) and imported only when a tracker is made.

* MLflow: `uri` is any tracking URI; the default `./mlruns` (or any local path) is MLflow's file store. The
  experiment is `$MLFLOW_EXPERIMENT_NAME`, else "maxatar". The run's id is kept in the run directory
  (`tracking.json`), so `--resume` continues the same MLflow run.
* TensorBoard: event files written with TensorBoard's own protocol buffers and event writer (no TensorFlow or
  torch): scalars, the config as text and as HParams, the PNG and GIF as images. Files are copied into the
  log directory's `files/`, which TensorBoard cannot show but keeps with the run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import shutil
import socket
import sys
import time
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from maxatar import files
from maxatar.extras import require
from maxatar_agents.experiments.redaction import one_line, redact
from maxatar_agents.run.cli import Extension, RunHooks
from maxatar_agents.run.configs import config_to_dict
from maxatar_agents.run.runner import Plan

# The trackers, each with the library it needs (from the `track` extra).
LIBRARIES = {"mlflow": "mlflow", "tensorboard": "tensorboard"}
KINDS = tuple(LIBRARIES)
RUN_FILE = "tracking.json"  # in the run directory: the MLflow run that --resume continues
DEFAULT_EXPERIMENT = "maxatar"
STATUSES = ("FINISHED", "KILLED", "FAILED")  # MLflow's words: completed, interrupted (or pruned), crashed
PROBE_SECONDS = 5.0  # how long a remote MLflow server has to accept a connection when a run starts
# The port of a tracking URI that names none, by scheme (MLflow's server, or the database of its SQL store).
DEFAULT_PORTS = {"http": 80, "https": 443, "postgresql": 5432, "mysql": 3306, "mssql": 1433}
# MLflow's HTTP retries while a run logs (its defaults retry for about four minutes, the run waiting) and when
# it starts (where the connection probe has already found the server); variables the user set win.
HTTP_LIMITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}
HTTP_LIMITS_AT_START = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


class Tracker(RunHooks):
    """The tracking interface, a run's hooks (`run.cli.RunHooks`) and more; this base class records nothing (no
    `--track`)."""

    def start(self, config: Any, preset: str | None, seeds: list[int], *, resume: bool = False, extra=None) -> None:
        """Open the run: its config, preset and seeds (and `extra` parameters) as parameters. With `resume`,
        continue the run this directory was tracked in before, without logging the parameters again."""

    def log_metrics(self, step: int, rows: list[dict[str, Any]], labels: Iterable[str] = ("seed",)) -> None:
        """One logged point: `rows` holds one row per run (its `labels`: the seed, and in a grid sweep the
        swept values; then the metrics); `step` is frames per seed."""
        self.log_values(step, metric_values(rows, tuple(labels)))

    def log_values(self, step: int, values: dict[str, float]) -> None:
        """Named numbers at a step, as they are."""

    def log_artifacts(self, paths: Iterable[Path]) -> None:
        """Attach files to the run (those that do not exist are skipped)."""

    def finish(self, summary: dict[str, Any] | None = None, status: str = "FINISHED") -> None:
        """Close the run with its summary (numbers become final metrics) and a status from `STATUSES`."""

    def child(self, name: str) -> Tracker:
        """A nested run inside this one (a sweep's trial)."""
        return Tracker()


class Guarded(Tracker):
    """A tracker whose store failing cannot stop the run: after `start`, the first error of any call is one
    warning line on stderr naming the tracker and the error, and the tracker is off for the rest of the run
    (metrics.csv and the checkpoint are the run's record). `start` fails with a ValueError, which the command
    lines report as a usage error, unless `soft_start` (a sweep's trial, whose study goes on untracked)."""

    def __init__(self, inner: Tracker, label: str, soft_start: bool = False):
        self.inner: Tracker | None = inner
        self.label, self.soft_start = label, soft_start

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.inner is None:
            return None
        try:
            return getattr(self.inner, method)(*args, **kwargs)
        except Exception as error:  # whatever the library raises: the run matters more than its tracking
            self.inner = None
            warn(f"warning: --track {self.label} failed, the run goes on without it ({one_line(error)})")
            return None

    def start(self, config, preset, seeds, *, resume=False, extra=None):
        if self.soft_start or self.inner is None:
            self._call("start", config, preset, seeds, resume=resume, extra=extra)
            return
        try:
            self.inner.start(config, preset, seeds, resume=resume, extra=extra)
        except ValueError:
            raise
        except Exception as error:
            raise ValueError(f"--track {self.label}: cannot start the run: {one_line(error)}") from None

    def log_metrics(self, step, rows, labels=("seed",)):
        self._call("log_metrics", step, rows, labels)

    def log_values(self, step, values):
        self._call("log_values", step, values)

    def log_artifacts(self, paths):
        self._call("log_artifacts", list(paths))

    def finish(self, summary=None, status="FINISHED"):
        _check_status(status)
        self._call("finish", summary, status)

    def child(self, name):
        child = self._call("child", name)
        return Tracker() if child is None else Guarded(child, f"{self.label} ({name})", soft_start=True)


def guarded(tracker: Tracker, label: str | None) -> Tracker:
    """`tracker` behind a `Guarded` (a tracker that records nothing as it is)."""
    return tracker if label is None or type(tracker) is Tracker else Guarded(tracker, label)


def warn(line: str) -> None:
    """One line on stderr, above a progress bar if one is showing."""
    try:
        from tqdm import tqdm

        tqdm.write(line, file=sys.stderr)
    except ImportError:
        print(line, file=sys.stderr)


def make_tracker(kind: str | None, uri: str | None, run_dir: Path, name: str | None = None) -> Tracker:
    """The tracker for `--track KIND --track-uri URI` of a run writing into `run_dir` (named `name`, by default
    the directory's name). `kind` None tracks nothing. TensorBoard writes to `run_dir/tensorboard`, or with a
    URI (a log directory shared by many runs) to `URI/name`; MLflow to the tracking URI, default `./mlruns`."""
    run_dir = Path(run_dir)
    name = name or run_dir.resolve().name
    if kind is None:
        return Tracker()
    if kind == "mlflow":
        return MlflowTracker(uri or "./mlruns", run_dir, name)
    if kind == "tensorboard":
        return TensorBoardTracker(run_dir / "tensorboard" if uri is None else Path(uri) / name)
    raise ValueError(f"unknown tracker {kind!r}; known: {', '.join(KINDS)}")


def check_track_uri(kind: str | None, uri: str | None) -> None:
    """`--track-uri` says where a tracker logs: without `--track`, nothing would be logged there."""
    if uri is not None and kind is None:
        raise ValueError("--track-uri needs --track mlflow or --track tensorboard")


def track_kind(kind: str) -> str:
    """`--track KIND`, read as the options are parsed: a `MissingExtra` (`pip install "maxatar[track]"`) before
    any work unless the tracker's library is installed."""
    if kind in LIBRARIES:
        require("track", LIBRARIES[kind])
    return kind


def _import(module: str):
    """Import a module of the `track` extra, or raise `MissingExtra` naming the extra."""
    require("track", module.split(".")[0])
    return importlib.import_module(module)


def _params(config: Any, preset: str | None, seeds: list[int], extra: dict[str, Any] | None) -> dict[str, str]:
    """The run's parameters as text: config fields (tuples as `64,64`), preset, seeds, then `extra`."""
    values = {**config_to_dict(config), "preset": preset, "seeds": seeds, **(extra or {})}
    return {k: ",".join(map(str, v)) if isinstance(v, list | tuple) else str(v) for k, v in values.items()}


def metric_values(rows: list[dict[str, Any]], labels: tuple[str, ...] = ("seed",)) -> dict[str, float]:
    """Each run's value as `name/seed<s>` (in a grid sweep `name/<field>-<value>/seed<s>`), `name/mean` the
    mean over the finite ones (NaN if none), and `wall_time` once."""
    found: dict[str, float] = {}
    runs = ["/".join([*(f"{k}-{row[k]}" for k in labels if k != "seed"), f"seed{row['seed']}"]) for row in rows]
    for name in [k for k in rows[0] if k not in (*labels, "frames", "wall_time")]:
        values = [float(row[name]) for row in rows]
        found.update({f"{name}/{run}": value for run, value in zip(runs, values, strict=True)})
        finite = [v for v in values if math.isfinite(v)]
        found[f"{name}/mean"] = sum(finite) / len(finite) if finite else float("nan")
    if "wall_time" in rows[0]:
        found["wall_time"] = float(rows[-1]["wall_time"])
    return found


def _final_numbers(summary: dict[str, Any]) -> dict[str, float]:
    """A summary's numbers (not booleans) as `summary/<key>`, the final metrics trackers log."""
    numbers = {k: v for k, v in summary.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return {f"summary/{k}": float(v) for k, v in numbers.items()}


def _not_logged_yet(values: dict[str, float], step: int, logged_through: dict[str, int]) -> dict[str, float]:
    """`values` without those already logged at `step` or later: a run resumed after a hard kill trains again,
    identically, the intervals after its last checkpoint, which the killed process had logged."""
    return {k: v for k, v in values.items() if step > logged_through.get(k, -1)}


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise ValueError(f"unknown run status {status!r}; known: {', '.join(STATUSES)}")


# --- MLflow ---


@contextlib.contextmanager
def _http_limits(limits: dict[str, str]):
    """MLflow's HTTP retry and timeout variables set to `limits` inside (those the user set are kept)."""
    added = {k: v for k, v in limits.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def _probe_server(uri: str) -> None:
    """For a tracking URI on a server (http(s), or a database: `DEFAULT_PORTS`), a ValueError unless its host
    accepts a connection within `PROBE_SECONDS` (MLflow's own client would retry for minutes first)."""
    parts = urllib.parse.urlsplit(uri)
    scheme = parts.scheme.split("+")[0]  # postgresql+psycopg: the database, through a driver
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return
    port = parts.port or DEFAULT_PORTS[scheme]
    try:
        with socket.create_connection((parts.hostname, port), timeout=PROBE_SECONDS):
            pass
    except OSError as error:
        reason = f"no answer within {PROBE_SECONDS:g} s" if isinstance(error, TimeoutError) else error.strerror
        server = "MLflow server" if scheme.startswith("http") else f"{scheme} server"
        raise ValueError(
            f"--track-uri {redact(uri)!r}: no {server} at {parts.hostname}:{port} ({reason or error})"
        ) from None


def _check_directory(what: str, path: Path) -> None:
    """A ValueError unless `path` (`what` it is, for the message) is a directory, or one that can be made (its
    nearest existing parent is a writable directory)."""
    existing = Path(path).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{what} {str(path)!r}: {str(existing)!r} is a file, where a directory is needed")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(path)!r}: the directory {str(existing)!r} is not writable")


def _mlflow_uri(uri: str) -> str:
    """A local path as an absolute `file:` URI (so the store does not depend on the working directory later);
    anything with a scheme (sqlite:///..., http://..., databricks) as given."""
    if "://" in uri or uri.startswith(("file:", "databricks")):
        return uri
    return Path(uri).resolve().as_uri()


class MlflowTracker(Tracker):
    """A run in an MLflow tracking store, through `MlflowClient` (no global active run, so nested runs and
    several trackers in one process do not interfere)."""

    def __init__(self, uri: str, run_dir: Path | None, name: str, parent_id: str | None = None):
        self.uri, self.run_dir, self.name, self.parent_id = _mlflow_uri(uri), run_dir, name, parent_id
        if self.uri.startswith("file:"):
            # MLflow 3 keeps its file store only on request ("maintenance mode"); ./mlruns is what we promise.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.mlflow = _import("mlflow")
        self.entities = _import("mlflow.entities")
        if self.uri.startswith("file:"):
            _check_directory("--track-uri", Path(urllib.parse.unquote(urllib.parse.urlsplit(self.uri).path)))
        _probe_server(self.uri)
        try:
            with _http_limits(HTTP_LIMITS_AT_START):
                self.client = self.mlflow.MlflowClient(tracking_uri=self.uri)
                self.experiment_id = self._experiment()
        except Exception as error:  # MLflow's own, or its store's (a database's, a file system's)
            raise ValueError(f"--track-uri {redact(uri)!r}: MLflow cannot use it: {one_line(error)}") from None
        self.run_id: str | None = None
        self.logged_through: dict[str, int] = {}  # see log_values

    def _experiment(self) -> str:
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME", DEFAULT_EXPERIMENT)
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name)
        except self.mlflow.exceptions.MlflowException:  # another process created it first
            return self.client.get_experiment_by_name(name).experiment_id

    def _saved_run(self) -> str | None:
        """The run recorded in the run directory for this store, if it still exists."""
        path = None if self.run_dir is None else self.run_dir / RUN_FILE
        if path is None or not os.path.lexists(path):
            return None
        try:
            saved = files.read_json(path)  # a regular file only: a FIFO would block
        except OSError as error:
            raise ValueError(f"cannot read {path}: {error.strerror or error}; remove it to start a new run") from None
        except files.JSONError as error:  # its message names the file
            raise ValueError(f"{error}; remove it to start a new run") from None
        saved = saved.get("mlflow") if isinstance(saved, dict) else None
        if not isinstance(saved, dict) or not all(isinstance(saved.get(k), str) for k in ("tracking_uri", "run_id")):
            raise ValueError(f"{path} names no MLflow run (tracking_uri and run_id); remove it to start a new run")
        if saved["tracking_uri"] not in (self.uri, redact(self.uri)):  # as written before, or now
            return None
        try:
            return self.client.get_run(saved["run_id"]).info.run_id
        except self.mlflow.exceptions.MlflowException:
            return None

    def start(self, config, preset, seeds, *, resume=False, extra=None):
        with _http_limits(HTTP_LIMITS):
            self._start(config, preset, seeds, resume, extra)

    def _start(self, config, preset, seeds, resume, extra):
        self.run_id = self._saved_run() if resume else None
        if self.run_id is not None:
            self.client.update_run(self.run_id, status="RUNNING")
            history = self.client.get_metric_history
            names = self.client.get_run(self.run_id).data.metrics
            self.logged_through = {name: max(m.step for m in history(self.run_id, name)) for name in names}
            return
        tags = {"mlflow.parentRunId": self.parent_id} if self.parent_id else {}
        run = self.client.create_run(self.experiment_id, run_name=self.name, tags=tags)
        self.run_id = run.info.run_id
        params = [self.entities.Param(k, v) for k, v in _params(config, preset, seeds, extra).items()]
        self.client.log_batch(self.run_id, params=params)
        if self.run_dir is not None:
            record = {"mlflow": {"tracking_uri": redact(self.uri), "run_id": self.run_id}}
            files.write_json(self.run_dir / RUN_FILE, record)

    def log_values(self, step, values):
        values = _not_logged_yet(values, step, self.logged_through)
        now = int(time.time() * 1000)
        metrics = [self.entities.Metric(k, float(v), now, int(step)) for k, v in values.items()]
        if metrics:
            with _http_limits(HTTP_LIMITS):
                self.client.log_batch(self.run_id, metrics=metrics)

    def log_artifacts(self, paths):
        with _http_limits(HTTP_LIMITS):
            for path in map(Path, paths):
                if path.is_file():
                    self.client.log_artifact(self.run_id, str(path))

    def finish(self, summary=None, status="FINISHED"):
        _check_status(status)
        if summary:
            self.log_values(summary.get("frames_per_seed", 0), _final_numbers(summary))
        with _http_limits(HTTP_LIMITS):
            self.client.set_terminated(self.run_id, status)

    def child(self, name):
        return MlflowTracker(self.uri, None, name, parent_id=self.run_id)


# --- TensorBoard ---


class EventWriter:
    """An event file in `logdir`, as TensorBoard's `EventFileWriter` writes it (its name, its first event, its
    records), but written in the calling thread: EventFileWriter's writing thread, when the log directory
    fails (removed, full), prints its traceback and dies, where here the error reaches `Guarded`. Each write
    appends to the file by name, so a removed directory is an error, not writes into a deleted file."""

    _count = 0

    def __init__(self, logdir: Path, events: Any):
        from tensorboard.compat import tf
        from tensorboard.summary.writer.record_writer import RecordWriter

        EventWriter._count += 1
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{self._count}"
        self.records = RecordWriter(tf.io.gfile.GFile(str(Path(logdir) / name), "wb"))
        self.add_event(events.Event(wall_time=time.time(), file_version="brain.Event:2"))
        self.flush()

    def add_event(self, event: Any) -> None:
        self.records.write(event.SerializeToString())

    def flush(self) -> None:
        self.records.flush()

    def close(self) -> None:
        self.records.close()


class TensorBoardTracker(Tracker):
    """Event files in one log directory (a run of `tensorboard --logdir` shows it; a child is a subdirectory)."""

    def __init__(self, logdir: Path):
        self.logdir = Path(logdir)
        self.proto = _import("tensorboard.compat.proto.summary_pb2")
        self.events = _import("tensorboard.compat.proto.event_pb2")
        _check_directory("the TensorBoard log directory", self.logdir)  # made when the run starts
        self.writer = None
        self.step = 0
        self.logged_through: dict[str, int] = {}  # see log_values

    def _write(self, summary, step: int) -> None:
        self.writer.add_event(self.events.Event(wall_time=time.time(), step=int(step), summary=summary))

    def _text(self, tag: str, text: str, step: int) -> None:
        from tensorboard.plugins.text.summary_v2 import text_pb

        self._write(text_pb(tag, text), step)

    def start(self, config, preset, seeds, *, resume=False, extra=None):
        from tensorboard.plugins.hparams.summary_v2 import hparams_pb

        try:
            self.logdir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ValueError(f"cannot create the TensorBoard log directory {str(self.logdir)!r}: {error}") from None
        if resume:
            self.logged_through = self._last_scalar_steps()
        self.writer = EventWriter(self.logdir, self.events)
        if resume:
            return
        params = _params(config, preset, seeds, extra)
        self._text(
            "config", "\n".join(["| field | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in params.items())]), 0
        )
        self._write(hparams_pb(params), 0)
        self.writer.flush()

    def _last_scalar_steps(self) -> dict[str, int]:
        """Each scalar's highest step in this log directory's event files."""
        from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader

        # The raw records, as written (the plain loader turns scalars into tensors).
        events = (
            self.events.Event.FromString(record)
            for path in sorted(self.logdir.glob("events.out.tfevents.*"))
            for record in RawEventFileLoader(str(path)).Load()
        )
        last: dict[str, int] = {}
        for event in events:
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    last[value.tag] = max(last.get(value.tag, -1), event.step)
        return last

    def log_values(self, step, values):
        values = _not_logged_yet(values, step, self.logged_through)
        if values:
            scalars = [self.proto.Summary.Value(tag=k, simple_value=float(v)) for k, v in values.items()]
            self._write(self.proto.Summary(value=scalars), step)
            self.writer.flush()
        self.step = step

    def log_artifacts(self, paths):
        from PIL import Image

        files = self.logdir / "files"
        files.mkdir(exist_ok=True)
        for path in [Path(p) for p in paths if Path(p).is_file()]:
            shutil.copy2(path, files / path.name)
            if path.suffix.lower() in (".png", ".gif"):
                with Image.open(path) as image:
                    width, height = image.size
                encoded = self.proto.Summary.Image(
                    height=height, width=width, colorspace=4, encoded_image_string=path.read_bytes()
                )
                self._write(
                    self.proto.Summary(value=[self.proto.Summary.Value(tag=path.stem, image=encoded)]), self.step
                )
        self.writer.flush()

    def finish(self, summary=None, status="FINISHED"):
        _check_status(status)
        step = (summary or {}).get("frames_per_seed", self.step)
        if summary:
            self.log_values(step, _final_numbers(summary))
            self._text("summary", f"```\n{json.dumps(summary, indent=1)}\n```", step)
        self._text("status", status, step)
        self.writer.close()

    def child(self, name):
        return TensorBoardTracker(self.logdir / name)


# --- `--track` on every agent's command line: a run's hooks ---


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--track", type=track_kind, choices=KINDS, help="log config, metrics and files to MLflow/TensorBoard"
    )
    parser.add_argument(
        "--track-uri",
        metavar="URI",
        help="MLflow tracking URI (default ./mlruns) or TensorBoard log directory (default OUT/tensorboard)",
    )


def run_hooks(args: argparse.Namespace, plan: Plan, out: Path, lead: bool) -> Tracker:
    """--track: the run's tracker (process 0's; the others track nothing), started with the plan's config; a
    resumed run continues its MLflow run. A tracker that cannot start is a usage error (a ValueError); one that
    fails later is a warning, and the run goes on without it (`Guarded`)."""
    check_track_uri(args.track, args.track_uri)
    extra = {"algorithm": plan.algorithm, **({"sweep": plan.sweep} if plan.sweep else {})}
    tracker = guarded(make_tracker(args.track if lead else None, args.track_uri, out), args.track)
    tracker.start(plan.config, plan.preset, plan.seeds, resume=plan.meta is not None, extra=extra)
    return tracker


COMMAND_LINE = Extension(add_options, run_hooks)
