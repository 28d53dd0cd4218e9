"""What a program will hold, estimated before anything is allocated, and the one refusal of what would not fit:
the vector environments' constructors and the agents' runs call `check_fits` with their estimate.

An estimate is read from shapes, never from allocations: `nbytes` of `jax.eval_shape`'s output (what a call
returns and what it is given), or `compiled_bytes` of a program compiled ahead of time (XLA's own count of its
arguments, outputs and temporaries). `tests/test_memory.py` compares both with the measured peak of small runs.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np

from maxatar.checks import InputError

GIB = 2**30


def nbytes(*trees) -> int:
    """Bytes of every array leaf of `trees` (arrays, numpy arrays or `jax.ShapeDtypeStruct`s, as
    `jax.eval_shape` returns them); other leaves count nothing."""
    leaves = jax.tree.leaves(trees)
    return sum(math.prod(leaf.shape) * np.dtype(leaf.dtype).itemsize for leaf in leaves if hasattr(leaf, "dtype"))


def compiled_bytes(compiled) -> int | None:
    """The memory a program compiled ahead of time holds while it runs (`jax.stages.Compiled`): its arguments,
    outputs and temporaries, less the outputs that reuse an argument's buffer; None where XLA does not say."""
    try:
        stats = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError, AttributeError):
        return None
    if stats is None:
        return None
    sizes = (stats.argument_size_in_bytes, stats.output_size_in_bytes, stats.temp_size_in_bytes)
    return sum(sizes) - stats.alias_size_in_bytes


def host_memory() -> int:
    """The machine's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def device_memory(device) -> int:
    """The memory of one device: what an accelerator reports, or the machine's for the CPU."""
    try:
        stats = device.memory_stats() or {}
    except (NotImplementedError, RuntimeError):
        stats = {}
    return stats.get("bytes_limit") or host_memory()


def check_fits(need: int, what: str, advice: str, devices: list | None = None) -> None:
    """Refuse (an InputError naming `what`, the bytes and `advice`) what would need more than the memory of
    `devices` together (None: the machine's, for what lives on the host), before anything is allocated."""
    have = host_memory() if devices is None else sum(device_memory(d) for d in devices)
    if need > have:
        where = "this machine"
        if devices:
            kinds = "/".join(sorted({d.platform for d in devices}))
            where = f"{len(devices)} {kinds} device{'s' if len(devices) > 1 else ''}"
        raise InputError(
            f"{what} needs about {need / GIB:,.1f} GiB ({need:,} bytes), more than the {have / GIB:,.1f} GiB of "
            f"memory of {where}: {advice}"
        )


__all__ = ["check_fits", "compiled_bytes", "device_memory", "host_memory", "nbytes"]
