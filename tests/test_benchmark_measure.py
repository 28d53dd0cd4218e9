"""The benchmarks' one way of measuring and recording (benchmarks/measure.py), on values made by hand: repeats taken
in turn, their median and range, a call rate against a fake clock, and the run line that heads every table. No
timing is asserted."""

from __future__ import annotations

import pytest

from benchmarks import measure
from benchmarks.measure import Run, Spread

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)


def test_interleaved_calls_each_case_once_per_repeat_in_turn():
    order = []
    calls = {key: lambda repeat, key=key: order.append((key, repeat)) or f"{key}{repeat}" for key in "AB"}
    results = measure.interleaved(3, calls)
    assert order == [("A", 0), ("B", 0), ("A", 1), ("B", 1), ("A", 2), ("B", 2)]
    assert results == {"A": ["A0", "A1", "A2"], "B": ["B0", "B1", "B2"]}


def test_a_spread_is_the_median_and_the_range_of_its_values():
    spread = Spread.of([5.0, 1.0, 4.0, 2.0, 3.0])
    assert spread == Spread(median=3.0, low=1.0, high=5.0)
    assert Spread.of([1, 2, 3, 10]).median == 2.5
    assert spread.format() == "3 (1-5)"
    assert Spread(1234.5, 1000.0, 2000.0).format("{:.1f}") == "1234.5 (1000.0-2000.0)"
    assert spread.format(lambda x: f"{x / 1e3:.3f}k") == "0.003k (0.001k-0.005k)"


class FakeClock:
    """A clock that moves only when a call ticks it."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def test_rate_for_calls_until_the_time_has_passed_and_waits_for_the_last_result():
    clock, waited = FakeClock(), []
    calls = iter(range(100))

    def call():
        clock.tick(0.25)
        return next(calls)

    def wait(last):
        waited.append(last)
        clock.tick(1.0)  # work still queued after the last call

    assert measure.rate_for(call, 1.0, clock=clock) == 4.0  # 4 calls of 0.25 s
    assert measure.rate_for(call, 0.6, wait=wait, clock=clock) == 3 / 1.75  # the wait counts
    assert waited == [6]
    assert measure.rate_for(call, 0.0, clock=clock) == 4.0  # at least one call


def test_timed_and_call_times_give_results_and_seconds():
    result, seconds = measure.timed(lambda: 42)
    assert result == 42 and seconds >= 0
    seen = []
    times = measure.call_times(seen.append, [1, 2, 3])
    assert seen == [1, 2, 3] and len(times) == 3 and all(t >= 0 for t in times)


def test_the_run_line_names_the_command_machine_repeats_and_both_loads():
    run = Run(
        "python -m benchmarks.render_path --repeats 3", 3, "Some CPU, AVX2, 2 logical CPUs", "2026-01-02T03:04:05"
    )
    run.load_start, run.minutes, run.load_end = "1.0 / 2.0 / 3.0", 0.5, "4.0 / 5.0 / 6.0"
    line = run.line("torch threads 1")
    assert line == (
        "Run: `python -m benchmarks.render_path --repeats 3` on Some CPU, AVX2, 2 logical CPUs; torch threads 1; "
        "started 2026-01-02T03:04:05, took 30 s, 3 interleaved repeats (medians; min-max over the repeats); load "
        "average (1/5/15 min) at start 1.0 / 2.0 / 3.0, at end 4.0 / 5.0 / 6.0."
    )
    # What results files keep reads back to the same line, extra keys beside it ignored.
    assert Run.from_record({**run.record(), "notes": []}).line("torch threads 1") == line
    assert "5 back-to-back repeats" in Run("c", 5, "m", order="back-to-back").line()


def test_a_finished_run_has_its_duration_and_end_load(tmp_path, capsys):
    run = Run(measure.command("benchmarks.x", ["--repeats", "1"]), 1, "m")
    assert run.command == "python -m benchmarks.x --repeats 1" and run.load_start and run.load_end is None
    out = tmp_path / "table.md"
    text = measure.publish(run, ["| a |\n|---|"], out)
    assert run.minutes >= 0 and run.load_end
    assert out.read_text() == text == capsys.readouterr().out.rstrip("\n") + "\n"
    assert text.startswith("Run: `python -m benchmarks.x --repeats 1` on m;") and text.endswith("| a |\n|---|\n")
