"""The throughput harness: every JAX implementation runs through the same jitted `lax.scan`.

Each scan step draws random actions for all environments with one call, gives the implementation either one
key per environment (split from the step key) or the step key itself, steps and auto-resets the batch, and
carries the observation and a running reward sum, so that XLA cannot drop the observation. A measurement
calls the compiled rollout until `min_time` seconds have passed and returns steps per second.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.impls import JaxImpl, LoopImpl
from benchmarks.measure import interleaved, rate_for, timed


def make_rollout(impl: JaxImpl, n: int, steps: int):
    """`rollout(carry, params) -> carry`: `steps` batched steps of `n` environments with random actions."""

    def rollout(carry, params):
        def body(carry, _):
            key, state, obs, total = carry
            key, action_key, env_key = jax.random.split(key, 3)
            actions = jax.random.randint(action_key, (n,), 0, impl.num_actions, dtype=jnp.int32)
            env_keys = jax.random.split(env_key, n) if impl.keyed else env_key
            state, obs, reward, _ = impl.step(env_keys, state, actions, params)
            return (key, state, obs, total + reward.sum()), None

        carry, _ = jax.lax.scan(body, carry, None, length=steps)
        return carry

    return rollout


class JaxRunner:
    """One implementation at one batch size: compiled once (timed), then measured as often as asked.

    traced_params: pass the params to the compiled rollout as an argument (as `MaxAtarVectorEnv` does, and as
    changing or vmapping them without recompiling needs) instead of baking them in as constants (as a closure
    over `env_params` in a PureJaxRL-style loop does). Constants let XLA fold branches that depend on params.
    """

    def __init__(self, impl: JaxImpl, n: int, steps: int, traced_params: bool = False, seed: int = 0):
        self.impl, self.n, self.steps = impl, n, steps
        key = jax.random.PRNGKey(seed)
        state, obs = jax.jit(impl.reset, static_argnums=1)(key, n, impl.params)
        carry = (key, state, obs, jnp.float32(0.0))
        rollout = make_rollout(impl, n, steps)
        if traced_params:
            compiled, self.compile_s = timed(
                lambda: jax.jit(rollout, donate_argnums=0).lower(carry, impl.params).compile()
            )
            self.rollout = lambda carry: compiled(carry, impl.params)
        else:
            self.rollout, self.compile_s = timed(
                lambda: jax.jit(lambda carry: rollout(carry, impl.params), donate_argnums=0).lower(carry).compile()
            )
        self.carry = jax.block_until_ready(self.rollout(carry))  # warm-up: first run, page faults, caches

    def _call(self) -> None:
        self.carry = jax.block_until_ready(self.rollout(self.carry))

    def measure(self, min_time: float) -> float:
        """Environment steps per second over compiled calls until `min_time` seconds have passed."""
        return self.steps * self.n * rate_for(self._call, min_time)

    def close(self):
        self.carry = self.rollout = None


class LoopRunner:
    """A numpy reference stepped from Python, `n` environments per step, with pre-drawn random actions."""

    compile_s = float("nan")

    def __init__(self, impl: LoopImpl, n: int, seed: int = 0):
        self.impl, self.n = impl, n
        self.step = impl.make(n, seed)
        rows = max(1, 65536 // n)
        self.actions = np.random.default_rng(seed).integers(0, impl.num_actions, (rows, n))
        self.row = 0
        self.step(self.actions[0])  # warm-up

    def _step(self) -> None:
        self.row = (self.row + 1) % len(self.actions)
        self.step(self.actions[self.row])

    def measure(self, min_time: float) -> float:
        return self.n * rate_for(self._step, min_time)

    def close(self):
        self.step = None


class PythonStepRunner:
    """A Gymnasium vector env stepped from Python (`step(actions)` once per batch step); `convert` turns its
    outputs into numpy so that asynchronous JAX dispatch cannot hide time."""

    compile_s = float("nan")

    def __init__(self, make_env, n: int, num_actions: int, convert: bool, seed: int = 0):
        self.n, self.convert = n, convert
        self.env = make_env()
        self.env.reset(seed=seed)
        rows = max(1, 65536 // n)
        self.actions = np.random.default_rng(seed).integers(0, num_actions, (rows, n)).astype(np.int32)
        self.row = 0
        _, self.compile_s = timed(self._step)  # the first step compiles

    def _step(self):
        self.row = (self.row + 1) % len(self.actions)
        out = self.env.step(self.actions[self.row])
        if self.convert:
            out = [np.asarray(x) for x in out[:4]]
        return out

    def measure(self, min_time: float) -> float:
        return self.n * rate_for(self._step, min_time, wait=lambda out: jax.block_until_ready(out[:4]))

    def close(self):
        self.env.close()


def rates(runners: dict, repeats: int, min_time: float) -> dict[object, list[float]]:
    """key -> steps/s of each repeat of `runners[key]`, the runners measured in turn (A B A B ...)."""
    return interleaved(
        repeats, {key: lambda _, runner=runner: runner.measure(min_time) for key, runner in runners.items()}
    )
