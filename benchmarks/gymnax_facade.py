"""PureJaxRL-style rollout throughput: `maxatar.gymnax` against gymnax itself, same code, same run.

    python -m benchmarks.gymnax_facade                          # N=1024, 128 steps per call, median of 5
    python -m benchmarks.gymnax_facade --n 64 --steps 16 --repeats 3 --envs Breakout-MinAtar CartPole-v1

Both libraries go through one rollout function, written as PureJaxRL writes it: `jax.vmap(env.reset)`, then a
`lax.scan` whose body draws actions with `jax.vmap(env.action_space(params).sample)` over per-environment keys and
calls `jax.vmap(env.step)` (which auto-resets), with `env_params` closed over as PureJaxRL's `make_train` does.
Only the `make` differs. Each repeat times `--calls` compiled calls of `--steps` steps of `--n` environments; the
two libraries' repeats are interleaved, so load from other jobs hits both alike; the table shows the median.

`--setting gymnax` (default) compares like with like: MaxAtar is made with gymnax's defaults
(`maxatar.gymnax.GYMNAX_SETTINGS`: minimal action set, no sticky actions, gymnax's time limits). `--setting
minatar` runs MaxAtar with its own defaults (MinAtar's: sticky 0.1, full action set, no limit) and gymnax with the
full action set (gymnax has no sticky actions and keeps its time limit). gymnax is optional: without it the table
has MaxAtar's column only and says "gymnax not installed". gymnax >= 1.0 returns six values from `step`, 0.0.x
five; the rollout reads the first three, which both agree on.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from importlib import metadata

import jax
import jax.numpy as jnp

from benchmarks.machine import load_average
from maxatar import gymnax as facade

ENV_IDS = list(facade.GYMNAX_IDS)  # the five MinAtar games and CartPole-v1, by gymnax's names


def make_rollout(env, params, n: int, steps: int):
    """`rollout(carry) -> carry`, PureJaxRL's shape: `steps` vmapped steps of `n` environments in a scan. The
    carry keeps the observation and a reward sum, so XLA cannot drop any of the work."""

    def rollout(carry):
        def body(carry, key):
            obs, state, total = carry
            k_act, k_step = jax.random.split(key)
            action = jax.vmap(env.action_space(params).sample)(jax.random.split(k_act, n))
            out = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(k_step, n), state, action, params)
            obs, state, reward = out[0], out[1], out[2]
            return (obs, state, total + reward.sum()), None

        key, (obs, state, total) = carry
        key, scan_key = jax.random.split(key)
        (obs, state, total), _ = jax.lax.scan(body, (obs, state, total), jax.random.split(scan_key, steps))
        return key, (obs, state, total)

    return rollout


class Runner:
    """One library on one environment: reset, compile (timed), warm up, then timed calls."""

    def __init__(self, env, params, n: int, steps: int, seed: int = 0):
        self.work = n * steps
        key, reset_key = jax.random.split(jax.random.key(seed))
        obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(reset_key, n), params)
        carry = (key, (obs, state, jnp.float32(0.0)))
        start = time.perf_counter()
        self.rollout = jax.jit(make_rollout(env, params, n, steps), donate_argnums=0).lower(carry).compile()
        self.compile_s = time.perf_counter() - start
        self.carry = jax.block_until_ready(self.rollout(carry))
        self.rates: list[float] = []

    def measure(self, calls: int) -> None:
        """Time `calls` compiled calls back to back and record their steps/s (one repeat)."""
        start = time.perf_counter()
        for _ in range(calls):
            self.carry = jax.block_until_ready(self.rollout(self.carry))
        self.rates.append(calls * self.work / (time.perf_counter() - start))

    @property
    def median(self) -> float:
        """The median over repeats: robust to the other jobs on a shared machine."""
        return statistics.median(self.rates)


def make_pair(env_id: str, setting: str, gymnax_module):
    """(maxatar.gymnax env and params, gymnax env and params or None) for one id under one setting."""
    minatar = env_id.endswith("-MinAtar")
    if setting == "gymnax":
        ours = facade.make(env_id, **facade.GYMNAX_SETTINGS[env_id])
        theirs_kwargs = {}
    else:
        ours = facade.make(env_id)
        theirs_kwargs = {"use_minimal_action_set": False} if minatar else {}
    theirs = gymnax_module.make(env_id, **theirs_kwargs) if gymnax_module is not None else None
    return ours, theirs


def rate(x: float) -> str:
    """Steps/s as the repository's other tables print them (3.142M, 512.0k)."""
    return f"{x / 1e6:.3f}M" if x >= 1e6 else f"{x / 1e3:.1f}k"


def main(argv=None) -> None:
    """Parse the flags, build both libraries per id, time them interleaved and print the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=ENV_IDS, help="gymnax ids (default: the five games, CartPole)")
    parser.add_argument("--n", type=int, default=1024, help="environments (vmapped)")
    parser.add_argument("--steps", type=int, default=128, help="scan steps per compiled call")
    parser.add_argument("--calls", type=int, default=1, help="compiled calls per timed repeat")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per library (median reported)")
    parser.add_argument("--setting", choices=["gymnax", "minatar"], default="gymnax")
    args = parser.parse_args(argv)

    try:
        import gymnax as gymnax_module

        gymnax_note = f"gymnax {metadata.version('gymnax')}"
    except ImportError:
        gymnax_module, gymnax_note = None, "gymnax not installed"
    print(gymnax_note)
    load = load_average()
    print(
        f"N={args.n}, {args.steps} steps per call, {args.calls} call(s) per repeat, median of {args.repeats}; "
        f"setting {args.setting}; jax {jax.__version__} on {jax.default_backend()} "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs); load average {load}"
    )
    print()
    print("| env | maxatar.gymnax steps/s | gymnax steps/s | ratio | compile s (maxatar / gymnax) |")
    print("|---|---|---|---|---|")
    for env_id in args.envs:
        (env, params), theirs = make_pair(env_id, args.setting, gymnax_module)
        ours = Runner(env, params, args.n, args.steps)
        other, reason = None, gymnax_note
        if theirs is not None:
            try:
                other = Runner(*theirs, args.n, args.steps)
            except Exception as error:  # a peer's failure is a table cell, not a crash
                reason = f"gymnax failed: {type(error).__name__}: {str(error).splitlines()[0][:80]}"
        for _ in range(args.repeats):
            ours.measure(args.calls)
            if other is not None:
                other.measure(args.calls)
        if other is None:
            row = [rate(ours.median), reason, "-", f"{ours.compile_s:.2f} / -"]
        else:
            row = [
                rate(ours.median),
                rate(other.median),
                f"{ours.median / other.median:.2f}x",
                f"{ours.compile_s:.2f} / {other.compile_s:.2f}",
            ]
        print(f"| {env_id} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
