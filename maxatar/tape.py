"""The uniforms a Gymnasium front end consumes: call t after seeding draws `uniform(fold_in(key, t), shape)`.

Every `reset` or `step` of `MaxAtarEnv` and `MaxAtarVectorEnv` is one call: it takes one row of uniforms
(the step's draws first, then a reset's) and nothing else. The tape is counter-based rather than a key split
per call, so any call's row can be computed alone (inside the jitted step of the JAX backend) or a block of
calls ahead in one batched call (the Python backend, which would otherwise pay JAX's per-call dispatch on
every step). Both give the same numbers, so the two backends of a front end play the same episodes for the
same seed.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import uniform


def tape_row(key: jax.Array, t, shape: tuple[int, ...]) -> jax.Array:
    """Call t's uniforms (jittable; t a uint32 counter)."""
    return uniform(jax.random.fold_in(key, t), shape)


@partial(jax.jit, static_argnums=(2, 3))
def _rows(key: jax.Array, start, shape: tuple[int, ...], count: int) -> jax.Array:
    """Rows start .. start + count - 1 in one call."""
    calls = start + jnp.arange(count, dtype=jnp.uint32)
    return jax.vmap(lambda t: tape_row(key, t, shape))(calls)


class Tape:
    """A position on one seed's tape. `next_call()` hands the JAX backend the counter of the next call;
    `next_row()` hands the Python backend that call's row, as Python floats, from a block computed ahead."""

    def __init__(self, key: jax.Array, shape: tuple[int, ...], block: int = 256):
        self.key = key
        self.shape = tuple(shape)
        self.position = 0
        self._block_size = max(1, int(block))
        self._block: list = []
        self._block_start = 0

    def next_call(self) -> np.uint32:
        t = self.position
        self.position += 1
        return np.uint32(t % 2**32)

    def next_row(self) -> list:
        t = self.position
        offset = t - self._block_start
        if not 0 <= offset < len(self._block):
            rows = _rows(self.key, np.uint32(t % 2**32), self.shape, self._block_size)
            self._block, self._block_start, offset = np.asarray(rows).tolist(), t, 0
        self.position += 1
        return self._block[offset]
