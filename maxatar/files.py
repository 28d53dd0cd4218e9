"""The files the command lines (the agents' and the renderers') read and write, by one set of rules: a file is
read only if it is a regular file (a FIFO would block, a symlink to /dev/zero read forever), JSON is read
strictly and written as JSON (never NaN), a file is replaced whole, and no command writes into the installed
packages."""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from maxatar.checks import InputError

MAX_JSON = 1 << 30  # a JSON file (a checkpoint's metrics rows grow with intervals x runs) is read whole, up to this
# The installed packages, side by side as the one distribution installs them.
PACKAGES = tuple(Path(__file__).resolve().parents[1] / name for name in ("maxatar", "maxatar_agents", "renderers"))


def open_regular(path: Path):
    """`path` opened for reading if it is a regular file (following symlinks): a FIFO, a device (a symlink to
    /dev/zero) or a directory is an OSError naming what it is, before anything reads from it, so that reading
    neither blocks nor runs forever. Opened without blocking, then checked on the open file itself."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class JSONError(InputError):
    """A file that holds no JSON a command reads: its `path` and what is wrong (`reason`) are both in the message."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: cannot read it as JSON: {reason}")
        self.path, self.reason = path, reason


def _read_bytes(path: Path) -> bytes:
    """A regular file's bytes (`open_regular`), at most `MAX_JSON` of them."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_JSON:
            raise JSONError(path, f"it is larger than a JSON file of a run can be ({MAX_JSON:,} bytes)")
        return f.read(size)  # read(size): a buffer of the file's size, never MAX_JSON's


def read_text(path: Path) -> str:
    """A regular file's text (`open_regular`), at most `MAX_JSON` bytes of it (0.2.0's `maxatar_agents.files` name)."""
    return _read_bytes(path).decode()


def read_json(path: str | os.PathLike) -> Any:
    """A regular file's JSON (`open_regular`), at most `MAX_JSON` bytes of it. Reading it fails with an OSError
    (the file cannot be read) or a `JSONError` naming the file and what is wrong: too large, not UTF-8, not
    JSON, a key given twice in one object (JSON leaves which one counts open), arrays or objects nested too
    deeply to read, or an integer longer than Python converts. NaN and Infinity, which Python's JSON writes and
    earlier checkpoints hold, are read."""
    path = Path(path)
    content = _read_bytes(path)
    try:
        return json.loads(content.decode(), object_pairs_hook=_object, parse_int=_integer)
    except UnicodeDecodeError:
        raise JSONError(path, "it is not UTF-8 text") from None
    except RecursionError:
        raise JSONError(path, "its arrays or objects are nested too deeply") from None
    except ValueError as error:  # json.JSONDecodeError, or `_object`'s and `_integer`'s InputError
        raise JSONError(path, str(error)) from None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    values = dict(pairs)
    if len(values) < len(pairs):
        twice = next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise InputError(f"the key {twice!r} appears twice in one object")
    return values


def _integer(digits: str) -> int:
    limit = sys.get_int_max_str_digits() or math.inf
    if len(digits.lstrip("-")) > limit:
        raise InputError(f"an integer of {len(digits):,} digits (at most {limit:,} are read)")
    return int(digits)


def json_text(data: Any) -> str:
    """`data` as indented JSON, a float that is not finite (a mean of no episodes) written as null: NaN and
    Infinity are not JSON, and other tools refuse them."""
    return json.dumps(_finite(data), indent=1, allow_nan=False)


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(value) for value in data]
    return data


def write_json(path: str | os.PathLike, data: Any) -> None:
    """`data` as JSON (`json_text`) in `path`, replaced whole (`write_whole`)."""
    write_whole(path, (json_text(data) + "\n").encode())


def write_whole(path: str | os.PathLike, content: bytes) -> None:
    """`content` in `path`, written beside it and renamed over it: a full disk or an interruption leaves the
    previous file (or none), never part of one, and an OSError for the caller to name."""
    write_together({Path(path): content})


def write_together(contents: dict[Path, bytes]) -> None:
    """Each path's content, every file written beside its path before any is renamed over it, so that a full
    disk leaves the previous files (or none) rather than some of the new ones (`write_whole`)."""
    partials = {path: path.with_name(f".{path.name}.partial") for path in contents}
    try:
        for path, partial in partials.items():
            partial.write_bytes(contents[path])
        for path, partial in partials.items():
            os.replace(partial, path)
    except BaseException:
        for partial in partials.values():
            partial.unlink(missing_ok=True)
        raise


def check_out(out: str | os.PathLike, option: str = "--out") -> None:
    """An InputError naming `option` when `out` is empty (the working directory, unnamed) or inside an installed
    package, which a command never writes into."""
    if not str(out):
        raise InputError(f"{option} must name a directory, got ''")
    where = Path(out).resolve()
    for package in PACKAGES:
        if where.is_relative_to(package):
            raise InputError(f"{option} {str(out)!r} is inside the installed package {package}: choose another")


def check_out_file(path: str | os.PathLike, option: str = "--out") -> Path:
    """A file a command is to write: an InputError naming `option` when its directory is missing, not writable
    or inside an installed package (`check_out`), or when something other than a regular file (a directory, a
    FIFO that would block the write) is already there. Returns it as a `Path`."""
    path = Path(path)
    check_out(path, option)
    if not path.parent.is_dir():
        raise InputError(f"{option} {str(path)!r}: directory {str(path.parent)!r} does not exist")
    if path.exists() and not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file"
        raise InputError(f"{option} {str(path)!r} is {what}")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputError(f"{option} {str(path)!r}: permission denied")
    return path
