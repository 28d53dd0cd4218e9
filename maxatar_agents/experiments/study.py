"""Where an Optuna study lives: its storage (SQLite on one machine, a server database shared by workers, with
heartbeats that let a live worker fail and re-queue a dead worker's trial, and calls that wait out a database
restart), opening it when workers race, the setting every trial of a study shares, and the trials that count
towards `--total-trials`. The sweep's driver (`sweep`) runs trials on it."""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time
import warnings
from typing import Any

from maxatar.extras import require
from maxatar_agents.algorithms.grid import SweepError
from maxatar_agents.experiments.redaction import one_line, redact
from maxatar_agents.run.configs import config_to_dict

# Seconds between a running trial's heartbeats in a server database (`--heartbeat`; SQLite: none unless asked
# for). A trial whose heartbeat is older than twice that is stale: the next worker to start a trial marks it
# failed and queues it again with the same parameters, up to `STALE_RETRIES` times.
DEFAULT_HEARTBEAT = 60
STALE_RETRIES = 2


class StorageLost(BaseException):
    """The server database stayed out of reach longer than a worker waits for it (`reconnect_seconds`). Not an
    Exception, as Ctrl-C is not: it passes through Optuna's handling of a failed trial, which would only ask the
    lost database again (and end with an error of its own)."""


def require_optuna():
    """Optuna, or `MissingExtra` naming the `sweep` extra."""
    require("sweep", "optuna")
    import optuna

    return optuna


def heartbeat_seconds(storage: str, heartbeat: int | None) -> int:
    """`--heartbeat`: as given (0: none), or by default `DEFAULT_HEARTBEAT` for a server database and none
    for SQLite (one machine, where a worker that died is seen by whoever restarts it)."""
    if heartbeat is None:
        return 0 if storage.startswith("sqlite") else DEFAULT_HEARTBEAT
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, int) or heartbeat < 0:
        raise SweepError(f"--heartbeat must be a whole number of seconds >= 0 (0: none), got {heartbeat!r}")
    return heartbeat


def is_server(storage: str) -> bool:
    """Whether the storage URL names a database server (shared by machines; it may restart) rather than SQLite."""
    return not storage.startswith("sqlite")


def reconnect_seconds(heartbeat: int) -> int:
    """How long a worker waits for a server database that stopped answering (a restart, a network cut) before it
    stops: its heartbeat interval (`DEFAULT_HEARTBEAT` without one). A trial whose worker waited that long has a
    heartbeat at most twice that old when the database is back, so no other worker takes it for dead."""
    return heartbeat or DEFAULT_HEARTBEAT


def make_storage(storage: str, heartbeat: int = 0):
    """Optuna's RDB storage for the database URL `storage`. With `heartbeat` (seconds), each running trial
    records a heartbeat that often, and a trial whose heartbeat is older than twice that (its worker died)
    is marked failed by the next worker that starts a trial and queued again with the same parameters (up to
    `STALE_RETRIES` times), instead of staying RUNNING forever. On a server database, a call that loses the
    connection is tried again for up to `reconnect_seconds` (`reconnecting_storage`)."""
    optuna = require_optuna()
    if not is_server(storage):
        if not heartbeat:
            return storage  # Optuna makes the storage itself, as before heartbeats
        kind, options = optuna.storages.RDBStorage, {}
    else:  # pool_pre_ping: a connection the database closed (a restart) is replaced
        kind, options = reconnecting_storage(), {"engine_kwargs": {"pool_pre_ping": True}}
        if not heartbeat:
            return kind(storage, **options)
    retry = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)  # Optuna >= 4.9's name
    keyword = "failed_trial_callback" if retry is None else "heartbeat_stale_trial_callback"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        retry = (retry or optuna.storages.RetryFailedTrialCallback)(max_retry=STALE_RETRIES)

    def retry_and_say(study, trial) -> None:
        retried = len(trial.system_attrs.get("retry_history", []))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            retry(study, trial)
        again = "queued again" if retried < STALE_RETRIES else f"not run again (retried {retried} times already)"
        print(
            f"sweep: trial {trial.number} of {study.study_name!r} has had no heartbeat for {2 * heartbeat} s "
            f"(its worker stopped): marked failed and {again}",
            file=sys.stderr,
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return kind(
            storage, heartbeat_interval=heartbeat, grace_period=2 * heartbeat, **{keyword: retry_and_say}, **options
        )


@functools.cache
def reconnecting_storage() -> type:
    """Optuna's `RDBStorage` whose calls wait out a database that stopped answering: a call whose connection
    failed is tried again with backoff (0.25 s doubling to 4 s) while the outage (which every thread's calls
    share) has lasted less than `reconnect_seconds(heartbeat)`, saying in one line that the database is out of
    reach and then that it is back. Past that, the call (and every later one) raises `StorageLost`; the
    heartbeat's thread then records nothing more, and leaves the loss to the worker's own next call. Opening
    the storage is not tried again: a wrong URL is reported at once."""
    optuna = require_optuna()

    class ReconnectingStorage(optuna.storages.RDBStorage):
        def __init__(self, url: str, **kwargs: Any):
            super().__init__(url, **kwargs)
            self.wait_seconds = reconnect_seconds(kwargs.get("heartbeat_interval") or 0)
            self.down_since: float | None = None
            self.lost = threading.Event()

        def retried(self, method, *args, **kwargs):
            pause = 0.25
            while not self.lost.is_set():
                try:
                    result = method(self, *args, **kwargs)
                except Exception as error:
                    if not _connection_failed(error):
                        raise
                    now = time.monotonic()
                    if self.down_since is None:
                        self.down_since = now
                        print(
                            f"sweep: the database {redact(self.url)} is out of reach ({_reason(error)}); trying "
                            f"again for up to {self.wait_seconds} s",
                            file=sys.stderr,
                        )
                    if now - self.down_since >= self.wait_seconds:
                        self.reason = _reason(error)
                        self.lost.set()
                        break
                    self.lost.wait(min(pause, self.down_since + self.wait_seconds - now))
                    pause = min(2 * pause, 4.0)
                    continue
                if self.down_since is not None:
                    print(
                        f"sweep: the database is back after {time.monotonic() - self.down_since:.1f} s",
                        file=sys.stderr,
                    )
                    self.down_since = None
                return result
            raise StorageLost(
                f"lost the database {redact(self.url)}: out of reach for {self.wait_seconds} s ({self.reason})"
            )

        def record_heartbeat(self, trial_id: int) -> None:
            with contextlib.suppress(StorageLost):  # the heartbeat's thread: the worker's next call reports it
                self.retried(optuna.storages.RDBStorage.record_heartbeat, trial_id)

    def retrying(method):
        return functools.wraps(method)(lambda self, *args, **kwargs: self.retried(method, *args, **kwargs))

    for name, method in vars(optuna.storages.RDBStorage).items():  # its calls, which reach the database
        public = not name.startswith("_") or name == "_get_stale_trial_ids"
        if public and callable(method) and name not in vars(ReconnectingStorage):
            setattr(ReconnectingStorage, name, retrying(method))
    return ReconnectingStorage


def _connection_failed(error: BaseException) -> bool:
    """Whether a storage error is a lost or refused connection (SQLAlchemy's OperationalError or
    InterfaceError, which Optuna wraps in a StorageInternalError), rather than a query's own."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    while error is not None and not isinstance(error, OperationalError | InterfaceError):
        error = error.__cause__
    return error is not None


def _reason(error: BaseException) -> str:
    """The driver's first line of a lost connection's error (`connection refused`, `server closed the
    connection unexpectedly`), redacted."""
    while error.__cause__ is not None:
        error = error.__cause__
    return one_line(error).split(": ", 1)[-1]


def load_study(storage: str, study_name: str, sampler, pruner, heartbeat: int = 0):
    """Create the study in `storage` (with `heartbeat`: `make_storage`), or continue it when it exists there.
    Workers that start together on a new database may race to create its tables or the study: a failed
    attempt is tried again (three times in all)."""
    optuna = require_optuna()
    from sqlalchemy.exc import SQLAlchemyError

    for attempt in range(3):
        try:
            return optuna.create_study(
                storage=make_storage(storage, heartbeat),
                study_name=study_name,
                sampler=sampler,
                pruner=pruner,
                direction="maximize",
                load_if_exists=True,
            )
        except SQLAlchemyError as error:  # e.g. another worker created the same table or study just now
            if attempt == 2 or not _raced(error):
                raise SweepError(f"--storage {redact(storage)!r}: Optuna cannot open it: {one_line(error)}") from None
            time.sleep(0.5 + attempt)
        except (ValueError, ImportError) as error:
            raise SweepError(f"--storage {redact(storage)!r}: Optuna cannot open it: {one_line(error)}") from None
    raise AssertionError("unreachable")


SETTING_ATTR = "setting"  # the study's user attribute: what every trial of it shares (`check_same_setting`)


def check_same_setting(study, base: Any, searched: dict, seeds: int, storage: str) -> None:
    """A study's trials compare only if they share everything but the searched fields: the frame budget
    (`total_steps`), the environment, the preset's other fields and the number of seeds. The first worker
    records them in the study; a worker continuing it with another setting (`--total-steps 50000` on a study
    of 100000-frame trials) stops with an error naming the fields, instead of mixing its trials into the
    study. A study from an earlier version, which recorded none, is compared with its first trial's config."""
    setting = {k: v for k, v in config_to_dict(base).items() if k not in searched}
    setting["seeds"] = seeds
    recorded = study.user_attrs.get(SETTING_ATTR)
    if recorded is None:
        earlier = [t.user_attrs["config"] for t in study.get_trials(deepcopy=False) if "config" in t.user_attrs]
        if earlier:
            recorded = {k: v for k, v in earlier[0].items() if k in setting}
            recorded["seeds"] = seeds  # not recorded then
        else:
            study.set_user_attr(SETTING_ATTR, setting)
            return
    changed = sorted(k for k in set(setting) | set(recorded) if setting.get(k) != recorded.get(k))
    if changed:
        flags = {"total_steps": "--total-steps", "env_id": "--env", "seeds": "--seeds"}
        what = ", ".join(f"{flags.get(k, k)} {recorded.get(k)!r} -> {setting.get(k)!r}" for k in changed)
        raise SweepError(
            f"study {study.study_name!r} in {redact(storage)} was run with another setting ({what}); its trials would "
            "not compare: give the same options, or start another study with --study-name (or another --out)"
        )
    if SETTING_ATTR not in study.user_attrs:
        study.set_user_attr(SETTING_ATTR, setting)


def _raced(error: Exception) -> bool:
    """Whether a database error is one that another worker doing the same thing at once causes (a unique key
    or a table created twice), rather than a database that cannot be reached."""
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    return isinstance(error, IntegrityError | ProgrammingError)


def trials_held(study, before: int | None = None) -> int:
    """The trials that count towards `--total-trials`: finished ones (completed or pruned) and running ones;
    with `before` (a trial's number), only the running ones numbered below it, so that of two workers' trials
    started at once the later gives way. A failed trial does not count: a stale one is queued again (and
    counts when it runs), an invalid config's place goes to the next sample."""
    state = require_optuna().trial.TrialState
    held = study.get_trials(deepcopy=False, states=(state.COMPLETE, state.PRUNED, state.RUNNING))
    return sum(1 for t in held if before is None or t.state != state.RUNNING or t.number < before)


def fail_stale_trials(study) -> None:
    """Optuna's `fail_stale_trials` where the storage has a heartbeat: trials whose worker died are marked
    failed and queued again."""
    optuna = require_optuna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
