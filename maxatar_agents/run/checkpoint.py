"""Checkpoints in safe formats: the training state as `.npz` (numpy arrays only, never unpickled) and
everything else as JSON (format, algorithm, env id, config, seeds, progress). Loading never executes code
from the files, and a damaged or tampered file is refused with one `CheckpointError` naming it.

A run directory (`save`) holds:

- `checkpoint.json`: the metadata, with the name and sha256 of the array file it belongs to (`state_file`,
  `state_sha256`). Replacing it (`os.replace`) is the one atomic step of a save: a save interrupted at any
  point (a crash, a full disk, SIGKILL) leaves the previous JSON naming the previous, complete array file.
- `checkpoint-<16 hex digits of its sha256>.npz`: the training state, written under a temporary name of the
  process's own, synced to disk and renamed before the JSON names it. The previous one is deleted only once
  the new JSON is in place.
- `checkpoint.npz` (`STATE_FILE`): the same file under the fixed name earlier versions used and readers may
  open by hand (a hard link, or a copy where the file system has none), updated after the JSON.
- `run.lock` (`LOCK_FILE`) while a run trains: `lock_run` holds it (`fcntl.flock`) with the holder's pid, so
  a second process on the directory stops with an error naming it.

A checkpoint of earlier versions (a `checkpoint.json` without `state_file`, beside `checkpoint.npz`) still
loads, and so do those written before the agents shared one training state (`program.TrainState`), whose
learner's fields stood at the top level: a leaf `.learner.params...` is read from `.params...` there.
Loading reads each array's `.npy` header from the zip and compares its shape and dtype with what the
config expects before reading any data, so a small file cannot make the loader allocate a huge array.

A checkpoint may also be named `"pretrained:maxatar/Breakout-v0"`: a policy shipped with the package, a
policy-only checkpoint in `maxatar_agents/pretrained/<id>/`. Playing and exporting a checkpoint's trained policy
(`load_policy`, `export_policy`) is `maxatar_agents.run.policies`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import socket
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.files import JSONError, open_regular, read_json
from maxatar_agents.algorithms.registry import AGENT_MODULES

FORMAT = "maxatar_agents.checkpoint/1"
STATE_FILE = "checkpoint.npz"
META_FILE = "checkpoint.json"
LOCK_FILE = "run.lock"
PROGRESS_KEY = "__intervals_done__"
PRETRAINED_PREFIX = "pretrained:"
PRETRAINED_DIR = Path(__file__).parent.parent / "pretrained"  # shipped at the package's top

_VERSIONED = re.compile(r"checkpoint-[0-9a-f]{16}\.npz")
LEARNER = ".learner"  # the prefix of the learner's leaves (`program.TrainState.learner`)
# This module's temporary files (`_write_temp`), and those of earlier versions.
_TEMPORARY = re.compile(r"\.checkpoint\.(npz|json)\.\d+-[0-9a-f]+\.tmp|checkpoint\.(npz|json)\.tmp")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# The keys of checkpoint.json (`artifacts.save_progress`, `policies.export_policy`), and those every metrics row has.
_FIELDS = (
    "format", "algorithm", "env_id", "config", "preset", "seeds", "intervals_done", "num_intervals", "frames_done",
    "wall_time", "rows", "final_eval", "sweep", "policy_only", "record", "dataset", "state_file", "state_sha256",
)  # fmt: skip
ROW_KEYS = ("seed", "frames", "recent_return", "wall_time")
_CHUNK = 1 << 20
# What reading a damaged zip of .npy files raises (zipfile: RuntimeError for an encrypted member, its subclass
# NotImplementedError for an unknown compression).
_READ_ERRORS = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error, struct.error, RuntimeError)


class CheckpointError(ValueError):
    """A checkpoint is missing, damaged, belongs to another configuration, or cannot be written; or its
    directory is in use by another run."""


class _Meta(dict):
    """A checkpoint's metadata, which remembers the file it was read from (for error messages)."""

    path: Path


# --- writing ---


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _sync_directory(directory: Path) -> None:
    """Make the renames in `directory` durable (where the file system supports syncing a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_temp(directory: Path, name: str, write: Callable[[Any], None]) -> Path:
    """Write a file of this process's own, `.<name>.<pid>-<random>.tmp` in `directory`, and sync it to disk;
    returns its path. Nothing is left behind if writing fails."""
    tmp = directory / f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def _put(tmp: Path, path_of: Callable[[str], Path]) -> str:
    """Rename the written temporary file `tmp` to `path_of(its sha256)` and return the digest; on any failure the
    temporary file goes."""
    try:
        with open(tmp, "rb") as f:
            digest = _sha256(f)
        os.replace(tmp, path_of(digest))
    except BaseException:
        _remove(tmp)
        raise
    return digest


def write_file(directory: Path, name: str, write: Callable[[Any], None]) -> str:
    """Write `directory / name` whole or not at all (a synced file of this process's own, renamed into place);
    returns its sha256."""
    return _put(_write_temp(directory, name, write), lambda _: directory / name)


def _sha256(f) -> str:
    digest = hashlib.sha256()
    while chunk := f.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _named_state(directory: Path) -> str | None:
    """The array file the directory's current JSON names (None if there is none, or it names none)."""
    try:
        name = read_json(directory / META_FILE).get("state_file")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and (_VERSIONED.fullmatch(name) or name == STATE_FILE) else None


def _last_good(directory: Path) -> str:
    """Where the directory's checkpoint stands, for the error of a save that failed."""
    try:
        meta = read_json(directory / META_FILE)
        frames, done, total = meta["frames_done"], meta["intervals_done"], meta["num_intervals"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"there is no earlier checkpoint in {directory}"
    return (
        f"the last good checkpoint is still {directory / META_FILE} ({frames} frames per seed, interval "
        f"{done} of {total})"
    )


def check_room(directory: str | Path) -> None:
    """Prove that the next save of the run in `directory` fits before training resumes: a file the size of its
    current checkpoint (array file and JSON; a save writes the new pair before the old array file goes) is
    allocated and removed. A full disk, a quota, a file size limit or a read-only directory is then a
    `CheckpointError` now, not after the next interval's training."""
    directory = Path(directory)
    state = directory / (_named_state(directory) or STATE_FILE)
    size = sum(path.stat().st_size for path in (state, directory / META_FILE) if path.exists())
    if size == 0:
        return
    try:
        _remove(_write_temp(directory, "room", lambda f: os.posix_fallocate(f.fileno(), 0, size)))
    except OSError as error:
        raise CheckpointError(
            f"cannot resume in {directory}: its next checkpoint ({size} bytes) would not fit "
            f"({error.strerror or error}); {_last_good(directory)}"
        ) from None


def _save_failed(directory: Path, error: OSError, last_good: str) -> CheckpointError:
    reason = error.strerror or str(error)
    hint = {errno.ENOSPC: "; free some space", errno.EDQUOT: "; free some space", errno.EROFS: ""}
    return CheckpointError(
        f"could not save the checkpoint in {directory}: {reason}; nothing of this save was left behind and "
        f"{last_good}{hint.get(error.errno, '')}"
    )


def _publish(directory: Path, name: str) -> None:
    """`STATE_FILE` becomes the array file `name` (a hard link, or a copy where links are not supported). On
    failure the stale `STATE_FILE` is removed, so that no reader takes it for the current state."""
    tmp = directory / f".{STATE_FILE}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        try:
            os.link(directory / name, tmp)
        except OSError:
            _remove(tmp)
            _write_temp_copy(directory / name, tmp)
        os.replace(tmp, directory / STATE_FILE)
    except OSError as error:
        _remove(tmp)
        _remove(directory / STATE_FILE)
        warnings.warn(
            f"the checkpoint in {directory} is saved as {name}, but {STATE_FILE} could not be updated "
            f"({error.strerror or error}); load it by its directory",
            RuntimeWarning,
            stacklevel=3,
        )


def _write_temp_copy(source: Path, tmp: Path) -> None:
    try:
        with open(source, "rb") as src, open(tmp, "xb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)
            dst.flush()
            os.fsync(dst.fileno())
    except BaseException:
        _remove(tmp)
        raise


def save(directory: str | Path, state: Any, meta: dict[str, Any]) -> Path:
    """Save a (seed-batched) training state and its metadata; returns the path of `STATE_FILE`.

    The arrays go to a new `checkpoint-<sha256>.npz` (written, synced, renamed), then the JSON naming it
    and its sha256 replaces the previous one; only then is the previous array file deleted. A save that
    fails (a full or read-only disk: any OSError) leaves no file of its own behind and raises a
    `CheckpointError` naming the last good checkpoint, which still loads."""
    directory = Path(directory)
    leaves = jax.device_get(jax.tree.leaves(state))
    arrays = {name: np.asarray(leaf) for name, leaf in zip(tree_paths(state), leaves, strict=True)}
    arrays[PROGRESS_KEY] = np.asarray(meta["intervals_done"], np.int64)
    previous, last_good = _named_state(directory), _last_good(directory)
    name = None
    try:
        tmp = _write_temp(directory, STATE_FILE, lambda f: np.savez(f, **arrays))
        digest = _put(tmp, lambda digest: directory / f"checkpoint-{digest[:16]}.npz")
        name = f"checkpoint-{digest[:16]}.npz"
        _sync_directory(directory)
        fields = {k: v for k, v in meta.items() if k not in ("format", "state_file", "state_sha256")}
        text = json.dumps({"format": FORMAT, **fields, "state_file": name, "state_sha256": digest}, indent=1)
        write_file(directory, META_FILE, lambda f: f.write(text.encode()))
    except BaseException as error:
        # The new array file goes too, unless the JSON names it after all (an interrupt just after the
        # switch) or it is the previous one (a save of the same state).
        if name is not None and name != previous and _named_state(directory) != name:
            _remove(directory / name)
        if isinstance(error, OSError):
            raise _save_failed(directory, error, last_good) from error
        raise
    _sync_directory(directory)
    _publish(directory, name)
    if previous is not None and previous not in (name, STATE_FILE):
        _remove(directory / previous)
    return directory / STATE_FILE


# --- the run lock ---

_locks: dict[str, tuple[int, Path]] = {}  # the run directories this process holds: realpath -> (fd, lock file)


def lock_run(directory: str | Path) -> Path:
    """Hold `directory` for this process while it trains: an exclusive `fcntl.flock` on `LOCK_FILE` in it,
    which records the holder's pid and host. A second process gets a `CheckpointError` naming the directory
    and the holder; the kernel releases the lock when the holder ends, however it ends. Holding it, this
    process removes what interrupted saves left behind (temporary files, an array file no JSON names).
    Taking a lock the process already holds does nothing. Returns the lock file's path."""
    directory = Path(directory)
    key = os.path.realpath(directory)
    if key in _locks:
        return _locks[key][1]
    path = directory / LOCK_FILE
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise CheckpointError(f"cannot lock {directory} for this run ({path}: {error.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            holder = os.pread(fd, 200, 0).decode(errors="replace").split()
            os.close(fd)
            if error.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise CheckpointError(f"cannot lock {directory} for this run ({path}: {error.strerror})") from None
            who = f"pid {holder[0]}" + (f" on {holder[1]}" if len(holder) > 1 else "") if holder else "a process"
            raise CheckpointError(
                f"{directory} is in use by another run ({who} holds {path}); wait for it to end or choose another --out"
            ) from None
        # A holder releasing the lock unlinks the file: if that happened between our open and flock, we
        # hold a lock on a file no longer in the directory, and try again.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    _locks[key] = (fd, path)
    _remove_leftovers(directory)
    return path


def unlock_run(directory: str | Path) -> None:
    """Release the lock `lock_run` took on `directory` (nothing if this process does not hold it)."""
    held = _locks.pop(os.path.realpath(directory), None)
    if held is not None:
        fd, path = held
        _remove(path)  # before the lock goes: whoever opened the file meanwhile sees it is gone
        os.close(fd)


def releases_run_locks(function: Callable) -> Callable:
    """Decorate a function that may take run locks (`lock_run`): those it took are released however it ends."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        before = set(_locks)
        try:
            return function(*args, **kwargs)
        finally:
            for key in set(_locks) - before:
                unlock_run(key)

    return wrapper


def _remove_leftovers(directory: Path) -> None:
    """Temporary files of interrupted saves, and array files that no JSON names (a save interrupted before
    its switch), in a directory this process holds. Array files go only beside a run's own JSON naming another
    array file that is there: never while the JSON is missing, unreadable, names none, or is another kind's
    (an export's), whatever else the directory holds."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if _TEMPORARY.fullmatch(name):
            _remove(directory / name)
    keep = _named_state(directory)
    if keep is None or keep == STATE_FILE or not (directory / keep).is_file():
        return
    for name in names:
        if _VERSIONED.fullmatch(name) and name != keep:
            _remove(directory / name)


# --- reading ---


def pretrained_ids() -> list[str]:
    """The environment ids that have a policy shipped in the package."""
    if not PRETRAINED_DIR.is_dir():
        return []
    return sorted(f"maxatar/{d.name}" for d in PRETRAINED_DIR.iterdir() if (d / META_FILE).is_file())


def pretrained_path(env_id: str) -> Path:
    """The directory of the shipped policy for `env_id` (`maxatar/Breakout-v0` or `Breakout-v0`)."""
    name = env_id.split(":")[-1].removeprefix("maxatar/")
    if f"maxatar/{name}" not in pretrained_ids():
        shipped = ", ".join(pretrained_ids()) or "none"
        raise CheckpointError(f"no pretrained policy for {env_id!r}; shipped: {shipped}")
    return PRETRAINED_DIR / name


def resolve(path: str | Path) -> Path:
    """A run directory, or the path of its state or metadata file -> the run directory; a
    `pretrained:<env id>` name -> the shipped policy's directory."""
    if isinstance(path, str) and path.startswith(PRETRAINED_PREFIX):
        return pretrained_path(path.removeprefix(PRETRAINED_PREFIX))
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a run directory or checkpoint file (a str or path), got {path!r}")
    path = Path(path)
    if path.is_dir():
        return path
    if path.name in (STATE_FILE, META_FILE) or _VERSIONED.fullmatch(path.name):
        return path.parent
    raise CheckpointError(f"{path} is neither a run directory nor a {STATE_FILE} / {META_FILE} file")


def exists(directory: str | Path) -> bool:
    """Whether `directory` holds (part of) a checkpoint, so a new run never overwrites one."""
    directory = Path(directory)
    return (directory / META_FILE).is_file() or (directory / STATE_FILE).is_file()


def read_meta(path: str | Path) -> dict[str, Any]:
    """The checkpoint's metadata, checked to be this format and a known algorithm, and each field it has to
    have a sane type and value, before anything trusts it."""
    directory = resolve(path)
    file = directory / META_FILE
    try:
        meta = read_json(file)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint in {directory} ({META_FILE} is missing)") from None
    except JSONError as error:  # damaged, or larger than a JSON can be (its message names the file)
        raise CheckpointError(str(error)) from None
    except OSError as error:
        raise CheckpointError(f"cannot read {file}: {error.strerror or error}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{file} is not a {FORMAT} checkpoint")
    if meta.get("algorithm") not in AGENT_MODULES:
        raise CheckpointError(f"unknown algorithm {meta.get('algorithm')!r} in {file}")
    meta = _Meta(meta)
    meta.path = file
    _check_fields(meta, file)
    return meta


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_fields(meta: dict[str, Any], file: Path) -> None:
    """Refuse metadata whose fields (those it has) have the wrong type or an impossible value; which fields
    must be there depends on the use (`_require`)."""

    def damaged(why: str) -> CheckpointError:
        return CheckpointError(f"{file} is damaged: {why}")

    def count(name: str, low: int) -> None:
        if name in meta and not (_is_int(meta[name]) and meta[name] >= low):
            raise damaged(f"{name} is {meta[name]!r}, not a whole number >= {low}")

    unknown = sorted(set(meta) - set(_FIELDS))
    if unknown:
        raise damaged(
            f"it has the unknown key(s) {', '.join(map(repr, unknown))}; a checkpoint has {', '.join(_FIELDS)}"
        )
    types = {"env_id": str, "config": dict, "rows": list, "policy_only": bool, "record": dict, "sweep": dict}
    for name, kind in types.items():
        if name in meta and not isinstance(meta[name], kind):
            raise damaged(f"{name} is {meta[name]!r}, not a {kind.__name__}")
    dataset = meta.get("dataset")  # an offline run's (`datasets.for_config`)
    if "dataset" in meta and not (
        isinstance(dataset, dict)
        and set(dataset) == {"id", "steps", "sha256", "ref_min_score", "ref_max_score"}
        and isinstance(dataset["id"], str)
        and _is_int(dataset["steps"])
        and isinstance(dataset["sha256"], str)
        and _SHA256.fullmatch(dataset["sha256"])
        and all(dataset[name] is None or _is_number(dataset[name]) for name in ("ref_min_score", "ref_max_score"))
    ):
        raise damaged(
            f"dataset is {dataset!r}, not the id, steps, sha256 and reference scores of the dataset the run learnt from"
        )
    if meta.get("preset") is not None and not isinstance(meta["preset"], str):
        raise damaged(f"preset is {meta['preset']!r}, not a string")
    seeds = meta.get("seeds")
    if "seeds" in meta and not (isinstance(seeds, list) and seeds and all(_is_int(s) for s in seeds)):
        raise damaged(f"seeds is {seeds!r}, not a list of whole numbers")
    count("intervals_done", 0)
    count("num_intervals", 1)
    if meta.get("frames_done") is not None:
        count("frames_done", 0)
    if _is_int(meta.get("intervals_done")) and _is_int(meta.get("num_intervals")):
        if meta["intervals_done"] > meta["num_intervals"]:
            raise damaged(f"intervals_done is {meta['intervals_done']}, outside 0..{meta['num_intervals']}")
    wall = meta.get("wall_time")
    if "wall_time" in meta and not (_is_number(wall) and math.isfinite(wall) and wall >= 0):
        raise damaged(f"wall_time is {wall!r}, not a number of seconds")
    for name, values in meta.get("sweep", {}).items():
        if not (isinstance(values, list) and values and all(_is_number(v) for v in values)):
            raise damaged(f"the sweep's values of {name} are {values!r}, not a list of numbers")
    if "rows" in meta:
        _check_rows(meta["rows"], [*meta.get("sweep", {}), *ROW_KEYS], damaged)
    final = meta.get("final_eval")
    if final is not None:
        if not isinstance(final, dict):
            raise damaged(f"final_eval is {final!r}, not a dict")
        per_seed = final.get("return_per_seed")
        if "return_per_seed" in final and not (
            isinstance(per_seed, list) and per_seed and all(_is_number(r) for r in per_seed)
        ):
            raise damaged(f"final_eval's return_per_seed is {per_seed!r}, not a list of numbers")
        if "return_mean" in final and not _is_number(final["return_mean"]):
            raise damaged(f"final_eval's return_mean is {final['return_mean']!r}, not a number")
        if isinstance(per_seed, list) and isinstance(seeds, list) and len(per_seed) != _num_runs(meta):
            raise damaged(f"final_eval has {len(per_seed)} returns per seed for {_num_runs(meta)} runs")
    if "state_file" in meta or "state_sha256" in meta:
        name, digest = meta.get("state_file"), meta.get("state_sha256")
        if not (isinstance(name, str) and (_VERSIONED.fullmatch(name) or name == STATE_FILE)):
            raise damaged(f"state_file is {name!r}, not the name of a checkpoint's array file")
        if not (isinstance(digest, str) and _SHA256.fullmatch(digest)):
            raise damaged(f"state_sha256 is {digest!r}, not a sha256")


def _check_rows(rows: list, required: list[str], damaged: Callable[[str], CheckpointError]) -> None:
    """Metrics rows as the runner writes them: dicts of numbers, all with the keys of the first, among them
    `required` (what metrics.csv, the learning curve and a sweep's files read)."""
    keys = None
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise damaged(f"rows[{i}] is {row!r}, not a metrics row")
        if keys is None:
            keys = list(row)
            missing = [key for key in required if key not in row]
            if missing:
                raise damaged(f"rows[0] has no {', '.join(map(repr, missing))}")
        elif set(row) != set(keys):
            odd = sorted(set(row) ^ set(keys))
            raise damaged(f"rows[{i}] does not have the keys of rows[0] (it differs in {', '.join(map(repr, odd))})")
        for key, value in row.items():
            if not _is_number(value):
                raise damaged(f"rows[{i}][{key!r}] is {value!r}, not a number")


def _num_runs(meta: dict[str, Any]) -> int:
    """The runs a checkpoint holds: its seeds, times each combination of a sweep's values."""
    return len(meta["seeds"]) * math.prod(len(values) for values in meta.get("sweep", {}).values())


def where(meta: dict[str, Any]) -> str:
    return str(getattr(meta, "path", META_FILE))


def require(meta: dict[str, Any], *names: str) -> None:
    missing = [name for name in names if name not in meta]
    if missing:
        raise CheckpointError(f"{where(meta)} is damaged: it has no {', '.join(missing)}")


class Schema(NamedTuple):
    """What a checkpoint of one config must hold, as data, from whoever knows the agent (`saved.program_for`):
    its schedule (how many intervals, how many frames each) and where its policy params are in the state. The
    arrays' names, shapes and dtypes are the state template's (`load_state`)."""

    num_intervals: int
    frames_per_interval: int
    policy_field: str


REQUIRED = ("algorithm", "config", "env_id", "seeds", "intervals_done", "num_intervals")


def check_meta(meta: dict[str, Any], schema: Schema) -> None:
    """Check that the metadata has what a run's checkpoint has and that its progress fits `schema`."""
    require(meta, *REQUIRED)
    if meta["num_intervals"] != schema.num_intervals:
        raise CheckpointError(
            f"{where(meta)} is damaged: num_intervals is {meta['num_intervals']}, its config's run has "
            f"{schema.num_intervals}"
        )
    frames = meta.get("frames_done")
    if frames is not None and frames != meta["intervals_done"] * schema.frames_per_interval:
        raise CheckpointError(
            f"{where(meta)} is damaged: frames_done is {frames}, not intervals_done x "
            f"{schema.frames_per_interval} frames"
        )
    if meta.get("final_eval") is not None:  # a finished run's: what the policy is chosen and exported by
        missing = [name for name in ("return_per_seed", "return_mean") if name not in meta["final_eval"]]
        if missing:
            raise CheckpointError(f"{where(meta)} is damaged: its final_eval has no {', '.join(missing)}")
    if not meta.get("policy_only"):  # a run's checkpoint: its metrics so far, one row per interval and run
        require(meta, "rows", "wall_time")
        if len(meta["rows"]) != meta["intervals_done"] * _num_runs(meta):
            raise CheckpointError(
                f"{where(meta)} is damaged: {len(meta['rows'])} metrics rows for {meta['intervals_done']} "
                f"intervals of {_num_runs(meta)} runs"
            )


def _state_path(directory: Path, meta: dict[str, Any]) -> Path:
    """The array file of a checkpoint: the one its JSON names, or `STATE_FILE` for a checkpoint of an earlier
    version (or a copy of the pair under the fixed names: the sha256 decides)."""
    name = meta.get("state_file")
    if name is None:
        return directory / STATE_FILE
    path = directory / name
    if not path.is_file() and (directory / STATE_FILE).is_file():
        return directory / STATE_FILE
    return path


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Whatever goes wrong reading the array file becomes one CheckpointError saying it is damaged."""
    try:
        yield
    except CheckpointError:
        raise
    except _READ_ERRORS as error:
        raise CheckpointError(f"{path} is damaged ({type(error).__name__}: {error})") from None


class _Arrays:
    """A checkpoint's array file, read member by member from its zip: a member's `.npy` header (shape,
    dtype) can be checked before any of its data is read, and nothing is ever unpickled."""

    def __init__(self, path: Path, archive: zipfile.ZipFile):
        self.path = path
        self._archive = archive
        members = {info.filename.removesuffix(".npy"): info for info in archive.infolist()}
        self.files = list(members)
        # The learner's leaves under their earlier names (at the top level), where the file has those.
        legacy = {LEARNER + name: info for name, info in members.items() if LEARNER + name not in members}
        self._members = {**legacy, **members}

    def __contains__(self, name: str) -> bool:
        return name in self._members

    def unexpected(self, names: list[str]) -> list[str]:
        """The file's arrays that none of `names` (nor the progress counter) reads."""
        read = {self._members[name].filename for name in names if name in self._members}
        return sorted(name for name in self.files if name + ".npy" not in read and name != PROGRESS_KEY)

    def _header(self, fp, name: str) -> tuple[tuple[int, ...], np.dtype, bool]:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise CheckpointError(f"{self.path} is damaged: {name} has an .npy header of unknown version {version}")
        if dtype.hasobject:
            raise CheckpointError(f"{self.path} is damaged: {name} holds Python objects, which a checkpoint never does")
        size = self._members[name].file_size - fp.tell()
        if size != math.prod(shape) * dtype.itemsize:
            raise CheckpointError(
                f"{self.path} is damaged: {name} holds {size} bytes, its header says {dtype}{list(shape)}"
            )
        return shape, dtype, fortran

    def header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype of array `name`, from its header alone."""
        with _reading(self.path), self._archive.open(self._members[name]) as fp:
            shape, dtype, _ = self._header(fp, name)
        return shape, dtype

    def read(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """Array `name`, whose header the caller has checked to be `dtype[shape]`."""
        with _reading(self.path), self._archive.open(self._members[name]) as fp:
            header = self._header(fp, name)
            if header[:2] != (tuple(shape), np.dtype(dtype)):
                raise CheckpointError(f"{self.path} is damaged: {name} changed while it was read")
            size = math.prod(shape) * np.dtype(dtype).itemsize
            data = fp.read(size)
            if len(data) != size:
                raise CheckpointError(f"{self.path} is damaged: {name} ends after {len(data)} of its {size} bytes")
            fp.read(1)  # at the end of the member: the zip checks its CRC
            array = np.frombuffer(data, dtype)
            return array.reshape(shape[::-1]).T if header[2] else array.reshape(shape)

    def check(self, name: str, shape: tuple[int, ...], dtype: Any, what: str) -> None:
        """Refuse array `name` (before reading it) unless its header says `dtype[shape]`."""
        got_shape, got_dtype = self.header(name)
        if got_shape != tuple(shape) or got_dtype != np.dtype(dtype):
            raise CheckpointError(
                f"{self.path} {what}: {name} is {got_dtype}{list(got_shape)}, expected "
                f"{np.dtype(dtype)}{list(shape)} (the file is damaged or from another configuration)"
            )

    def progress(self, meta: dict[str, Any], directory: Path) -> None:
        """Check that the arrays are those of the save the metadata describes."""
        if PROGRESS_KEY not in self:
            raise CheckpointError(f"{self.path} is damaged: it has no {PROGRESS_KEY}")
        self.check(PROGRESS_KEY, (), np.int64, "is damaged")
        done = int(self.read(PROGRESS_KEY, (), np.int64))
        if done != meta["intervals_done"]:
            raise CheckpointError(
                f"{self.path} and {directory / META_FILE} are from different saves (one of them is damaged): the "
                f"arrays are of interval {done}, the JSON's intervals_done is {meta['intervals_done']}"
            )


@contextlib.contextmanager
def open_arrays(directory: Path, meta: dict[str, Any]) -> Iterator[_Arrays]:
    """The checkpoint's array file, its sha256 checked against the JSON's first (where it records one)."""
    path = _state_path(directory, meta)
    try:
        f = open_regular(path)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint state in {directory} ({path.name} is missing)") from None
    except OSError as error:
        raise CheckpointError(f"cannot read {path}: {error.strerror or error}") from None
    with f:
        with _reading(path):
            if meta.get("state_sha256") is not None:
                if _sha256(f) != meta["state_sha256"]:
                    raise CheckpointError(f"{path} is damaged: its sha256 is not the one {META_FILE} records")
                f.seek(0)
            archive = zipfile.ZipFile(f)
        with archive:
            yield _Arrays(path, archive)


def check_finite(arrays: _Arrays, name: str, array: np.ndarray) -> None:
    if np.issubdtype(array.dtype, np.inexact) and not np.all(np.isfinite(array)):
        raise CheckpointError(
            f"{arrays.path} is damaged or its run diverged: the policy weights {name} are not all finite"
        )


def load_state(directory: str | Path, template: Any, meta: dict[str, Any], schema: Schema) -> Any:
    """Fill `template` (a state or its `jax.eval_shape`) with the saved arrays, checking names, shapes and
    dtypes (from the headers, before reading any data), so that a checkpoint of another configuration is
    refused rather than half-loaded, and the metadata a resume uses (against `schema`)."""
    directory = resolve(directory)
    if meta.get("policy_only"):
        raise CheckpointError(f"{directory} holds only a trained policy (export_policy); it cannot be resumed")
    check_meta(meta, schema)
    names = tree_paths(template)
    leaves, treedef = jax.tree.flatten(template)
    policy = f".{schema.policy_field}"
    with open_arrays(directory, meta) as saved:
        saved.progress(meta, directory)
        missing = [n for n in names if n not in saved]
        extra = saved.unexpected(names)
        if missing or extra:
            raise CheckpointError(
                f"checkpoint in {directory} does not match this configuration: "
                f"missing {missing[:3]}{'...' if len(missing) > 3 else ''}, unexpected {extra[:3]}"
            )
        for name, leaf in zip(names, leaves, strict=True):
            saved.check(name, leaf.shape, leaf.dtype, "does not match this configuration")
        arrays = []
        for name, leaf in zip(names, leaves, strict=True):
            array = saved.read(name, tuple(leaf.shape), np.dtype(leaf.dtype))
            if name.startswith(policy):
                check_finite(saved, name, array)
            arrays.append(jnp.asarray(array))
    return jax.tree.unflatten(treedef, arrays)


def tree_paths(tree: Any) -> list[str]:
    """Stable, readable names of a pytree's leaves: the keys of the state file, so that a mismatch names
    the leaf."""
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
