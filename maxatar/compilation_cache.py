"""JAX's persistent compilation cache, on by default for MaxAtar's jitted paths: a program compiled once (an
agent's training interval, a vector environment's step) is read back from disk by the next process that
needs it, so a second run of the same command skips most of its compile time.

`enable()` is called by `maxatar.make` (and so by every front end) and by the agents' runner. It points JAX's
cache (`jax_compilation_cache_dir`) at `MAXATAR_CACHE_DIR`, by default `$XDG_CACHE_HOME/maxatar/jax`
(`~/.cache/maxatar/jax`), unless the process already chose a cache directory itself (`JAX_COMPILATION_CACHE_DIR`
or `jax.config.update`), which is then left as it is. `MAXATAR_CACHE_DIR=off` (or empty) turns it off.

It also bounds the cache (`jax_compilation_cache_max_size`, least recently used entries go first), which makes
JAX guard every read and write of the directory with a file lock, so processes sharing the cache never read an
entry another is writing. An entry that cannot be read (a process killed mid-write) is compiled again, with a
warning from JAX. Only programs that take JAX at least `MIN_COMPILE_SECONDS` to compile are written
(`jax_persistent_cache_min_compile_time_secs`).

The cache holds compiled programs that later runs execute, so it must be private: the directories MaxAtar makes
are `0700` whatever the umask (so the entries JAX writes in them are out of other users' reach), and an existing
directory that another user owns or that others can write is refused with a warning (the run goes on without a
cache).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import warnings
from pathlib import Path

import jax

ENV_VAR = "MAXATAR_CACHE_DIR"
OFF = ("", "0", "off", "false", "no")
MAX_SIZE = 2 * 1024**3  # bytes on disk before the least recently used programs are dropped
# Programs that compile faster than this are not written (JAX's default, 1 s, leaves out a vector env's step).
MIN_COMPILE_SECONDS = 0.1


_path = functools.lru_cache(maxsize=8)(Path)  # `enable` runs on every make: a Path costs 10 us to build


def cache_dir() -> Path | None:
    """The directory MaxAtar's cache uses: `MAXATAR_CACHE_DIR`, else `$XDG_CACHE_HOME/maxatar/jax`; None when
    turned off."""
    chosen = os.environ.get(ENV_VAR)
    if chosen is not None:
        return None if chosen.strip().lower() in OFF else Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "maxatar" / "jax"


def private_dir(directory: Path) -> bool:
    """Make `directory` (and any missing parents) with mode 0700, whatever the umask; True if it is then safe to
    hold compiled code: owned by this user and writable by no one else, and writable by this process. Otherwise
    warn and return False (the run compiles as if there were no cache)."""
    missing = [p for p in [directory, *directory.parents] if not p.exists()]
    try:
        for path in reversed(missing):
            path.mkdir(mode=0o700, exist_ok=True)  # mkdir's mode only loses bits to the umask, so 0700 stays 0700
        info = directory.stat()
        if not stat.S_ISDIR(info.st_mode):  # a regular file: JAX would warn on every compile, naming no variable
            raise NotADirectoryError(errno.ENOTDIR, "it is not a directory")
        if not os.access(directory, os.W_OK):  # JAX would fail every write, without a word
            raise PermissionError(errno.EACCES, "not writable by this process")
    except OSError as error:
        warnings.warn(
            f"not using the compilation cache {directory}: cannot create or write it ({error.strerror or error}); "
            f"set {ENV_VAR} to a writable directory, or to off",
            stacklevel=3,
        )
        return False
    owner = getattr(os, "getuid", lambda: info.st_uid)()
    if info.st_uid != owner or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        warnings.warn(
            f"not using the compilation cache {directory}: it is owned by another user or writable by others, "
            f"and it holds code that runs (make it private with `chmod 700 {directory}`, or set {ENV_VAR})",
            stacklevel=3,
        )
        return False
    return True


def enable() -> Path | None:
    """Use the persistent compilation cache in this process, unless it is turned off or the process already
    set a cache directory. Returns the directory in use (None when none is). Cheap and idempotent: safe to call
    before every compilation."""
    current = jax.config.jax_compilation_cache_dir
    if current:
        return _path(current)
    directory = cache_dir()
    if directory is None:
        return None
    if not private_dir(directory):
        return None
    jax.config.update("jax_compilation_cache_max_size", MAX_SIZE)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    return directory
