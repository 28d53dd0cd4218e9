"""Throughput of the tabular agents (`maxatar_agents.q_learning`): environment steps with a TD update per second,
summed over 30 agents trained at once on Doors, against the 1.8M steps/s reported for 30 tabular Q-learning
agents on a vectorised gridworld on a CPU (target: 10x, 18M steps/s).

Each row times one logging interval of the compiled program, vmapped over the agents as the command line runs
it (`make_program(config).interval`), after a warm-up call that compiles it; steps/s is the median of the
repeats. Rows: the model (`table`: dynamics as gathers from the tables enumerated from the environment; `env`:
`env.transition` itself), the TD target, environments per agent, and `learn=no`, the same program acting and
stepping without updating its tables (what the updates cost).

    python -m benchmarks.tabular --repeats 5
    python -m benchmarks.tabular --num-envs 64 256 --models table --methods q_learning
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.machine import load_average
from maxatar_agents import q_learning

REFERENCE = 1.8e6  # steps/s of the source's 30 tabular Q-learning agents on a vectorised gridworld, CPU
TARGET = 10.0


def measure(config: q_learning.Config, agents: int, repeats: int, learn: bool) -> tuple[float, float]:
    """(median steps/s over all agents, compile seconds) of one logging interval."""
    program = q_learning.tabular_program(config, learn)
    keys = jnp.stack([jax.random.PRNGKey(i) for i in range(agents)])
    state = jax.jit(jax.vmap(program.init))(keys)
    start = time.perf_counter()
    interval = jax.jit(jax.vmap(program.interval, in_axes=(0, None))).lower(state, jnp.int32(0)).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(interval(state, jnp.int32(0)))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(interval(state, jnp.int32(0)))
        times.append(time.perf_counter() - start)
    return agents * program.schedule.frames_per_interval / float(np.median(times)), compile_s


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=30)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 256], help="environments per agent")
    parser.add_argument("--models", nargs="+", default=list(q_learning.MODELS), choices=q_learning.MODELS)
    parser.add_argument("--methods", nargs="+", default=list(q_learning.METHODS), choices=q_learning.METHODS)
    parser.add_argument("--steps", type=int, default=4_000_000, help="steps per interval over all agents")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, jax {jax.__version__}, "
        f"{jax.default_backend()} backend; load average at start {load_average()}"
    )
    print(f"{args.agents} agents on Doors, medians of {args.repeats}; ratio against {REFERENCE / 1e6:.1f}M steps/s\n")
    print("| model | method | envs per agent | learn | steps/s | x 1.8M | compile s |")
    print("|---|---|---|---|---|---|---|")
    for model in args.models:
        for method in args.methods:
            for num_envs in args.num_envs:
                for learn in (True, False) if method == args.methods[0] else (True,):
                    frames = max(1, args.steps // (args.agents * num_envs)) * num_envs
                    config = q_learning.Config(
                        method=method, model=model, num_envs=num_envs, total_steps=frames, log_points=1
                    )
                    rate, compile_s = measure(config, args.agents, args.repeats, learn)
                    print(
                        f"| {model} | {method} | {num_envs} | {'yes' if learn else 'no'} | {rate / 1e6:.2f}M | "
                        f"{rate / REFERENCE:.1f}x | {compile_s:.2f} |",
                        flush=True,
                    )
    print(f"\nload average at the end {load_average()}")


if __name__ == "__main__":
    main()
