"""Random numbers and the XLA tricks every environment step relies on, written once.

* `uniform` is `jax.random.uniform` (partitionable threefry, JAX's default), bit for bit, with the threefry hash
  written out so that XLA's CPU backend fuses it and no JAX setting changes its numbers (`key_words`:
  `tests/test_random.py` proves both);
* `uniform_to_int` and `float32_ceiling` turn float32 uniforms into the reference's float64 decisions exactly;
* `materialize` keeps XLA from recomputing a value inside every fusion that reads it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32, 20 rounds (Salmon et al. 2011; the parameters JAX uses), written out round by round so that
    XLA fuses the whole hash into one elementwise loop instead of running JAX's rolled loop of small kernels.

    Works on jnp and numpy values alike. The first addition makes fresh values, which the rounds then update
    with augmented assignments: a rebinding for jnp, in place for numpy arrays, where it spares the Python
    backend's tape (`maxatar.tape.numpy_rows`) a temporary array per operation. So for numpy, `x0 + k0` and
    `x1 + k1` must have the same shape; the callers' arrays are never changed."""
    keys = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    x0, x1 = x0 + keys[0], x1 + keys[1]
    for block in range(5):
        for r in _THREEFRY_ROTATIONS[block % 2]:
            x0 += x1
            high = x1 << np.uint32(r)  # rotate left by r: (x1 << r) | (x1 >> (32 - r))
            x1 >>= np.uint32(32 - r)
            x1 |= high
            x1 ^= x0
        x0 += keys[(block + 1) % 3]
        x1 += keys[(block + 2) % 3]
        x1 += np.uint32(block + 1)
    return x0, x1


# The rounds of `threefry2x32_int` as data: per block of four rounds, its (r, 32 - r) rotations, the key words
# injected after it and the block's counter.
_INT_SCHEDULE = tuple(
    (tuple((r, 32 - r) for r in _THREEFRY_ROTATIONS[block % 2]), (block + 1) % 3, (block + 2) % 3, block + 1)
    for block in range(5)
)


def threefry2x32_int(k0: int, k1: int, x0: int, x1: int) -> tuple[int, int]:
    """`threefry2x32` on Python ints (32-bit words): for a handful of hashes, where numpy's fixed cost of about
    a hundred array operations per call is most of the work (a new tape's first row, `maxatar.tape`)."""
    mask = 0xFFFFFFFF
    keys = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0, x1 = (x0 + k0) & mask, (x1 + k1) & mask
    for rotations, first, second, counter in _INT_SCHEDULE:
        for left, right in rotations:
            x0 = (x0 + x1) & mask
            x1 = ((x1 << left) & mask | x1 >> right) ^ x0
        x0 = (x0 + keys[first]) & mask
        x1 = (x1 + keys[second] + counter) & mask
    return x0, x1


# JAX's key implementations, by name, as the threefry key they stand for. rbg and unsafe_rbg seed a key as the
# threefry key of the seed twice ([k0, k1, k0, k1]), so their first two words make `jax.random.key(seed)` the
# same game under every implementation (rbg's split and fold_in keep the halves equal, so its keys all do).
KEY_IMPLEMENTATIONS = ("threefry2x32", "rbg", "unsafe_rbg")


def key_words(key) -> jax.Array:
    """The (2,) uint32 threefry key that `key` stands for, whatever JAX's settings: a threefry key's data, or
    the first two words of an rbg or unsafe_rbg key (typed, or raw (4,) data). Every draw hashes these words
    with the threefry written out here, never through `jax.random`, whose bits depend on
    `jax_threefry_partitionable`. `maxatar.checks.check_key` refuses keys of any other implementation."""
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return key[:2]


def materialize(x: jax.Array) -> jax.Array:
    """x itself, computed once. XLA's CPU backend copies elementwise chains into every consumer fusion (and
    drops optimization barriers before fusing); for a value read by many fusions (a step's uniforms, the
    terminal flag that the reset select of every state field reads) that multiplies the work. A running max
    over (lowest value, x) is a reduce-window, which is not fused into its consumers, so x is materialized."""
    dtype = jnp.dtype(jnp.uint8 if x.dtype == jnp.bool_ else x.dtype)
    lowest = jnp.iinfo(dtype).min if jnp.issubdtype(dtype, jnp.integer) else -jnp.inf
    pair = jnp.stack([jnp.full(x.shape, lowest, dtype), x.astype(dtype)])
    return jax.lax.cummax(pair, axis=0)[1].astype(x.dtype)


def uniform(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """float32 uniforms in [0, 1) from the threefry key `key_words(key)`: bit for bit what
    `jax.random.uniform(key, shape)` gives for a threefry key under partitionable threefry (JAX's default since
    0.5), and the same numbers under any JAX setting or key implementation. The counter is 32 bits: a call
    draws fewer than 2**32 numbers (MaxAtar's draw a few per environment).

    JAX lowers the threefry hash on CPU as a rolled loop of five rounds, each a few small kernels with copies
    in between; written out in plain `jnp` (the same counters, rounds and mantissa trick as JAX's partitionable
    threefry), XLA fuses the whole hash into one elementwise loop, which makes a step's draws much cheaper.
    `tests/test_random.py` proves the equality over many keys and shapes, and the numbers' independence of
    JAX's settings."""
    shape = tuple(int(d) for d in shape)
    words = key_words(key)
    return threefry_uniform(words[0], words[1], shape)


def threefry_uniform(k0, k1, shape: tuple[int, ...]) -> jax.Array:
    """`uniform` for the threefry key whose raw words are (k0, k1), for callers that already hold the words."""
    size = int(np.prod(shape, dtype=np.int64))
    counter = jax.lax.iota(jnp.uint32, size).reshape(shape)
    b0, b1 = threefry2x32(k0, k1, jnp.zeros(shape, jnp.uint32), counter)
    mantissa = ((b0 ^ b1) >> np.uint32(9)) | np.uint32(0x3F800000)
    # Materialized: otherwise XLA would recompute the whole hash inside every fusion that reads a uniform.
    return jax.lax.bitcast_convert_type(materialize(mantissa), jnp.float32) - np.float32(1.0)


def uniform_to_int(u, low, high):
    """Map a uniform in [0, 1) to an integer in [low, high), like numpy's `randint(low, high)`, so one uniform
    stands for each of the reference's integer draws."""
    n = high - low
    return low + jnp.minimum((u * n).astype(jnp.int32), n - 1)


def float32_ceiling(p):
    """The smallest float32 >= p (at least the smallest normal float32 when p > 0). For every float32 u that
    is 0 or normal, as every uniform draw is, `u < float32_ceiling(p)` iff `u < p` exactly, so the float32
    sticky draw decides as the reference's float64 `rand() < p` does, whatever p is."""
    p = np.asarray(p, np.float64)
    f = p.astype(np.float32)
    ceiling = np.where(f.astype(np.float64) < p, np.nextafter(f, np.float32(np.inf)), f)
    # XLA on CPU flushes subnormal floats to zero: lift a positive p to the smallest normal float32, which
    # keeps the answer exact (draws are multiples of 2**-24, so none lies between p and that bound).
    return np.where(p > 0, np.maximum(ceiling, np.finfo(np.float32).tiny), ceiling).astype(np.float32)


@functools.lru_cache(maxsize=256)
def float32_ceiling_of(p: float) -> float:
    """`float32_ceiling` of one Python float, as a Python float; cached, since every `maxatar.make` checks its
    sticky probability and the numpy round trip would be a tenth of making a CartPole."""
    return float(float32_ceiling(p))
