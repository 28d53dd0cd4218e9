"""Benchmarks of the baseline agents (a script that prints tables, not a test).

  (a) `cartpole`: DQN's and SAC's `cartpole` presets on several seeds (vmapped): the final greedy /
      deterministic return of every seed (target: >= 475 for all) and the wall time.
  (b) `throughput`: DQN's `minatar` preset on Breakout, frames per second of this implementation against
      MinAtar's own PyTorch examples/dqn.py on this machine, for the same number of frames (the reference
      is not shipped: pass its path with --reference, e.g. a checkout of github.com/kenjyoung/MinAtar).
  (c) `fast`: wall time for DQN's `fast` preset to reach a mean return of 10 over the last 100 training
      episodes on Breakout.

    python -m benchmarks.agents_bench cartpole --seeds 4
    python -m benchmarks.agents_bench throughput --frames 20000 --reference MinAtar/examples/dqn.py
    python -m benchmarks.agents_bench fast --target 10 --max-frames 2000000 --seeds 3

Times exclude compilation, which is reported separately. Every figure depends on the machine and on what
else runs on it; the script prints the CPU count and load average beside the numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import resource
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from maxatar_agents import dqn, sac
from maxatar_agents.cli import compiled


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} CPUs, load average {load}, jax {jax.__version__} on {jax.devices()[0].platform}"


def keys_for(seeds: int) -> jax.Array:
    return jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])


# --- (a) CartPole presets ---


def bench_cartpole(args) -> None:
    print(f"(a) CartPole presets, {args.seeds} seeds vmapped; {machine()}")
    print(f"{'agent':6} {'frames/seed':>11} {'compile s':>9} {'train s':>8} {'cpu s':>7}  final return per seed")
    for name, module in (("dqn", dqn), ("sac", sac)):
        config = module.Config(**module.PRESETS["cartpole"])
        train = jax.jit(jax.vmap(module.make_train(config)))
        keys = keys_for(args.seeds)
        start = time.time()
        executable = train.lower(keys).compile()
        compile_time = time.time() - start
        start, cpu = time.time(), cpu_seconds()
        result = jax.block_until_ready(executable(keys))
        wall, cpu = time.time() - start, cpu_seconds() - cpu
        per_seed = np.asarray(result.eval_returns).mean(axis=1)
        worst = np.asarray(result.eval_returns).min()
        verdict = "all >= 475" if np.all(per_seed >= 475) else "NOT all >= 475"
        frames = int(result.metrics["frames"][0, -1])
        returns = " ".join(f"{r:.1f}" for r in per_seed)
        timing = f"{name:6} {frames:>11} {compile_time:>9.1f} {wall:>8.1f} {cpu:>7.1f}"
        print(f"{timing}  {returns} (worst episode {worst:.0f}; {verdict})")


# --- (b) throughput against the PyTorch reference ---


def bench_throughput(args) -> None:
    print(f"(b) DQN `minatar` preset on {args.env}, {args.frames} frames; {machine()}")
    config = dqn.Config(**{**dqn.PRESETS["minatar"], "env_id": args.env, "total_steps": args.frames})
    config = dataclasses.replace(config, log_points=max(1, args.frames // 5000))
    rows = []
    for seeds in args.seeds_list:
        start = time.time()
        parts = compiled("dqn", config, seeds)
        state = parts["init"](keys_for(seeds))
        jax.block_until_ready(state)
        compile_time = time.time() - start
        sched = parts["program"].schedule
        start, cpu = time.time(), cpu_seconds()
        for i in range(sched.num_intervals):
            state, metrics = parts["interval"](state, jnp.int32(i * sched.steps_per_interval))
        jax.block_until_ready(state)
        wall, cpu = time.time() - start, cpu_seconds() - cpu
        frames = sched.total_frames * seeds
        rows.append((f"maxatar_agents dqn, {seeds} seed(s)", frames, wall, cpu, compile_time))
    if args.reference:
        rows.append(run_reference(args.reference, args.env, args.frames))
    else:
        print("  (no --reference given: the PyTorch reference was not run)")
    print(f"{'implementation':40} {'frames':>8} {'wall s':>8} {'cpu s':>8} {'frames/s':>9} {'frames/cpu-s':>12}")
    for label, frames, wall, cpu, compile_time in rows:
        extra = f"  (+{compile_time:.1f} s compile)" if compile_time else ""
        print(f"{label:40} {frames:>8} {wall:>8.1f} {cpu:>8.1f} {frames / wall:>9.0f} {frames / cpu:>12.0f}{extra}")


def run_reference(path: str, env_id: str, frames: int):
    """Import MinAtar's examples/dqn.py from `path` and run its `dqn` for `frames` frames (its defaults
    otherwise: 5k random frames, then one update per frame)."""
    from minatar import Environment

    spec = importlib.util.spec_from_file_location("minatar_reference_dqn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.NUM_FRAMES = frames
    game = env_id.split("/")[-1].split("-")[0].lower().replace("spaceinvaders", "space_invaders")
    env = Environment(game, sticky_action_prob=0.1, difficulty_ramping=True)
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu = time.time(), cpu_seconds()
        module.dqn(env, False, False, os.path.join(tmp, "ref"))
        wall, cpu = time.time() - start, cpu_seconds() - cpu
    import torch

    return (f"MinAtar examples/dqn.py (torch {torch.__version__})", frames, wall, cpu, 0.0)


# --- (c) time for the fast preset to reach a return ---


def bench_fast(args) -> None:
    """Each seed trains alone, one after the other (as one `--seeds 1` run each), so the wall time of every
    seed is what a user sees; the compiled program is shared."""
    print(f"(c) DQN `fast` preset on {args.env} until the last-100-episode return reaches {args.target}; {machine()}")
    config = dqn.Config(**{**dqn.PRESETS["fast"], "env_id": args.env, "total_steps": args.max_frames})
    config = dataclasses.replace(config, log_points=max(1, args.max_frames // args.check_every))
    start = time.time()
    parts = compiled("dqn", config, 1)
    jax.block_until_ready(parts["init"](keys_for(1)))
    print(f"compile: {time.time() - start:.1f} s")
    sched = parts["program"].schedule
    reached = []
    for seed in range(args.seeds):
        state = jax.block_until_ready(parts["init"](jnp.stack([jax.random.PRNGKey(seed)])))
        start, hit = time.time(), None
        for i in range(sched.num_intervals):
            state, metrics = parts["interval"](state, jnp.int32(i * sched.steps_per_interval))
            recent = float(np.asarray(metrics["recent_return"])[0])
            elapsed = time.time() - start
            frames = (i + 1) * sched.frames_per_interval
            print(f"  seed {seed}  {frames:>9} frames  {elapsed:>7.1f} s  last-100 return {recent:.2f}", flush=True)
            if recent >= args.target:
                hit = (frames, elapsed)
                break
        reached.append(hit)
        if hit is None:
            print(f"seed {seed}: did not reach {args.target} within {sched.total_frames} frames ({elapsed:.1f} s)")
        else:
            print(f"seed {seed}: reached {args.target} after {hit[0]} frames, {hit[1]:.1f} s of training (+ compile)")
    times = [hit[1] for hit in reached if hit is not None]
    if len(times) == len(reached):
        print(
            f"all {len(reached)} seeds reached {args.target}: median {np.median(times) / 60:.1f} min, "
            f"slowest {max(times) / 60:.1f} min; {machine()}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    a = sub.add_parser("cartpole", help="(a) the CartPole presets reach 475 on every seed")
    a.add_argument("--seeds", type=int, default=4)
    b = sub.add_parser("throughput", help="(b) DQN minatar preset frames/s against MinAtar's PyTorch DQN")
    b.add_argument("--env", default="maxatar/Breakout-v0")
    b.add_argument("--frames", type=int, default=20_000)
    b.add_argument("--seeds-list", type=int, nargs="+", default=[1, 4], help="seed counts to time (vmapped)")
    b.add_argument("--reference", help="path of MinAtar's examples/dqn.py")
    c = sub.add_parser("fast", help="(c) time for the fast preset to reach a return")
    c.add_argument("--env", default="maxatar/Breakout-v0")
    c.add_argument("--target", type=float, default=10.0)
    c.add_argument("--max-frames", type=int, default=3_000_000)
    c.add_argument("--check-every", type=int, default=32_000, help="frames between checks of the return")
    c.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, each trained alone in turn")
    args = parser.parse_args()
    {"cartpole": bench_cartpole, "throughput": bench_throughput, "fast": bench_fast}[args.part](args)


if __name__ == "__main__":
    main()
