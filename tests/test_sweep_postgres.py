"""`python -m maxatar_agents.sweep` on a real PostgreSQL server, as several machines share a study: two worker
processes split `--total-trials` between them, each tracked run ending FINISHED; a worker killed with kill -9
mid-trial leaves a RUNNING trial that the next worker, through the heartbeat, marks failed and runs again; a
server restarted mid-trial within `--heartbeat` seconds costs no trial, and one down for longer stops the worker
with one line and exit status 75, its trial left for the heartbeat. The URL carries a password, which no line a
worker prints and no file it writes may hold.

The module starts its own server (Debian's `postgresql` package: initdb, pg_ctl) in a temporary directory, on a
free localhost port, with password authentication over TCP, as the `postgres` user (or `nobody`) when the tests
run as root, and stops it at the end.
It is skipped only where the server's programs or the psycopg driver are missing (`.ci/run` installs both).
The trials are tabular Q-learning on Doors (the agent that compiles fastest), a few thousand frames each.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PG_ROOT = Path("/usr/lib/postgresql")  # Debian's server programs: /usr/lib/postgresql/<version>/bin


def server_programs() -> Path | None:
    """The bin directory of the newest PostgreSQL server installed (Debian's layout, or initdb on PATH)."""
    version = lambda initdb: int(initdb.parts[-3]) if initdb.parts[-3].isdigit() else 0
    found = sorted(PG_ROOT.glob("*/bin/initdb"), key=version)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


BIN = server_programs()
if BIN is None:
    pytest.skip("no PostgreSQL server programs (initdb, pg_ctl): apt-get install postgresql", allow_module_level=True)
pytest.importorskip("psycopg", reason="no psycopg driver: pip install 'psycopg[binary]'")

import optuna  # noqa: E402
from mlflow import MlflowClient  # noqa: E402

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # no network calls from the tests
os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # the store the workers wrote (see tracking)

# A trial of a few thousand frames, run in a fraction of a second once compiled; one value to choose, so that
# each worker compiles once (each value of a config field is a program of its own).
SPACE = {"lr": {"choices": [0.5]}}
TINY = {"total_steps": 2048, "num_envs": 8, "log_points": 2, "eval_episodes": 4, "eval_max_steps": 200}
# A trial long enough to be killed in the middle: 16 intervals of 512k frames, a few seconds in all; each worker
# runs one, so its parameters may be any.
LONG = {**TINY, "total_steps": 8 * 2**20, "num_envs": 4, "log_points": 16}
LONG_SPACE = {"lr": {"low": 0.1, "high": 0.9}, "epsilon": {"low": 0.05, "high": 0.2}}
PASSWORD = "pg-s3cret-7d41"  # the database user's: no output or file of a worker may hold it


def run_as() -> dict:
    """subprocess arguments that run the server as an ordinary user where the tests run as root (PostgreSQL
    refuses root): `postgres` where the package made it, else `nobody`."""
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            user = pwd.getpwnam(name)
            return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    pytest.fail("running as root, and neither a postgres nor a nobody user to run the server as")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclasses.dataclass
class Server:
    """The test's PostgreSQL server: `url` of its database `optuna` (user `postgres`, with `PASSWORD`), and
    `pg_ctl` to stop and start it."""

    home: Path
    port: int
    run: dict

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:{self.port}/optuna"

    def pg_ctl(self, *argv) -> None:
        data, log = self.home / "data", self.home / "server.log"
        done = subprocess.run([BIN / "pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", *argv], **self.run)
        assert done.returncode == 0, done.stdout + done.stderr + log.read_text()[-2000:]

    def start(self) -> None:
        # fsync=off is safe here: `stop` ends the server's processes, not the machine, so what they wrote stays in
        # the operating system's cache. synchronous_commit stays on: off, a commit is acknowledged before its WAL
        # is written, and the immediate stop then loses the last few hundred milliseconds of acknowledged commits
        # (the restart test lost one of its 16 reported values that way).
        options = f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.pg_ctl("-o", options, "start")

    def stop(self) -> None:
        self.pg_ctl("-m", "immediate", "stop")


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL server of its own with an empty database `optuna`, running."""
    as_user = run_as()
    # Not under pytest's tmp_path: that is root's, mode 0700, which the server's user cannot enter.
    home = Path(tempfile.mkdtemp(prefix="maxatar-pg-"))
    quiet = {"capture_output": True, "text": True, "timeout": 120, "cwd": home, **as_user}
    server, started = Server(home, free_port(), quiet), False
    try:
        (home / "password").write_text(PASSWORD)
        if as_user:
            for path in (home, home / "password"):
                os.chown(path, as_user["user"], as_user["group"])
        initdb = [BIN / "initdb", "-D", home / "data", "-U", "postgres", "--pwfile", home / "password"]
        done = subprocess.run(
            [*initdb, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"], **quiet
        )
        assert done.returncode == 0, done.stdout + done.stderr
        server.start()
        started = True
        import psycopg

        address = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{server.port}/postgres"
        with psycopg.connect(address, autocommit=True) as connection:
            connection.execute("CREATE DATABASE optuna")
        yield server
    finally:
        if started:
            subprocess.run([BIN / "pg_ctl", "-D", home / "data", "-m", "immediate", "-w", "stop"], **quiet)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def database(server) -> str:
    """The server's database URL (the server running)."""
    return server.url


def worker(
    tmp_path: Path, url: str, study: str, out: str, *extra: str, sets: dict = TINY, space: dict = SPACE
) -> subprocess.Popen:
    """`python -m maxatar_agents.sweep` as one machine of the study runs it (its own --out)."""
    path = tmp_path / f"{out}-space.json"
    path.write_text(json.dumps(space))
    argv = ["--algo", "q_learning", "--env", "maxatar/Doors-v0", "--storage", url, "--study-name", study]
    argv += ["--out", str(tmp_path / out), "--space", str(path), "--pruner", "none"]
    argv += [f"--set={k}={v}" for k, v in sets.items()]
    with open(tmp_path / f"{out}.log", "w") as log:  # the process writes to its own copy of the file
        return subprocess.Popen(
            [sys.executable, "-m", "maxatar_agents.sweep", *argv, *extra],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )


def finished(process: subprocess.Popen, tmp_path: Path, out: str, timeout: float = 120, status: int = 0) -> str:
    """Wait for a worker; it must exit with `status`, and nothing it printed or wrote may hold the password.
    Returns what it printed."""
    process.wait(timeout=timeout)
    printed = (tmp_path / f"{out}.log").read_text()
    assert process.returncode == status, printed[-4000:]
    assert_no_secret(tmp_path)
    return printed


def assert_no_secret(root: Path) -> None:
    """No file under `root` (the workers' output, --out, tracking store) holds the password."""
    holding = [path for path in root.rglob("*") if path.is_file() and PASSWORD.encode() in path.read_bytes()]
    assert not holding, holding


def ran_trials(tmp_path: Path, out: str, study: str) -> set[int]:
    """The trials a worker trained (each leaves trials/STUDY/trial-NNNN in its --out)."""
    return {int(d.name.split("-")[1]) for d in (tmp_path / out / "trials" / study).glob("trial-*")}


def test_two_workers_share_the_study_total(tmp_path, database):
    """Each worker may run 3 trials, the study 4: the two split them (so each ran at least one), every trial
    number once; each worker's MLflow parent run ends FINISHED in the shared store."""
    track = ["--track", "mlflow", "--track-uri", str(tmp_path / "mlruns")]
    workers = [
        worker(tmp_path, database, "shared", out, "--trials", "3", "--total-trials", "4", *track) for out in "ab"
    ]
    for process, out in zip(workers, "ab", strict=True):
        finished(process, tmp_path, out)
    study = optuna.load_study(study_name="shared", storage=database)
    complete = [t.number for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    # A trial two workers asked for at the same moment past the total fails unrun (`sweep.StudyFull`).
    assert len(complete) == 4 and all(t.state.is_finished() for t in study.trials)
    numbers = [t.number for t in study.trials]
    assert len(set(numbers)) == len(numbers)
    a, b = ran_trials(tmp_path, "a", "shared"), ran_trials(tmp_path, "b", "shared")
    assert a and b and not a & b and a | b == set(complete), (a, b, complete)
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    for out in "ab":
        run = client.get_run(json.loads((tmp_path / out / "tracking.json").read_text())["mlflow"]["run_id"])
        assert run.info.status == "FINISHED"
        assert run.data.params["storage"] == database.replace(PASSWORD, "***")  # where the study lives
    # A worker started once the study holds its total runs nothing and says what the study found.
    late = worker(tmp_path, database, "shared", "c", "--total-trials", "4")
    finished(late, tmp_path, "c")
    assert len(optuna.load_study(study_name="shared", storage=database).trials) == len(numbers)
    assert "'shared' already holds its 4 trials" in (tmp_path / "c.log").read_text()


def mid_trial(process: subprocess.Popen, url: str, study: str, log: Path):
    """Wait until the worker's trial has reported its first interval; returns the trial."""
    deadline = time.monotonic() + 120
    running = None
    while running is None and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        with contextlib.suppress(KeyError):  # the study is not created yet
            trials = optuna.load_study(study_name=study, storage=url).trials
            running = next((t for t in trials if t.intermediate_values), None)
    assert running is not None and process.poll() is None, log.read_text()[-4000:]
    return running


def test_a_killed_workers_trial_is_failed_by_the_heartbeat_and_run_again(tmp_path, database):
    """kill -9 in the middle of a trial (after its first interval): the trial stays RUNNING; the next worker
    (heartbeat 1 s, so stale after 2 s) marks it FAIL and runs its retry, with the same parameters, to the end."""
    options = ["--total-trials", "1", "--heartbeat", "1"]
    doomed = worker(tmp_path, database, "killed", "a", *options, sets=LONG, space=LONG_SPACE)
    running = mid_trial(doomed, database, "killed", tmp_path / "a.log")
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=30)
    time.sleep(2.5)  # the heartbeat's grace period (twice --heartbeat) passes
    (left,) = optuna.load_study(study_name="killed", storage=database).trials
    assert left.state == optuna.trial.TrialState.RUNNING  # no worker is left to end it

    finished(worker(tmp_path, database, "killed", "b", *options, sets=LONG, space=LONG_SPACE), tmp_path, "b")
    failed, retry = optuna.load_study(study_name="killed", storage=database).trials
    assert failed.number == running.number and failed.state == optuna.trial.TrialState.FAIL
    assert retry.state == optuna.trial.TrialState.COMPLETE and retry.params == failed.params == running.params
    assert retry.system_attrs["failed_trial"] == failed.number
    assert len(retry.intermediate_values) == LONG["log_points"]
    assert ran_trials(tmp_path, "b", "killed") == {retry.number}
    said = (
        f"trial {failed.number} of 'killed' has had no heartbeat for 2 s (its worker stopped): marked failed and queued"
    )
    assert said in (tmp_path / "b.log").read_text()


def test_a_database_restarted_mid_trial_within_the_heartbeat_costs_no_trial(tmp_path, server):
    """The server stopped (every connection cut, as a crash does) and started again in the middle of a trial:
    the worker (--heartbeat 10: it waits up to 10 s) says the database is out of reach, then back, and the
    trial completes, alone in the study, every interval reported."""
    options = ["--total-trials", "1", "--heartbeat", "10"]
    process = worker(tmp_path, server.url, "restarted", "a", *options, sets=LONG, space=LONG_SPACE)
    mid_trial(process, server.url, "restarted", tmp_path / "a.log")
    server.stop()
    time.sleep(3)  # a restart of a few seconds (issue 55's ended the worker with an UnboundLocalError)
    server.start()
    printed = finished(process, tmp_path, "a")
    (trial,) = optuna.load_study(study_name="restarted", storage=server.url).trials
    assert trial.state == optuna.trial.TrialState.COMPLETE and len(trial.intermediate_values) == LONG["log_points"]
    redacted = server.url.replace(PASSWORD, "***")
    assert f"sweep: the database {redacted} is out of reach (" in printed, printed[-4000:]
    assert "sweep: the database is back after" in printed and "Traceback" not in printed


def test_a_database_down_longer_than_the_heartbeat_stops_the_worker_with_one_line(tmp_path, server):
    """The server stopped for longer than the worker waits (--heartbeat 1: 1 s): the worker stops with one
    error line naming the database (not its password) and its trial, and exit status 75; the trial stays
    RUNNING, for the next worker to fail (its heartbeat stale) and run again once the server is back."""
    options = ["--total-trials", "1", "--heartbeat", "1"]
    process = worker(tmp_path, server.url, "lost", "a", *options, sets=LONG, space=LONG_SPACE)
    running = mid_trial(process, server.url, "lost", tmp_path / "a.log")
    server.stop()
    try:
        printed = finished(process, tmp_path, "a", timeout=60, status=75)
    finally:
        server.start()
    redacted = server.url.replace(PASSWORD, "***")
    (error,) = [line for line in printed.splitlines() if "error:" in line]
    assert error.startswith(f"python -m maxatar_agents.sweep: error: lost the database {redacted}: out of reach")
    assert f"its trial {running.number} stays RUNNING there until" in error and "Traceback" not in printed
    (left,) = optuna.load_study(study_name="lost", storage=server.url).trials
    assert left.state == optuna.trial.TrialState.RUNNING  # as a killed worker's: the heartbeat's (test above)


def test_urls_that_fail_are_one_line_without_their_password(tmp_path, server):
    """A storage URL the server refuses (a wrong password) or where nothing listens, and a tracking URI with
    credentials where nothing listens: each is one `error:` line with the password hidden, exit status 2, no
    --out left behind, and (the tracking URI being checked first) no study created."""
    closed, wrong = free_port(), "wr0ng-password-d5"
    storages = {
        "refused": server.url.replace(PASSWORD, wrong),
        "closed": server.url.replace(f":{server.port}/", f":{closed}/"),
        "tracked": server.url,
    }
    track = ["--track", "mlflow", "--track-uri", f"http://alice:{PASSWORD}@127.0.0.1:{closed}"]
    processes = {
        out: worker(tmp_path, url, "secrets", out, "--trials", "1", *(track if out == "tracked" else []))
        for out, url in storages.items()
    }
    said = {"refused": "password authentication failed", "closed": "Connection refused", "tracked": "no MLflow"}
    for out, process in processes.items():
        printed = finished(process, tmp_path, out, status=2)
        (line,) = printed.strip().splitlines()
        assert line.startswith("python -m maxatar_agents.sweep: error: --") and said[out] in line, line
        assert "***@127.0.0.1:" in line and wrong not in printed
        assert not (tmp_path / out).exists()
    assert "secrets" not in optuna.get_all_study_names(server.url)
