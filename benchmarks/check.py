"""The quick performance check a developer runs before stopping: every id's pure paths against committed figures.

    python -m benchmarks.check             # about two minutes; exit status 1 if a path got more than 1.5x slower
    python -m benchmarks.check --update    # measure and commit the figures as the new reference (the ids measured)
    python -m benchmarks.check --envs Breakout-v0 --repeats 3 --out /tmp/check.md

Each id's MaxAtar stepping paths (`benchmarks.impls.maxatar_impls`: one key per environment, one uniform call,
and the gymnax-style step + reset + select composition) run through the throughput harness at N = 1024, beside
the do-nothing ceiling, repeats interleaved; medians. A path is flagged when it is more than `--tolerance` times
slower than its committed figure both as measured and with the machine's own speed taken out (each figure divided
by the ceiling measured in the same run: a loaded or slower machine slows the ceiling too); on a shared machine
either ratio alone moves with the load.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from benchmarks import options
from benchmarks.harness import JaxRunner, rates
from benchmarks.impls import ceiling_impl, maxatar_impls, short_id
from benchmarks.measure import Run, Spread, command, publish

REFERENCE = Path(__file__).parent / "results" / "check.csv"
COLUMNS = ["env", "impl", "n", "steps_per_s", "ceiling_steps_per_s"]


def measure(env_id: str, n: int, steps: int, repeats: int, min_time: float) -> list[dict]:
    """Median steps/s of each MaxAtar path of `env_id` (with its range: `spread`), and of the ceiling that matches
    its key mode."""
    impls = maxatar_impls(env_id)
    shape, dtype = impls[0].obs_spec()
    ceilings = {keyed: ceiling_impl(shape, dtype, keyed, impls[0].num_actions) for keyed in (True, False)}
    runners = {impl.name: JaxRunner(impl, n, steps) for impl in [*impls, *ceilings.values()]}
    spread = {name: Spread.of(runs) for name, runs in rates(runners, repeats, min_time).items()}
    rows = [
        {
            "env": short_id(env_id),
            "impl": impl.name,
            "n": n,
            "steps_per_s": spread[impl.name].median,
            "ceiling_steps_per_s": spread[ceilings[impl.keyed].name].median,
            "spread": spread[impl.name],
        }
        for impl in impls
    ]
    for runner in runners.values():
        runner.close()
    return rows


def millions(steps_per_s: float) -> str:
    return f"{steps_per_s / 1e6:.3f}M"


def read_reference(path: Path) -> dict[tuple[str, str, int], dict]:
    with open(path, newline="") as f:
        return {(r["env"], r["impl"], int(r["n"])): r for r in csv.DictReader(f)}


def main(argv=None) -> int:
    parser = options.parser(__doc__)
    options.add_envs(parser)
    parser.add_argument("--n", type=int, default=1024, help="batch size")
    parser.add_argument("--steps", type=int, default=32, help="scan length per jitted call")
    options.add_measurement(parser, repeats=5, min_time=0.1)
    parser.add_argument("--tolerance", type=float, default=1.5, help="flag paths this many times slower")
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="the committed figures")
    parser.add_argument("--update", action="store_true", help="write the figures measured now as the reference")
    options.add_out(parser)
    args = parser.parse_args(argv)
    env_ids = options.env_ids(args)

    run = Run(command(__spec__.name, argv), args.repeats)
    rows = []
    for env_id in env_ids:
        rows += measure(env_id, args.n, args.steps, args.repeats, args.min_time)
        print(f"measured {short_id(env_id)}", file=sys.stderr, flush=True)
    reference = read_reference(args.reference) if args.reference.exists() else {}
    if args.update:  # the measured paths replace their committed rows; the ids not measured now keep theirs
        measured = {(r["env"], r["impl"], r["n"]): {**r, "steps_per_s": f"{r['steps_per_s']:.0f}",
                    "ceiling_steps_per_s": f"{r['ceiling_steps_per_s']:.0f}"} for r in rows}  # fmt: skip
        with open(args.reference, "w", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows({**reference, **measured}.values())
        print(f"wrote {args.reference}", file=sys.stderr)
        reference = read_reference(args.reference)
    table = [
        f"| env | path | N={args.n} steps/s, median (min-max) | committed | ratio | ratio, machine speed taken out |",
        "|---|---|---|---|---|---|",
    ]
    slower = []
    for row in rows:
        ref = reference.get((row["env"], row["impl"], row["n"]))
        if ref is None:
            table.append(f"| {row['env']} | {row['impl']} | {row['spread'].format(millions)} | - | - | - |")
            continue
        raw = row["steps_per_s"] / float(ref["steps_per_s"])
        machine = row["ceiling_steps_per_s"] / float(ref["ceiling_steps_per_s"])
        adjusted = raw / machine
        cells = [row["spread"].format(millions), millions(float(ref["steps_per_s"])), f"{raw:.2f}x"]
        table.append(f"| {row['env']} | {row['impl']} | " + " | ".join(cells) + f" | {adjusted:.2f}x |")
        if max(raw, adjusted) * args.tolerance < 1:  # both: noise moves the ceiling too
            slower.append(f"{row['env']} {row['impl']}: {adjusted:.2f}x its committed figure")
    if slower:
        verdict = f"More than {args.tolerance}x slower than committed:\n" + "\n".join(f"- {s}" for s in slower)
    else:
        verdict = f"No path more than {args.tolerance}x slower than its committed figure."
    publish(run, ["\n".join(table), verdict], args.out)
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
