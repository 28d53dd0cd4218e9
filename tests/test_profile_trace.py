"""benchmarks/profile_envs.py --trace ranks trace events by self time: a container (the executable, a while loop)
counts only the time not spent in the events nested in it, on its own thread; the kernels per step count a GPU's
device process alone."""

import pytest

from benchmarks.profile_envs import device_events, self_times

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)


def event(name, ts, dur, tid=1):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def test_nested_events_are_subtracted_from_their_container_only():
    events = [
        event("execute", 0, 100),
        event("fusion", 10, 30),
        event("loop", 50, 40),
        event("copy", 55, 10),
        event("copy", 70, 10),
        event("kernel", 0, 60, tid=2),  # another thread: nested in nothing
        {"ph": "M", "name": "thread_name"},  # metadata: not a duration
    ]
    assert self_times(events) == {
        "execute": [30.0, 1],
        "fusion": [30.0, 1],
        "loop": [20.0, 1],
        "copy": [20.0, 2],
        "kernel": [60.0, 1],
    }


def test_kernels_per_step_count_the_device_process_where_the_trace_has_one():
    host, kernel = event("launch", 0, 5), {**event("fusion", 0, 5), "pid": 7}
    named = [{"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "/device:GPU:0"}}]
    assert device_events([host, kernel, *named]) == [kernel]
    assert device_events([host, kernel]) == [host, kernel]  # a CPU's trace: every thunk
