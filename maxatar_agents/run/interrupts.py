"""SIGINT and SIGTERM as Ctrl-C: raised as KeyboardInterrupt, and remembered until the next safe point.

Python runs a signal handler between bytecodes of whatever is executing, and when that is a callback whose
exceptions the interpreter only prints (a weakref or `__del__` run by the garbage collector), the
KeyboardInterrupt is lost and the program goes on. So the handler also records the signal, and the loops that
run for long (`runner.run_intervals` before each interval, a sweep between trials) call `check`, which raises
again for a signal whose first raise was lost.

Some work must not be cut midway: XLA compiling calls back into Python (tracing, lowering), and a
KeyboardInterrupt raised inside such a callback leaves JAX's C++ state half updated (a run interrupted while
it compiled could end in a segmentation fault); a checkpoint's save must end with one whole checkpoint. Inside
`deferred` the signal is only recorded, and raised once the work is done.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_requested = threading.Event()
_deferring = 0  # how many `deferred` blocks are open (signal handlers run in the main thread only)


def check() -> None:
    """Raise KeyboardInterrupt if a stop was asked for inside `stops_like_ctrl_c` (a safe point's check)."""
    if _requested.is_set():
        raise KeyboardInterrupt


@contextlib.contextmanager
def deferred():
    """A stop asked for inside is raised (KeyboardInterrupt) when the block ends, not in the middle of it."""
    global _deferring
    raised = _requested.is_set()  # a stop raised before (being handled now) is not raised again
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if not _deferring and not raised:
        check()


@contextlib.contextmanager
def stops_like_ctrl_c():
    """SIGTERM (what a job scheduler or the end of a session sends) and SIGINT, even in a process started in
    the background (which inherits SIGINT ignored), raise KeyboardInterrupt while inside: a run saves its
    checkpoint, as on Ctrl-C, and exits. The previous handlers come back on the way out."""

    def interrupt(*_):
        _requested.set()
        if not _deferring:
            raise KeyboardInterrupt

    _requested.clear()
    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _requested.clear()
