"""Where an Optuna study lives: its storage (SQLite on one machine, a server database shared by workers, with
heartbeats that let a live worker fail and re-queue a dead worker's trial), opening it when workers race, the
setting every trial of a study shares, and the trials that count towards `--total-trials`. The sweep's driver
(`sweep`) runs trials on it."""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any

from maxatar_agents.configs import config_to_dict

# Seconds between a running trial's heartbeats in a server database (`--heartbeat`; SQLite: none unless asked
# for). A trial whose heartbeat is older than twice that is stale: the next worker to start a trial marks it
# failed and queues it again with the same parameters, up to `STALE_RETRIES` times.
DEFAULT_HEARTBEAT = 60
STALE_RETRIES = 2


class SweepError(ValueError):
    """Bad input to the sweep (options, search space, storage); the command line prints it as `error: ...`."""


def require_optuna():
    try:
        import optuna
    except ImportError as error:
        raise SweepError(f"the sweep needs Optuna: pip install 'maxatar[sweep]' ({error})") from None
    return optuna


def heartbeat_seconds(storage: str, heartbeat: int | None) -> int:
    """`--heartbeat`: as given (0: none), or by default `DEFAULT_HEARTBEAT` for a server database and none
    for SQLite (one machine, where a worker that died is seen by whoever restarts it)."""
    if heartbeat is None:
        return 0 if storage.startswith("sqlite") else DEFAULT_HEARTBEAT
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, int) or heartbeat < 0:
        raise SweepError(f"--heartbeat must be a whole number of seconds >= 0 (0: none), got {heartbeat!r}")
    return heartbeat


def make_storage(storage: str, heartbeat: int = 0):
    """Optuna's RDB storage for the database URL `storage`. With `heartbeat` (seconds), each running trial
    records a heartbeat that often, and a trial whose heartbeat is older than twice that (its worker died)
    is marked failed by the next worker that starts a trial and queued again with the same parameters (up to
    `STALE_RETRIES` times), instead of staying RUNNING forever."""
    optuna = require_optuna()
    if not heartbeat:
        return storage  # Optuna makes the storage itself, as before heartbeats
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
        return optuna.storages.RDBStorage(
            storage, heartbeat_interval=heartbeat, grace_period=2 * heartbeat, **{keyword: retry_and_say}
        )


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
                raise SweepError(f"--storage {storage!r}: Optuna cannot open it: {error}") from None
            time.sleep(0.5 + attempt)
        except (ValueError, ImportError) as error:
            raise SweepError(f"--storage {storage!r}: Optuna cannot open it: {error}") from None
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
            f"study {study.study_name!r} in {storage} was run with another setting ({what}); its trials would not "
            "compare: give the same options, or start another study with --study-name (or another --out)"
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
