"""Time to the first result, as a user meets it: a fresh process running an agent's default command, or a
Gymnasium `make_vec` session, from start to its first training interval (or first vector step), without the
persistent compilation cache, then with it on an empty cache directory, then again with that directory filled
(`maxatar.compilation_cache`).

    python -m benchmarks.first_result               # every agent's default command and a make_vec session
    python -m benchmarks.first_result --repeats 3 --out benchmarks/results/first_result.md

Every case runs in its own process, the three cache states one after the other in each repeat, so load from
other jobs hits them alike; the table quotes medians with their range (seconds). The clock is the wall clock,
read before the process starts and inside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import options
from benchmarks.measure import Run, Spread, command, interleaved, publish

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
from maxatar_agents.run import cli
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


def measure(name: str, script: str, args: list[str], repeats: int, scratch: Path) -> dict[str, tuple[Spread, Spread]]:
    """(first result, whole process) seconds of `repeats` runs in each cache state: one cache directory per
    repeat, empty for the state after "off" and filled by it for the next."""

    def call(state: str):
        def once(repeat: int) -> tuple[float, float]:
            cache = "off" if state == "off" else str(scratch / f"{name}-{repeat}")
            out = scratch / f"{name}-{repeat}-{state.replace(' ', '-')}"
            extra = ["--out", str(out), "--no-progress"] if script is AGENT_SCRIPT else []
            return run_once(script, [*args, *extra], cache)

        return once

    times = interleaved(repeats, {state: call(state) for state in CACHE_STATES})
    return {s: (Spread.of(t[0] for t in v), Spread.of(t[1] for t in v)) for s, v in times.items()}


def table(results: dict[str, dict[str, tuple[Spread, Spread]]]) -> str:
    """Markdown: per case, seconds to the first result (and for the whole process) in each cache state."""
    head = "| command | " + " | ".join(CACHE_STATES) + " | speed-up (filled vs off) |"
    lines = [head, "|" + "---|" * (len(CACHE_STATES) + 2)]
    for name, by_state in results.items():
        cells = [
            f"{first.format('{:.1f}')} s; process {total.median:.1f} s"
            for first, total in (by_state[s] for s in CACHE_STATES)
        ]
        speedup = by_state["off"][0].median / by_state["filled cache"][0].median
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {speedup:.1f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = options.parser(__doc__)
    options.add_measurement(parser, repeats=3)
    parser.add_argument("--cases", nargs="+", default=[*AGENT_CASES, "make_vec"], help="agents and/or make_vec")
    options.add_out(parser)
    args = parser.parse_args(argv)
    run = Run(command(__spec__.name, argv), args.repeats)
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for case in args.cases:
            if case == "make_vec":
                label = 'gymnasium.make_vec("maxatar/Breakout-v0", num_envs=64): reset and first step'
                results[label] = measure(case, VEC_SCRIPT, [], args.repeats, Path(scratch))
            else:
                label = f"python -m maxatar_agents.{case} {' '.join(AGENT_CASES[case])}: first interval"
                results[label] = measure(case, AGENT_SCRIPT, [case, *AGENT_CASES[case]], args.repeats, Path(scratch))
            print(f"measured {case}", file=sys.stderr, flush=True)
    about = (
        "Seconds from process start to the first result, median (min-max) over the repeats, and the median for the "
        "whole process."
    )
    publish(run, [about, table(results)], args.out)


if __name__ == "__main__":
    main()
