"""The machine a training run or a benchmark ran on, in a few words, for the notes beside its numbers.

The widest vector instructions are named because the agents' small dense layers are bound by them, and
machines of one name differ there: one seed of DQN's `minatar` preset trained at 1444 frames/s on one 2-core
"AMD EPYC" of this workplace and at 610 on another that has AVX2 but no AVX-512, so a wall-clock is read
together with them. Here, below everything that records a machine (the agents' evaluation, the benchmarks and
the lab's results), so that each of them writes the same line.
"""

from __future__ import annotations

import os
import platform


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags of the first processor listed in a /proc/cpuinfo text."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def vector_isa(flags: set[str]) -> str:
    """The widest x86 vector extension among `flags` ('' when none of them is there, e.g. on ARM)."""
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX")):
        if flag in flags:
            return name
    return ""


def cpu_description() -> str:
    """'<model>, <widest vector extension>, <n> logical CPUs' (the model from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as file:
            text = file.read()
    except OSError:
        text = ""
    names = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")]
    model = names[0] if names else platform.processor() or platform.machine() or "?"
    return ", ".join(part for part in (model, vector_isa(cpu_flags(text)), f"{os.cpu_count()} logical CPUs") if part)


def load_average(sep: str = " / ") -> str:
    """The 1, 5 and 15 minute load averages, one decimal each: what else ran beside a measurement."""
    return sep.join(f"{x:.1f}" for x in os.getloadavg())


def platform_line() -> str:
    """'<CPU>, <JAX backend> backend; Python <version>': the head of every machine line (runs and benchmarks)."""
    import jax

    return f"{cpu_description()}, {jax.default_backend()} backend; Python {platform.python_version()}"


def machine_now() -> str:
    """'<platform_line>; jax <version>; load average (1/5/15 min) a / b / c': what a result row written as it
    is measured (a training run, a benchmark row) ran on."""
    import jax

    return f"{platform_line()}; jax {jax.__version__}; load average (1/5/15 min) {load_average()}"
