"""How a benchmark measures and records, in one place: repeats taken in turn (A B A B ...), their median and
range, the rate of a call, and the run record (command, machine, software, start, load) whose one line heads
every table a benchmark prints or writes.

On a shared machine load from other jobs comes and goes, so every case is measured once per repeat, the cases one
after the other, and a table quotes the median of its repeats with their range: a wide range means the machine
was busy while it was measured.
"""

from __future__ import annotations

import dataclasses
import datetime
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from maxatar.machine import load_average, platform_line

T = TypeVar("T")
# The software every run line names: JAX, the peers and the references it is measured against.
PACKAGES = ("jax", "jaxlib", "gymnax", "pgx", "gymnasium", "minatar", "numpy")


def interleaved(repeats: int, calls: dict) -> dict:
    """Call every `calls[key](repeat)` once per repeat, in turn (A B A B ...); returns key -> list of results."""
    results = {key: [] for key in calls}
    for repeat in range(repeats):
        for key, call in calls.items():
            results[key].append(call(repeat))
    return results


@dataclasses.dataclass(frozen=True)
class Spread:
    """The median of repeated measurements, quoted, and their range."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        values = list(values)
        return cls(statistics.median(values), min(values), max(values))

    def format(self, fmt: str | Callable[[float], str] = "{:,.0f}") -> str:
        """'median (min-max)', each number written by `fmt` (a format string or a function)."""
        write = fmt.format if isinstance(fmt, str) else fmt
        return f"{write(self.median)} ({write(self.low)}-{write(self.high)})"


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """`fn()` and the seconds it took. JAX dispatches asynchronously: `fn` waits for its results itself."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def rate_for(
    fn: Callable[[], Any],
    seconds: float,
    wait: Callable[[Any], Any] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Calls of `fn` per second, calling it (at least once) until `seconds` have passed. `wait(last result)` runs
    before the clock stops, for work a call leaves queued (a JAX result not waited for)."""
    calls, start = 0, clock()
    while True:
        result = fn()
        calls += 1
        if clock() - start >= seconds:
            break
    if wait is not None:
        wait(result)
    return calls / (clock() - start)


def call_times(fn: Callable[[Any], Any], inputs: Iterable) -> list[float]:
    """The seconds of each `fn(x)`, one call at a time: for the median of a call that a loop makes (an env step)."""
    clock, times = time.perf_counter_ns, []
    for x in inputs:
        start = clock()
        fn(x)
        times.append((clock() - start) * 1e-9)
    return times


# --- The run record --------------------------------------------------------------------------------------------


def versions(packages: Sequence[str]) -> str:
    """'<package> <version>, ...' ('not installed' for a missing one)."""
    found = []
    for package in packages:
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} not installed")
    return ", ".join(found)


def machine(*package_groups: Sequence[str]) -> str:
    """'<CPU>, <JAX backend> backend; Python <version>; <package> <version>, ...[; <more packages>]': what a run
    measured on and with (`PACKAGES` when no group is given)."""
    groups = package_groups or (PACKAGES,)
    return "; ".join([platform_line(), *(versions(group) for group in groups)])


def command(module: str, argv: Sequence[str] | None = None) -> str:
    """The command line that ran `module` (`argv`, or this process's own arguments)."""
    return " ".join(["python -m", module, *(sys.argv[1:] if argv is None else argv)])


def _now() -> str:
    return datetime.datetime.now().isoformat(timespec="seconds")


@dataclasses.dataclass
class Run:
    """One run of a benchmark: what ran, on what, when, under what load, how long and how many repeats. Made at
    the start (`Run(command, repeats)`), finished at the end; `line()` heads its tables, `record()` is what the
    results files keep (`Run.from_record` reads it back)."""

    command: str
    repeats: int
    machine: str = dataclasses.field(default_factory=machine)
    started: str = dataclasses.field(default_factory=_now)
    load_start: str = dataclasses.field(default_factory=load_average)
    minutes: float | None = None
    load_end: str | None = None
    order: str = "interleaved"  # how the repeats were taken ("back-to-back" where they could not be interleaved)
    _clock: float = dataclasses.field(default_factory=time.perf_counter, init=False, repr=False, compare=False)

    def finish(self) -> Run:
        """Note the time taken and the load at the end."""
        self.minutes = (time.perf_counter() - self._clock) / 60
        self.load_end = load_average()
        return self

    def line(self, *details: str) -> str:
        """'Run: `<command>` on <machine>; <details>; started ..., took ... s, <n> interleaved repeats (...); load
        average (1/5/15 min) at start ..., at end ...'."""
        where = "; ".join([f"Run: `{self.command}` on {self.machine}", *details])
        took = "-" if self.minutes is None else f"{self.minutes * 60:.0f}"
        return (
            f"{where}; started {self.started}, took {took} s, {self.repeats} {self.order} repeat"
            f"{'' if self.repeats == 1 else 's'} (medians; min-max over the repeats); load average (1/5/15 min) at "
            f"start {self.load_start}, at end {self.load_end}."
        )

    def record(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    @classmethod
    def from_record(cls, record: dict) -> Run:
        return cls(**{f.name: record[f.name] for f in dataclasses.fields(cls) if f.init and f.name in record})


def publish(run: Run, parts: Sequence[str], out: Path | None = None) -> str:
    """Finish `run`, print its line and then `parts` (tables, notes) as Markdown, and write the same to `out` when
    given. Returns the text."""
    run.finish()
    text = "\n\n".join([run.line(), *parts]) + "\n"
    print(text, flush=True)
    if out is not None:
        Path(out).write_text(text)
    return text
