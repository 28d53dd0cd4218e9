"""Throughput of every MaxAtar environment against gymnax, pgx and the numpy references, in one run.

    python -m benchmarks.run --sizes 1 64 1024 4096 --repeats 3
    python -m benchmarks.run --quick

For each environment and batch size N, every implementation is compiled and then measured `--repeats`
times, interleaved (so load from other processes hits all of them alike); the tables quote medians. A
do-nothing environment measured through the same harness gives the ceiling that is subtracted to get each
JAX implementation's own time per step. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from benchmarks import options, report
from benchmarks.harness import JaxRunner, LoopRunner, PythonStepRunner, rates
from benchmarks.impls import JaxImpl, ceiling_impl, maxatar_impls, peer_impls, short_id
from benchmarks.measure import Run, command
from benchmarks.pages import replace_section

QUICK = {"sizes": [1, 64], "repeats": 1, "steps": 32, "min_time": 0.05, "gym_size": 64}
QUICK_ENVS = ["CartPole-v1", "Doors-v0", "Breakout-v0"]


def parse_args(argv=None) -> argparse.Namespace:
    parser = options.parser(__doc__)
    options.add_envs(parser)
    parser.add_argument("--sizes", nargs="+", type=int, default=[1, 64, 1024, 4096, 16384], help="batch sizes N")
    options.add_measurement(parser, repeats=5, min_time=0.3)
    parser.add_argument("--steps", type=int, default=128, help="scan length (batched steps) per jitted call, at most")
    parser.add_argument(
        "--call-budget", type=int, default=65536, help="at most this many env steps per call: scan length <= budget/N"
    )
    parser.add_argument("--loop-max-n", type=int, default=4096, help="largest N for Python-loop references")
    parser.add_argument(
        "--traced-params", action="store_true", help="pass params to the compiled rollout as an argument (see README)"
    )
    parser.add_argument(
        "--skip",
        nargs="+",
        default=[],
        metavar="IMPL",
        help="implementations to leave out, by name (e.g. 'maxatar[step+reset]' gymnax); a ceiling goes with the "
        "last implementation that needs it",
    )
    parser.add_argument("--gym-size", type=int, default=1024, help="N for the Gymnasium make_vec comparison")
    parser.add_argument("--no-gym", action="store_true", help="skip the Gymnasium make_vec comparison")
    parser.add_argument("--quick", action="store_true", help=f"a short smoke run: {QUICK}, envs {QUICK_ENVS}")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output directory")
    parser.add_argument(
        "--readme", type=Path, help="rewrite this file's performance section (between the benchmark markers)"
    )
    parser.add_argument(
        "--front-door", type=Path, help="with --readme: also rewrite this file's short speed table (README.md)"
    )
    parser.add_argument(
        "--from-results",
        action="store_true",
        help="measure nothing: rebuild the tables, plot and --readme section from the files in --out",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        action="append",
        default=[],
        help="with --from-results: take the environments measured in this other --out directory from there",
    )
    parser.add_argument("--note", action="append", default=[], help="a line to add to the README section's notes")
    args = parser.parse_args(argv)
    if args.quick:  # quick values replace the defaults; flags given explicitly still win
        parser.set_defaults(**QUICK, envs=QUICK_ENVS)
        args = parser.parse_args(argv)
    args.envs = options.env_ids(args)
    return args


def log(message: str) -> None:
    print(message, flush=True)


def scan_length(n: int, args) -> int:
    """Batched steps per jitted call: `--steps`, fewer at large N so that one call stays short."""
    return max(4, min(args.steps, args.call_budget // n))


def measure_env(env_id: str, args) -> tuple[list[dict], list[str]]:
    """All implementations of one environment at every N. Returns the rows and the skip reasons."""
    notes: list[str] = []
    try:
        ours = maxatar_impls(env_id)
    except Exception as error:  # noqa: BLE001  (a game still being written is skipped, not fatal)
        return [], [f"{env_id}: skipped, MaxAtar env not usable yet ({type(error).__name__}: {error})"]
    peers, skipped = peer_impls(env_id)
    notes += [f"{env_id}: peer {s}" for s in skipped]
    ours, peers = [i for i in ours if i.name not in args.skip], [i for i in peers if i.name not in args.skip]
    jax_impls = [impl for impl in ours + peers if isinstance(impl, JaxImpl)]

    # One ceiling per (key mode, observation shape and dtype) that some implementation uses.
    ceilings, ceiling_of = {}, {}
    for impl in jax_impls:
        shape, dtype = impl.obs_spec()
        spec = (impl.keyed, shape, str(dtype))
        if spec not in ceilings:
            ceilings[spec] = ceiling_impl(shape, dtype, impl.keyed, impl.num_actions)
        ceiling_of[impl.name] = ceilings[spec].name
    impls = ours + peers + list(ceilings.values())
    state_bytes = {impl.name: impl.state_bytes for impl in impls if isinstance(impl, JaxImpl)}

    rows = []
    for n in args.sizes:
        runners = []
        for impl in impls:
            if not isinstance(impl, JaxImpl):
                limit = 1 if impl.name == "gymnasium" else args.loop_max_n
                if n > limit and not impl.vectorized:
                    notes.append(f"{env_id}: {impl.name} at N={n} skipped (Python loop, N > {limit})")
                    continue
            try:
                runner = (
                    JaxRunner(impl, n, scan_length(n, args), args.traced_params)
                    if isinstance(impl, JaxImpl)
                    else LoopRunner(impl, n)
                )
            except Exception as error:  # noqa: BLE001
                notes.append(f"{env_id}: {impl.name} at N={n} failed: {type(error).__name__}: {error}")
                continue
            runners.append(runner)
        runs = rates(dict(enumerate(runners)), args.repeats, args.min_time)
        for i, runner in enumerate(runners):
            impl = runner.impl
            row = {
                "env": short_id(env_id),
                "impl": impl.name,
                "family": impl.family,
                "n": n,
                "runs": runs[i],
                "compile_s": runner.compile_s,
                "state_bytes": state_bytes.get(impl.name, ""),
                "ceiling": ceiling_of.get(impl.name, ""),
                "note": impl.note,
            }
            rows.append(report.summarize(row))
            runner.close()
        best = max((r for r in rows if r["n"] == n and r["family"] == "maxatar"), key=lambda r: r["steps_per_s"])
        log(
            f"  {short_id(env_id)} N={n}: "
            + ", ".join(f"{r['impl']} {r['steps_per_s']:.3g}" for r in rows[-len(runners) :])
        )
        log(f"    kept MaxAtar mode at N={n}: {best['impl']}")
    return rows, notes


def measure_gym(env_id: str, pure_impl: JaxImpl | None, args) -> list[dict]:
    """`gymnasium.make_vec(id, num_envs=N)` stepped from Python, against the pure scan and phys2d for CartPole."""
    import gymnasium

    n = args.gym_size
    runners = {
        "maxatar make_vec (numpy)": lambda: PythonStepRunner(
            lambda: gymnasium.make_vec(env_id, num_envs=n), n, pure_impl.num_actions, convert=True
        ),
        "maxatar make_vec (jax)": lambda: PythonStepRunner(
            lambda: gymnasium.make_vec(env_id, num_envs=n, output="jax"), n, pure_impl.num_actions, convert=False
        ),
        f"maxatar pure ({pure_impl.name}, scan)": lambda: JaxRunner(
            pure_impl, n, scan_length(n, args), args.traced_params
        ),
    }
    if short_id(env_id) == "CartPole-v1":
        runners["phys2d/CartPole-v1 make_vec (+np.asarray)"] = lambda: PythonStepRunner(
            lambda: gymnasium.make_vec("phys2d/CartPole-v1", num_envs=n), n, 2, convert=True
        )
    built = {}
    for path, make in runners.items():
        try:
            built[path] = make()
        except Exception as error:  # noqa: BLE001
            log(f"  gym path {path} for {env_id} failed: {type(error).__name__}: {error}")
    runs = rates(built, args.repeats, args.min_time)
    rows = []
    for path, runner in built.items():
        row = {"env": short_id(env_id), "path": path, "n": n, "runs": runs[path], "compile_s": runner.compile_s}
        rows.append(report.summarize(row))
        runner.close()
    return rows


def write_readme(args, rows, gym_rows, meta) -> None:
    # The plot goes beside the page it is shown on (docs/performance.md: docs/), since benchmarks/results/ is not
    # committed.
    shutil.copyfile(args.out / "throughput.png", args.readme.resolve().parent / "benchmark_throughput.png")
    plot_path = "benchmark_throughput.png"
    meta = {**meta, "notes": list(dict.fromkeys(meta.get("notes", []) + args.note))}
    section = report.readme_section(rows, gym_rows, meta, plot_path)
    replace_section(args.readme, section, report.README_START, report.README_END)
    log(f"rewrote the performance section of {args.readme}")
    if args.front_door:
        table = report.front_door_table(rows)
        replace_section(args.front_door, table, report.SPEED_START, report.SPEED_END)
        log(f"rewrote the short speed table of {args.front_door}")


def load_results(out: Path) -> tuple[list[dict], list[dict], dict, str, list[str]]:
    """The rows, Gymnasium-path rows, meta.json, the header of results.md and its skip lines, from `out`."""
    rows = report.read_csv(out / "throughput.csv")
    gym_csv = out / "gym_path.csv"
    gym_rows = report.read_csv(gym_csv) if gym_csv.exists() else []
    meta = json.loads((out / "meta.json").read_text())
    if "load_start" not in meta:  # written before `measure.Run`, with the load at start at the machine's end
        meta["machine"], meta["load_start"] = meta["machine"].rsplit("; load average (1/5/15 min) ", 1)
    text = (out / "results.md").read_text()
    header = text.split("\n## ", 1)[0].rstrip()
    skipped = text.split("## Skipped\n\n", 1)[1].strip().splitlines() if "## Skipped\n\n" in text else []
    return rows, gym_rows, meta, header, [line.removeprefix("- ") for line in skipped]


def results_markdown(header: str, rows: list[dict], gym_rows: list[dict], notes: list[str]) -> str:
    sections = [header]
    for env in dict.fromkeys(r["env"] for r in rows):
        sections += [f"## {env}", report.throughput_table(rows, env)]
    if gym_rows:
        sections += ["## Gymnasium path (make_vec stepped from Python)", report.gym_table(gym_rows)]
    if notes:
        sections += ["## Skipped", "\n".join(f"- {n}" for n in notes)]
    return "\n\n".join(sections) + "\n"


def rebuild(args) -> None:
    """--from-results: tables, plot and README section again from the files in --out; with --merge, the
    environments measured in another run's directory replace theirs (the note says so)."""
    rows, gym_rows, meta, header, skipped = load_results(args.out)
    order = list(dict.fromkeys(r["env"] for r in rows))  # keep the first run's order of environments
    for other in args.merge:
        o_rows, o_gym, o_meta, _, o_skipped = load_results(other)
        envs = {r["env"] for r in o_rows}
        rows = [r for r in rows if r["env"] not in envs] + o_rows
        gym_rows = [r for r in gym_rows if r["env"] not in envs] + o_gym
        skipped = [line for line in skipped if not any(line.startswith(f"maxatar/{e}:") for e in envs)] + o_skipped
        note = (
            f"{', '.join(sorted(envs))} re-measured on the same machine by `{o_meta['command']}` (started "
            f"{o_meta['started']}, load at start {o_meta['load_start']}); these rows replace the first run's."
        )
        meta.setdefault("notes", []).append(note)
        header += "\n\n" + note
    meta["notes"] = list(dict.fromkeys(meta.get("notes", []) + args.note))  # kept for later rebuilds
    order += [e for e in dict.fromkeys(r["env"] for r in rows) if e not in order]
    rows.sort(key=lambda r: order.index(r["env"]))
    gym_rows.sort(key=lambda r: order.index(r["env"]))
    report.derive(rows)
    (args.out / "results.md").write_text(results_markdown(header, rows, gym_rows, skipped))
    report.write_csv(args.out / "throughput.csv", rows, report.THROUGHPUT_COLUMNS)
    if gym_rows:
        report.write_csv(args.out / "gym_path.csv", gym_rows, report.GYM_COLUMNS)
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    report.plot(rows, args.out / "throughput.png")
    if args.readme:
        write_readme(args, rows, gym_rows, meta)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.from_results:
        rebuild(args)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    run = Run(command(__spec__.name, argv), args.repeats)
    log(f"{run.started}  {run.machine}; load average (1/5/15 min) {run.load_start}")
    log(f"envs {args.envs}, sizes {args.sizes}, repeats {args.repeats}, steps {args.steps}, min-time {args.min_time}")

    # Warm-up: the first compilation in a process pays one-time costs (LLVM, JAX's caches); compile a small
    # rollout first, so that they are not charged to whichever implementation comes first.
    JaxRunner(ceiling_impl((4,), "float32", True, 2), 2, 4).close()
    rows, notes, gym_rows = [], [], []
    for env_id in args.envs:
        log(f"{env_id}:")
        env_rows, env_notes = measure_env(env_id, args)
        rows += env_rows
        notes += env_notes
        for note in env_notes:
            log(f"  {note}")
        if env_rows and not args.no_gym:
            near = min(args.sizes, key=lambda n: abs(n - args.gym_size))
            ours = [r for r in env_rows if r["family"] == "maxatar" and r["n"] == near]
            best_mode = max(ours, key=lambda r: r["steps_per_s"])["impl"]
            pure = next(i for i in maxatar_impls(env_id) if i.name == best_mode)
            gym_rows += measure_gym(env_id, pure, args)
    report.derive(rows)
    run.finish()

    sections = [
        "# MaxAtar throughput",
        run.line(),
        f"Sizes {args.sizes}, scan of min({args.steps}, {args.call_budget}/N) steps per call; params "
        + ("passed as traced jit arguments" if args.traced_params else "baked in as compile-time constants")
        + ", "
        f"{args.min_time} s per measurement. `*` marks the MaxAtar stepping mode kept at that N "
        "(the faster one). `x best peer` = steps/s over the fastest peer's; `x best peer (own)` = the "
        "fastest peer's own ns/step over ours (own = total minus the harness ceiling of the same key mode "
        "and observation). See benchmarks/README.md.",
    ]
    text = results_markdown("\n\n".join(sections), rows, gym_rows, notes)
    (args.out / "results.md").write_text(text)
    meta = {**run.record(), "sizes": args.sizes, "out": str(args.out), "notes": args.note}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    report.write_csv(args.out / "throughput.csv", rows, report.THROUGHPUT_COLUMNS)
    if gym_rows:
        report.write_csv(args.out / "gym_path.csv", gym_rows, report.GYM_COLUMNS)
    report.plot(rows, args.out / "throughput.png")
    log("\n" + text)
    log(f"wrote {args.out / 'results.md'}, throughput.csv, gym_path.csv, throughput.png, meta.json")
    if args.readme:
        write_readme(args, rows, gym_rows, meta)


if __name__ == "__main__":
    main()
