"""A scripted stand-in for numpy's `RandomState`, to drive the MinAtar reference with chosen values.

It answers the calls the reference makes (`rand`, `randint`, `uniform`, `choice`) with values taken from a
`source`, and logs every call, so a test knows both *what* the reference drew and *when*. Uniforms lie on
the 2**-24 grid `jax.random.uniform` draws from, so feeding them into the float32 JAX environment is exact.

Sources:
* `HypothesisSource(data)`: every value is chosen (and shrunk) by hypothesis; for short episodes.
* `SeededSource(seed, forced)`: values from a seeded generator, with a few hypothesis-chosen values forced
  at given call indices; for episodes of thousands of steps, where a hypothesis choice per draw would
  overflow its buffer.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st

# The values `jax.random.uniform` can produce: multiples of 2**-24 in [0, 1). They are exact in float32 and
# never subnormal (XLA on CPU would flush a subnormal draw to zero where the reference would not).
UNIFORM32 = st.integers(0, 2**24 - 1).map(lambda k: k / 2**24)


@dataclasses.dataclass
class Call:
    method: str  # "rand" or "randint"
    args: tuple
    value: object  # float, int, or numpy array for sized calls

    def __repr__(self) -> str:
        """Short, for failure reports: `randint(0, 2, None) -> 1`."""
        return f"{self.method}({', '.join(map(repr, self.args))}) -> {np.asarray(self.value).tolist()}"


class HypothesisSource:
    def __init__(self, data):
        self.data = data

    def uniform(self) -> float:
        return float(self.data.draw(UNIFORM32))

    def integer(self, low: int, high: int) -> int:
        return int(self.data.draw(st.integers(low, high - 1)))


class SeededSource:
    """Float32 uniforms and integers from a seeded generator; `forced` maps call index -> uniform."""

    def __init__(self, seed: int, forced: dict[int, float] | None = None):
        self.rng = np.random.default_rng(seed)
        self.forced = dict(forced or {})
        self.count = 0

    def uniform(self) -> float:
        self.count += 1
        if self.count - 1 in self.forced:
            return float(np.float32(self.forced[self.count - 1]))
        return float(self.rng.random(dtype=np.float32))

    def integer(self, low: int, high: int) -> int:
        self.count += 1
        if self.count - 1 in self.forced:
            u = float(np.float32(self.forced[self.count - 1]))
            return low + min(int(u * (high - low)), high - low - 1)
        return int(self.rng.integers(low, high))


class ScriptedRandom:
    """Duck-typed `numpy.random.RandomState` whose answers come from a source and are logged."""

    def __init__(self, source):
        self.source = source
        self.log: list[Call] = []

    def _sized(self, size, one):
        if size is None:
            return one()
        return np.array([one() for _ in range(int(np.prod(size)))]).reshape(size)

    def _record(self, method, args, value):
        # A copy: the reference may modify a returned array in place (Freeway multiplies speeds by signs).
        self.log.append(Call(method, args, np.array(value, copy=True) if isinstance(value, np.ndarray) else value))

    def rand(self, *shape):
        value = self._sized(shape or None, self.source.uniform)
        self._record("rand", shape, value)
        return value

    def random(self, size=None):
        value = self._sized(size, self.source.uniform)
        self._record("rand", (size,) if size else (), value)
        return value

    def uniform(self, low=0.0, high=1.0, size=None):
        u = self._sized(size, self.source.uniform)
        self._record("rand", (size,) if size else (), u)
        return low + (high - low) * u

    def randint(self, low, high=None, size=None):
        if high is None:
            low, high = 0, low
        value = self._sized(size, lambda: self.source.integer(low, high))
        self._record("randint", (low, high, size), value)
        return value

    def choice(self, *args, **kwargs):
        raise AssertionError(f"minatar 1.0.15 does not call choice; got choice{args}{kwargs}")

    def take_log(self) -> list[Call]:
        """The calls since the last `take_log` (one step's worth when called after every step)."""
        log, self.log = self.log, []
        return log


def attach(reference_env, scripted: ScriptedRandom) -> ScriptedRandom:
    """Place one scripted generator in both the wrapper and the game, as `Environment.seed` does."""
    reference_env.random = scripted
    reference_env.env.random = scripted
    return scripted
