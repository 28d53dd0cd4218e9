"""Time to the first result, as a user meets it: a fresh process running an agent's default command, or a
Gymnasium `make_vec` session, from start to its first training interval (or first vector step), without the
persistent compilation cache, then with it on an empty cache directory, then again with that directory filled
(`maxatar.compilation_cache`).

    python -m benchmarks.first_result               # every agent's default command and a make_vec session
    python -m benchmarks.first_result --repeats 3 --out benchmarks/results/first_result.md

Every case runs in its own process, the three cache states one after the other in each repeat, so load from
other jobs hits them alike; the table quotes medians (seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import cpu_description, load_average

# The default command of each agent (`python -m maxatar_agents.<agent> --env ...`): CartPole with its preset,
# Doors for the tabular agents.
AGENT_CASES = {
    "dqn": ["--env", "CartPole-v1"],
    "sac": ["--env", "CartPole-v1"],
    "ppo": ["--env", "CartPole-v1"],
    "pqn": ["--env", "CartPole-v1"],
    "q_learning": ["--env", "Doors-v0"],
}
# Prints the seconds from the process's start to its first training interval, then trains to the end.
AGENT_SCRIPT = """
import sys, time
from maxatar_agents import cli
start = float(sys.argv[1])
seen = []
def first(_):
    if not seen:
        seen.append(time.time() - start)
        print("FIRST", seen[0], flush=True)
cli.run(sys.argv[2], sys.argv[3:], on_interval=first)
"""
# A Gymnasium vector-env session: make_vec, reset, the first step (jitted and compiled), then 100 more.
VEC_SCRIPT = """
import sys, time
import gymnasium, numpy as np
import maxatar
start = float(sys.argv[1])
envs = gymnasium.make_vec("maxatar/Breakout-v0", num_envs=64)
envs.reset(seed=0)
envs.step(np.zeros(64, np.int64))
print("FIRST", time.time() - start, flush=True)
for _ in range(100):
    envs.step(envs.action_space.sample())
"""
CACHE_STATES = ("off", "empty cache", "filled cache")


def run_once(script: str, args: list[str], cache: str) -> tuple[float, float]:
    """(seconds to the first result, seconds for the whole process) of one fresh process."""
    env = {**os.environ, "MAXATAR_CACHE_DIR": cache}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", script, repr(start), *args], env=env, capture_output=True, text=True, check=False
    )
    total = time.time() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith("FIRST")]
    if done.returncode or not lines:
        raise RuntimeError(f"{args} failed:\n{done.stderr[-2000:]}")
    return float(lines[0].split()[1]), total


def measure(name: str, script: str, args: list[str], repeats: int, scratch: Path) -> dict[str, tuple[float, float]]:
    """Median (first result, whole process) seconds of `repeats` runs in each cache state."""
    times: dict[str, list[tuple[float, float]]] = {state: [] for state in CACHE_STATES}
    for repeat in range(repeats):
        cache = scratch / f"{name}-{repeat}"
        for state in CACHE_STATES:
            out = scratch / f"{name}-{repeat}-{state.replace(' ', '-')}"
            extra = ["--out", str(out), "--no-progress"] if script is AGENT_SCRIPT else []
            times[state].append(run_once(script, [*args, *extra], "off" if state == "off" else str(cache)))
    return {s: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v)) for s, v in times.items()}


def table(results: dict[str, dict[str, tuple[float, float]]]) -> str:
    """Markdown: per case, seconds to the first result (and for the whole process) in each cache state."""
    head = "| command | " + " | ".join(CACHE_STATES) + " | speed-up (filled vs off) |"
    lines = [head, "|" + "---|" * (len(CACHE_STATES) + 2)]
    for name, by_state in results.items():
        cells = [f"{first:.1f} s ({total:.1f} s)" for first, total in (by_state[s] for s in CACHE_STATES)]
        speedup = by_state["off"][0] / by_state["filled cache"][0]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {speedup:.1f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case in each cache state (median)")
    parser.add_argument("--cases", nargs="+", default=[*AGENT_CASES, "make_vec"], help="agents and/or make_vec")
    parser.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for case in args.cases:
            if case == "make_vec":
                label = 'gymnasium.make_vec("maxatar/Breakout-v0", num_envs=64): reset and first step'
                results[label] = measure(case, VEC_SCRIPT, [], args.repeats, Path(scratch))
            else:
                label = f"python -m maxatar_agents.{case} {' '.join(AGENT_CASES[case])}: first interval"
                results[label] = measure(case, AGENT_SCRIPT, [case, *AGENT_CASES[case]], args.repeats, Path(scratch))
            print(f"{case}: {results[label]}", file=sys.stderr, flush=True)
    text = (
        f"Seconds from process start to the first result (whole process in brackets), median of {args.repeats}; "
        f"{cpu_description()}, load average {load_average()} at the end.\n\n{table(results)}\n"
    )
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
