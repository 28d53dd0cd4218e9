"""Shared test configuration: hypothesis profiles (deterministic in CI) and headless rendering."""

import errno
import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from maxatar import compilation_cache
from tests import tiers

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
# The persistent compilation cache as users get it (on, in their cache directory), for this process and the ones
# tests start; importing `benchmarks`, whose measurements keep it off, must not turn it off here.
os.environ.setdefault("MAXATAR_CACHE_DIR", str(compilation_cache.cache_dir() or "off"))

common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# CI: a fixed, reproducible search, so a green run stays green; locally: fresh examples every run.
settings.register_profile("ci", derandomize=True, print_blob=True, **common)
settings.register_profile("dev", **common)
settings.register_profile("ci-fast", derandomize=True, print_blob=True, max_examples=tiers.FAST_EXAMPLES, **common)
settings.register_profile("dev-fast", max_examples=tiers.FAST_EXAMPLES, **common)
PROFILE = "ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev")
settings.load_profile(PROFILE)


def pytest_configure(config):
    """The fast tier (`-m "not slow"`, docs/contributing.md): every property test with fewer examples."""
    if config.getoption("markexpr", "").replace(" ", "") == "notslow":
        tiers.fast = True
        if PROFILE in ("ci", "dev"):
            settings.load_profile(f"{PROFILE}-fast")


@pytest.fixture
def stray_sigterm_fails():
    """For tests that send SIGTERM: its handler outside the code under test fails the test instead of taking
    SIGTERM's default action, which would end the test process. Yields that handler."""

    def stray(*_):
        pytest.fail("SIGTERM reached the handler outside the code under test")

    before = signal.signal(signal.SIGTERM, stray)
    yield stray
    signal.signal(signal.SIGTERM, before)


@pytest.fixture
def full_disk(monkeypatch):
    """A full disk (ENOSPC) for the files the commands write whole (`maxatar.files.write_whole`, through
    `Path.write_bytes`): each write stops after a few bytes."""

    def write_bytes(path: Path, data: bytes) -> int:
        with open(path, "wb") as f:
            f.write(data[:3])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(Path, "write_bytes", write_bytes)


def pytest_unconfigure(config):
    """An xdist worker's last work comes after it has reported its results: pytest's final garbage collections
    (five full passes over a heap of compiled JAX programs) can outlast the 5 s execnet gives a worker to end
    once the run is over, and execnet then sends the worker SIGINT, whose KeyboardInterrupt lands in whatever
    Python code runs at that moment (hypothesis's gc callback: a traceback above the summary). No test is left
    to interrupt, so the worker ignores it and ends its collections."""
    if hasattr(config, "workerinput"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
