"""How fast the offline datasets are made and how small they are on disk (`maxatar_agents.datasets`): for each
case, the seconds to collect the transitions (the vmapped collector, compilation included), the seconds to write
them as a Minari dataset (HDF5, observations compressed), and the bytes per transition on disk. Beside the wall
clock, the process's CPU time (all its threads): on a machine other jobs load, the wall clock measures them too,
and the CPU time over the cores it may use is what a quiet machine would take.

    python -m benchmarks.datasets                                   # Breakout random and expert, 1M transitions
    python -m benchmarks.datasets --cases Breakout/expert SpaceInvaders/noisy --steps 200000
    python -m benchmarks.datasets --out benchmarks/results/datasets.md

The reference scores (100 random and 100 expert episodes per game, computed once per game and process) are
measured before the clock starts: they are the same for every dataset of a game. The datasets are written into a
temporary Minari root, removed afterwards. The issue's targets: at most 60 s and 100 bytes per transition for
1M transitions on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from maxatar.machine import machine_now

CASES = ("Breakout/random", "Breakout/expert")


def measure(case: str, steps: int) -> dict:
    from maxatar.registry import make
    from maxatar_agents.run import collector, datasets

    game, tier = case.split("/")
    ids = datasets.DatasetId.parse(f"maxatar/{game}/{tier}-v0")
    datasets.reference_scores(game, "minatar")
    env, params = make(ids.env_id, **datasets.env_kwargs(game, "minatar"))
    act, described = datasets.tier_policy(ids, env)
    start, start_cpu = time.perf_counter(), time.process_time()
    played = collector.collect(env, params, act, 0, datasets.NUM_ENVS, steps=steps)
    collected, collected_cpu = time.perf_counter(), time.process_time()
    dataset = datasets.write(ids, played, "minatar", {"policy": described, "seed": 0}, force=True)
    written, written_cpu = time.perf_counter(), time.process_time()
    size = sum(f.stat().st_size for f in Path(dataset.storage.data_path).rglob("*") if f.is_file())
    return {
        "case": case,
        "steps": dataset.total_steps,
        "episodes": dataset.total_episodes,
        "collect_s": collected - start,
        "write_s": written - collected,
        "collect_cpu_s": collected_cpu - start_cpu,
        "write_cpu_s": written_cpu - collected_cpu,
        "bytes_per_step": size / dataset.total_steps,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| dataset | transitions | episodes | collect (s) | write (s) | total (s) | CPU time: collect, write (s) "
        "| bytes per transition |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        total = r["collect_s"] + r["write_s"]
        lines.append(
            f"| {r['case']} | {r['steps']:,} | {r['episodes']:,} | {r['collect_s']:.1f} | {r['write_s']:.1f} | "
            f"{total:.1f} | {r['collect_cpu_s']:.1f}, {r['write_cpu_s']:.1f} | {r['bytes_per_step']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.datasets", description=__doc__)
    parser.add_argument("--cases", nargs="+", default=list(CASES), help="Game/tier pairs (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=1_000_000, help="transitions per dataset (default 1M)")
    parser.add_argument("--out", type=Path, help="also write the table, with the machine, to this file")
    args = parser.parse_args(argv)
    start_machine = machine_now()
    with tempfile.TemporaryDirectory() as root:
        os.environ["MINARI_DATASETS_PATH"] = root
        rows = []
        for case in args.cases:
            rows.append(measure(case, args.steps))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = (
        f"# Offline datasets: time to make and size on disk\n\n`python -m benchmarks.datasets "
        f"--cases {' '.join(args.cases)} --steps {args.steps}`\n\n{table(rows)}\n\n"
        f"Machine at start: {start_machine}  \nMachine at end: {machine_now()}\n"
    )
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
