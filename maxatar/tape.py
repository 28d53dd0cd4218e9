"""The uniforms a Gymnasium front end consumes: call t after seeding draws `uniform(fold_in(key, t), shape)`.

Every `reset` or `step` of `MaxAtarEnv` and `MaxAtarVectorEnv` is one call: it takes one row of uniforms
(the step's draws first, then a reset's) and nothing else. The tape is counter-based rather than a key split
per call, so any call's row can be computed alone (inside the jitted step of the JAX backend) or a block of
calls ahead in one batched call (the Python backend, which would otherwise pay JAX's per-call dispatch on
every step). Both give the same numbers, so the two backends of a front end play the same episodes for the
same seed.

The counter is 32 bits, so a tape holds 2**32 calls: call 2**32 raises a RuntimeError (reseed to go on) rather
than repeat call 0's row. A seed's key is built from both of its 32-bit halves (`seed_key`), so every seed in
0 .. 2**64 - 1 has a tape of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.prng import key_words, threefry2x32, threefry2x32_int, threefry_uniform


def tape_row(key: jax.Array, t, shape: tuple[int, ...]) -> jax.Array:
    """Call t's uniforms (jittable; t a uint32 counter). The fold-in is the hash written out
    (`prng.threefry2x32`, the bits of `jax.random.fold_in` for a threefry key), which XLA fuses instead of
    running JAX's threefry as a rolled loop of small kernels on every call, and which no JAX setting changes."""
    raw = key_words(key)
    k0, k1 = threefry2x32(raw[0], raw[1], jnp.uint32(0), jnp.asarray(t, jnp.uint32))
    return threefry_uniform(k0, k1, tuple(shape))


def numpy_rows(raw_key: np.ndarray, start: int, shape: tuple[int, ...], count: int) -> np.ndarray:
    """Rows start .. start + count - 1 (`tape_row` of each) in numpy, for a key's raw (2,) uint32 words
    (`prng.key_words`): no compile and no JAX call, which the Python backend would otherwise pay on its first
    step and every block. `fold_in(key, t)` is the threefry
    hash of the counter pair (0, t) (JAX's `threefry_seed` of a 32-bit t); `uniform` hashes (0, i) under
    that key for element i and keeps 23 bits of `b0 ^ b1` as the mantissa (see `prng.uniform`). Both hashes
    run on flat arrays (each row's key repeated for its elements): numpy is much slower broadcasting over a
    short last axis."""
    calls = ((start + np.arange(count, dtype=np.uint64)) % 2**32).astype(np.uint32)
    size = math.prod(shape)
    with np.errstate(over="ignore"):
        k0, k1 = threefry2x32(np.uint32(raw_key[0]), np.uint32(raw_key[1]), np.zeros(count, np.uint32), calls)
        counter = np.tile(np.arange(size, dtype=np.uint32), count)
        b0, b1 = threefry2x32(np.repeat(k0, size), np.repeat(k1, size), np.zeros_like(counter), counter)
    mantissa = ((b0 ^ b1) >> np.uint32(9)) | np.uint32(0x3F800000)
    return (mantissa.view(np.float32) - np.float32(1.0)).reshape((count, *shape))


def python_rows(raw_key: np.ndarray, start: int, shape: tuple[int, ...], count: int) -> np.ndarray:
    """`numpy_rows` with the hashes on Python ints: the same numbers, cheaper for a few hashes (a new tape's
    first row: one reset of one environment), where numpy's fixed cost per call dominates."""
    size = math.prod(shape)
    k0, k1 = int(raw_key[0]), int(raw_key[1])
    words = []
    for call in range(start, start + count):
        c0, c1 = threefry2x32_int(k0, k1, 0, call % 2**32)
        for i in range(size):
            b0, b1 = threefry2x32_int(c0, c1, 0, i)
            words.append(((b0 ^ b1) >> 9) | 0x3F800000)
    mantissa = np.array(words, np.uint32)
    return (mantissa.view(np.float32) - np.float32(1.0)).reshape((count, *shape))


PYTHON_HASHES = 32  # a first row of up to this many hashes (about 9 us each) skips numpy's first 256-row block
FIRST_NUMPY_BLOCK = 256  # rows of a tape's first numpy block (later ones double, up to the block size)


TAPE_CALLS = 2**32  # calls on one tape: the counter is a uint32


def seed_words(seed: int) -> np.ndarray:
    """The raw (2,) uint32 data of the tape key of a seed in 0 .. 2**64 - 1 (`seed_key`): its two 32-bit halves,
    (seed >> 32, seed & 0xFFFFFFFF), computed without a JAX call (a seeded reset would otherwise pay JAX's
    dispatch twice, for the key and for its data). For seeds below 2**32 that is `jax.random.key(seed)`'s data
    (JAX keeps only a seed's low 32 bits with 64-bit types off, which would make seeds 2**32 apart share a
    tape), so their tapes are the ones JAX's key gives (under any key implementation: `prng.key_words`).
    `tests/test_backends.py` checks it against JAX over many seeds."""
    return np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)


def seed_key(seed: int) -> jax.Array:
    """The tape key of a seed in 0 .. 2**64 - 1: the threefry key whose data is `seed_words(seed)`
    (`jax.random.key(seed)` for seeds below 2**32)."""
    return jax.random.wrap_key_data(seed_words(seed), impl="threefry2x32")


def _used_up() -> RuntimeError:
    return RuntimeError(
        "this tape is used up: one seed's tape holds 2**32 calls (resets and steps); reset(seed=...) with a new "
        "seed to go on"
    )


class Tape:
    """A position on one seed's tape. `next_call()` hands the JAX backend the counter of the next call;
    `next_row()` hands the Python backend that call's row, as Python floats, from a block computed ahead.
    `key` is a JAX key, or a seed in 0 .. 2**64 - 1 standing for `seed_key(seed)`, which is then made only if
    the JAX backend asks for `tape.key`. A tape holds `TAPE_CALLS` calls; the next one raises a RuntimeError."""

    def __init__(self, key: jax.Array | int, shape: tuple[int, ...], block: int | None = None):
        self._seed, self._key = (key, None) if isinstance(key, int) else (None, key)
        self.shape = tuple(shape)
        self.position = 0
        # numpy's per-call overhead dominates small blocks, so a block holds many rows (up to 64k uniforms, few
        # enough to stay cheap in memory).
        size = math.prod(self.shape)
        self._block_size = max(1, int(block)) if block is not None else max(1, min(4096, 65536 // max(1, size)))
        self._rows: Iterator = iter(())  # the rest of the current block, one row per call
        self._expected = 0  # the position whose row `_rows` yields next
        self._raw_key = seed_words(self._seed) if self._seed is not None else np.asarray(key_words(self.key))
        # numpy blocks start small and double: a seeded reset (a new tape) then pays for a few hundred rows, not
        # thousands that the next reseed would throw away (evaluation loops reseed every episode). A tape's first
        # row alone comes first where its hashes are few (one environment's reset: `python_rows`), so that
        # make-and-reset pays for that row only.
        self._next_block = min(FIRST_NUMPY_BLOCK, self._block_size)
        self._first_row_alone = 1 + size <= PYTHON_HASHES

    @property
    def key(self) -> jax.Array:
        """The tape's JAX key (made on first use when the tape was given a seed)."""
        if self._key is None:
            self._key = seed_key(self._seed)
        return self._key

    def next_call(self) -> np.uint32:
        """The next call's counter (the JAX backend computes its row inside the jitted call)."""
        t = self.position
        if t >= TAPE_CALLS:
            raise _used_up()
        self.position += 1
        return np.uint32(t)

    def next_row(self) -> tuple:
        """The next call's row as (nested) tuples of Python floats, from the block computed ahead (the Python
        backend, which calls this on every step, so it is kept to one `next` on the block's iterator)."""
        t = self.position
        row = next(self._rows, None) if t == self._expected else None
        if row is None:  # the block is used up, or the position moved: a new block starts here
            self._rows = self._block_from(t)
            row = next(self._rows)
        self.position = self._expected = t + 1
        return row

    def _block_from(self, t: int) -> Iterator:
        """The rows of calls t, t + 1, ... of one block. They are cut from one flat list of Python floats by
        nested `zip`s, lazily: building the whole block as nested lists (`tolist()` of the block) costs about
        three times as much. A block ends at the tape's end (`TAPE_CALLS`)."""
        if t >= TAPE_CALLS:
            raise _used_up()
        if self._first_row_alone:
            self._first_row_alone = False
            rows = python_rows(self._raw_key, t, self.shape, 1)
        else:
            rows = numpy_rows(self._raw_key, t, self.shape, min(self._next_block, TAPE_CALLS - t))
            self._next_block = min(2 * self._next_block, self._block_size)
        if 0 in self.shape:  # empty rows, which zip would not yield
            return iter(rows.tolist())
        rows_iter = iter(rows.ravel().tolist())
        for length in reversed(self.shape):
            rows_iter = zip(*[rows_iter] * length, strict=True)  # groups of `length` items of the level below
        return rows_iter
