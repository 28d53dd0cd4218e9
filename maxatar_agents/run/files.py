"""The files the commands read and the directories they write: a file is read only if it is a regular file
(a FIFO would block, a symlink to /dev/zero read forever), and no command writes into the installed packages."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MAX_JSON = 1 << 30  # a JSON file (a checkpoint's metrics rows grow with intervals x runs) is read whole, up to this
# The installed packages, side by side as the one distribution installs them.
PACKAGES = tuple(Path(__file__).resolve().parents[2] / name for name in ("maxatar", "maxatar_agents", "renderers"))


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


def read_text(path: Path) -> str:
    """A regular file's text (`open_regular`), at most `MAX_JSON` bytes of it."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_JSON:
            raise ValueError(f"{path} is larger than a JSON file of a run can be ({MAX_JSON:,} bytes)")
        return f.read(size).decode()  # read(size): a buffer of the file's size, never MAX_JSON's


def check_out(out: Path, option: str = "--out") -> None:
    """A ValueError naming `option` when `out` is empty (the working directory, unnamed) or inside an installed
    package, which a command never writes into."""
    if not str(out):
        raise ValueError(f"{option} must name a directory, got ''")
    where = Path(out).resolve()
    for package in PACKAGES:
        if where.is_relative_to(package):
            raise ValueError(f"{option} {str(out)!r} is inside the installed package {package}: choose another")
