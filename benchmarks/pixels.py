"""What pixel observations cost per step, against the environment's own observation, in the same run.

For each id and obs_type (the own observation, "rgb", "grayscale"), at the default picture size:
* `gymnasium.make(id, obs_type=...)` (the Python backend: the twin's step, the picture drawn in numpy) stepped
  in a plain Python loop with random actions: median microseconds per step;
* the pure JAX path: `num_envs` environments under `AutoReset`, vmapped, stepped inside one jitted `lax.scan`
  (the observations summed so that XLA cannot drop them): nanoseconds per environment step, best of repeats.

Usage: python -m benchmarks.pixels [--envs ...] [--num-envs 256] [--scan-steps 200] [--gym-steps 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

import maxatar
from benchmarks import options
from benchmarks.machine import load_average

DEFAULT_IDS = maxatar.registered_ids()
OBS_TYPES = (None, "rgb", "grayscale")


def gym_step_us(env_id: str, obs_type: str | None, steps: int) -> float:
    """Median microseconds of one `env.step` (a reset after an episode's end counts inside its step)."""
    env = gymnasium.make(env_id, obs_type=obs_type)
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, env.action_space.n, steps).tolist()
    times = []
    for action in actions:
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def pure_step_ns(env_id: str, obs_type: str | None, num_envs: int, steps: int, repeats: int) -> tuple[float, float]:
    """(ns per environment step, first call's seconds) of a jitted, vmapped AutoReset scan."""
    env, params = maxatar.make(env_id, obs_type=obs_type)
    auto = maxatar.AutoReset(env)

    @jax.jit
    def run(key):
        keys = jax.random.split(key, num_envs)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

        def body(carry, key):
            state, total = carry
            step_keys = jax.random.split(key, num_envs)
            actions = jax.random.randint(key, (num_envs,), 0, env.num_actions)
            obs, state, *_ = jax.vmap(auto.step, in_axes=(0, 0, 0, None))(step_keys, state, actions, params)
            return (state, total + jnp.sum(obs, dtype=jnp.int32)), None

        return jax.lax.scan(body, (state, jnp.int32(0)), jax.random.split(key, steps))[0][1]

    start = time.perf_counter()
    jax.block_until_ready(run(jax.random.key(0)))
    first = time.perf_counter() - start
    best = float("inf")
    for seed in range(1, repeats + 1):
        start = time.perf_counter()
        jax.block_until_ready(run(jax.random.key(seed)))
        best = min(best, time.perf_counter() - start)
    return 1e9 * best / (num_envs * steps), first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_envs(parser, default=DEFAULT_IDS)
    parser.add_argument("--num-envs", type=int, default=256, help="environments of the pure JAX scan")
    parser.add_argument("--scan-steps", type=int, default=200, help="steps of the pure JAX scan")
    parser.add_argument("--gym-steps", type=int, default=2000, help="timed steps of the gymnasium.make loop")
    parser.add_argument("--repeats", type=int, default=3, help="warm runs of the scan; the best is reported")
    args = parser.parse_args()

    print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}, {os.cpu_count()} logical CPUs; load average "
        f"{load_average()}; MinAtar's setting (sticky 0.1, all actions, no limit; "
        f"CartPole and Doors their defaults); pure path: N = {args.num_envs}, {args.scan_steps}-step scan"
    )
    header = ["env", "obs_type", "obs shape", "gymnasium.make us/step", "x own", "pure ns/env-step", "x own"]
    header.append("compile s")
    rows = []
    for env_id in args.envs:
        own = None
        for obs_type in OBS_TYPES:
            shape = maxatar.make(env_id, obs_type=obs_type)[0].obs_shape
            gym_us = gym_step_us(env_id, obs_type, args.gym_steps)
            pure_ns, first = pure_step_ns(env_id, obs_type, args.num_envs, args.scan_steps, args.repeats)
            own = own or (gym_us, pure_ns)
            rows.append(
                [
                    env_id.split("/")[-1],
                    obs_type or "own",
                    "x".join(map(str, shape)),
                    f"{gym_us:.1f}",
                    f"{gym_us / own[0]:.1f}x",
                    f"{pure_ns:,.0f}",
                    f"{pure_ns / own[1]:.1f}x",
                    f"{first:.1f}",
                ]
            )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
