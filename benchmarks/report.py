"""Derived columns (harness ceiling subtracted, ratios to the best peer), tables, CSV files and the plot."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from benchmarks.measure import Run, Spread

THROUGHPUT_COLUMNS = [
    "env",
    "impl",
    "family",
    "n",
    "steps_per_s",
    "min_steps_per_s",
    "max_steps_per_s",
    "ns_per_step",
    "ceiling",
    "ceiling_ns_per_step",
    "own_ns_per_step",
    "x_best_peer",
    "x_best_peer_own",
    "best_peer",
    "kept",
    "compile_s",
    "state_bytes",
    "runs",
    "note",
]
GYM_COLUMNS = ["env", "path", "n", "steps_per_s", "min_steps_per_s", "max_steps_per_s", "compile_s", "runs", "note"]


def summarize(row: dict) -> dict:
    """The row with the median and range of its `runs` (rates, one per repeat) as its quoted columns."""
    spread = Spread.of(row["runs"])
    row["steps_per_s"], row["min_steps_per_s"], row["max_steps_per_s"] = spread.median, spread.low, spread.high
    row["ns_per_step"] = 1e9 / row["steps_per_s"]
    return row


def spread(row: dict) -> Spread:
    """A summarized row's quoted rate and its range."""
    return Spread(row["steps_per_s"], row["min_steps_per_s"], row["max_steps_per_s"])


def derive(rows: list[dict]) -> list[dict]:
    """Fill in the ceiling, the environment's own time, the best peer and the ratios, per (env, n)."""
    by_key = {(r["env"], r["n"], r["impl"]): r for r in rows}
    for row in rows:
        ceiling = by_key.get((row["env"], row["n"], row.get("ceiling") or ""))
        row["ceiling_ns_per_step"] = ceiling["ns_per_step"] if ceiling else math.nan
        # Python-loop references have no JAX harness: all their time is their own.
        row["own_ns_per_step"] = row["ns_per_step"] - (ceiling["ns_per_step"] if ceiling else 0.0)
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["env"], row["n"]), []).append(row)
    for group in groups.values():
        peers = [r for r in group if r["family"] == "peer"]
        ours = [r for r in group if r["family"] == "maxatar"]
        best = max(peers, key=lambda r: r["steps_per_s"], default=None)
        best_own = min((r["own_ns_per_step"] for r in peers if r["own_ns_per_step"] > 0), default=math.nan)
        fastest = max(ours, key=lambda r: r["steps_per_s"], default=None)
        for row in ours:
            row["kept"] = row is fastest
            row["best_peer"] = best["impl"] if best else ""
            row["x_best_peer"] = row["steps_per_s"] / best["steps_per_s"] if best else math.nan
            own = row["own_ns_per_step"]
            row["x_best_peer_own"] = best_own / own if own > 0 else math.nan
    return rows


def _fmt(value, kind: str) -> str:
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "sps":
        return f"{value / 1e6:.3f}M" if value >= 1e5 else f"{value / 1e3:.1f}k"
    if kind == "ns":
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "s":
        return f"{value:.2f}"
    return str(value)


def throughput_table(rows: list[dict], env: str) -> str:
    """One Markdown table for one environment, rows grouped by N."""
    header = (
        "| N | implementation | steps/s (median) | min-max | ns/step | harness ns | own ns | x best peer | "
        "x best peer (own) | compile s | state B |"
    )
    lines = [header, "|" + "---|" * 11]
    for row in sorted((r for r in rows if r["env"] == env), key=lambda r: (r["n"], _order(r))):
        name = row["impl"] + (" *" if row.get("kept") else "")
        lines.append(
            "| "
            + " | ".join(
                [
                    str(row["n"]),
                    name,
                    _fmt(row["steps_per_s"], "sps"),
                    f"{_fmt(row['min_steps_per_s'], 'sps')}-{_fmt(row['max_steps_per_s'], 'sps')}",
                    _fmt(row["ns_per_step"], "ns"),
                    _fmt(row["ceiling_ns_per_step"], "ns"),
                    _fmt(row["own_ns_per_step"], "ns") if row["family"] != "ceiling" else "-",
                    _fmt(row.get("x_best_peer"), "x"),
                    _fmt(row.get("x_best_peer_own"), "x"),
                    _fmt(row.get("compile_s"), "s"),
                    _fmt(row.get("state_bytes"), ""),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def _order(row: dict) -> tuple:
    return ({"maxatar": 0, "peer": 1, "ceiling": 2}[row["family"]], row["impl"])


def gym_table(rows: list[dict]) -> str:
    lines = ["| env | path | N | steps/s (median) | min-max | x phys2d | x pure | first step s |", "|" + "---|" * 8]
    for env in dict.fromkeys(r["env"] for r in rows):
        group = [r for r in rows if r["env"] == env]
        phys2d = next((r for r in group if r["path"].startswith("phys2d")), None)
        pure = next((r for r in group if r["path"].startswith("maxatar pure")), None)
        for row in group:
            x_phys = row["steps_per_s"] / phys2d["steps_per_s"] if phys2d else math.nan
            x_pure = row["steps_per_s"] / pure["steps_per_s"] if pure else math.nan
            lines.append(
                f"| {env} | {row['path']} | {row['n']} | {_fmt(row['steps_per_s'], 'sps')} | "
                f"{_fmt(row['min_steps_per_s'], 'sps')}-{_fmt(row['max_steps_per_s'], 'sps')} | "
                f"{_fmt(x_phys, 'x')} | {_fmt(x_pure, 'x')} | {_fmt(row.get('compile_s'), 's')} |"
            )
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            out = dict(row)
            out["runs"] = " ".join(f"{v:.6g}" for v in row["runs"])
            writer.writerow(out)


def plot(rows: list[dict], path: Path) -> None:
    """Log-log steps/s against N, one panel per environment, one line per implementation: two panels a row,
    each implementation one colour in every panel, and one legend for all, so that it reads at page width."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(dict.fromkeys(r["env"] for r in rows))
    if not envs:
        return
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    palette = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9", "black"]  # not C7: the ceilings' grey
    colours = {impl: palette[i % 10] for i, impl in enumerate(i for i in impls if not i.startswith("ceiling"))}
    cols = min(2, len(envs))
    nrows = math.ceil((len(envs) + 1) / cols)  # a spare panel for the legend
    plt.rcParams.update({"font.size": 16})
    fig, axes = plt.subplots(nrows, cols, figsize=(6 * cols, 4.2 * nrows), squeeze=False)
    handles = {}
    for ax, env in zip(axes.flat, envs, strict=False):
        group = [r for r in rows if r["env"] == env]
        for impl in dict.fromkeys(r["impl"] for r in group):
            line = sorted((r for r in group if r["impl"] == impl), key=lambda r: r["n"])
            family = line[0]["family"]
            style = {"maxatar": "-o", "peer": "-s", "ceiling": ":x"}[family]
            label = "harness ceilings (do-nothing env)" if family == "ceiling" else impl  # one entry for all
            (handles[label],) = ax.plot(
                [r["n"] for r in line], [r["steps_per_s"] for r in line], style, color=colours.get(impl, "0.6"), ms=5
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(env)
        ax.set_xlabel("environments N")
        ax.set_ylabel("steps/s")
        ax.grid(True, which="both", alpha=0.3)
    spare = list(axes.flat)[len(envs) :]
    for ax in spare:
        ax.axis("off")
    spare[0].legend(handles.values(), handles.keys(), loc="center", fontsize=16, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    plt.rcParams.update(plt.rcParamsDefault)


# --- reading results back, and the README's performance section ---------------------------------------------

README_START, README_END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"


def _parse_value(column: str, text: str):
    if column == "runs":
        return [float(v) for v in text.split()]
    if column in ("kept",):
        return text == "True"
    if column == "n":
        return int(text)
    if column == "state_bytes":
        return int(text) if text else ""
    try:
        return float(text)
    except ValueError:
        return text


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as file:
        return [{k: _parse_value(k, v) for k, v in row.items()} for row in csv.DictReader(file)]


def _largest_common_n(rows: list[dict]) -> int | None:
    envs = {r["env"] for r in rows}
    common = [n for n in {r["n"] for r in rows} if all(any(r["env"] == e and r["n"] == n for r in rows) for e in envs)]
    preferred = [n for n in common if n <= 4096]
    return max(preferred or common, default=None)


def _game(env: str) -> str:
    return env.rsplit("-", 1)[0]


def summary_table(rows: list[dict], n: int) -> str:
    """One line per environment at N = n: own time, compile time and state size, ours (the kept mode) against
    the peers."""
    lines = [
        "| env | own ns (ours / best peer) | compile s (ours / JAX peers) | state B (ours / peers) |",
        "|" + "---|" * 4,
    ]
    for env in dict.fromkeys(r["env"] for r in rows):
        group = [r for r in rows if r["env"] == env and r["n"] == n]
        ours = next((r for r in group if r["family"] == "maxatar" and r.get("kept")), None)
        if ours is None:
            continue
        peers = [r for r in group if r["family"] == "peer"]
        own_peers = [r for r in peers if isinstance(r["own_ns_per_step"], float) and r["own_ns_per_step"] > 0]
        best_own = min(own_peers, key=lambda r: r["own_ns_per_step"], default=None)
        jax_peers = [r for r in peers if isinstance(r.get("compile_s"), float) and not math.isnan(r["compile_s"])]
        compile_peers = " / ".join(f"{_fmt(r['compile_s'], 's')} {r['impl']}" for r in jax_peers) or "-"
        state_peers = " / ".join(f"{r['state_bytes']} {r['impl']}" for r in jax_peers if r.get("state_bytes") != "")
        own_cell = f"{_fmt(ours['own_ns_per_step'], 'ns')} / " + (
            f"{_fmt(best_own['own_ns_per_step'], 'ns')} ({best_own['impl']})" if best_own else "- (no peer)"
        )
        cells = [
            env,
            own_cell,
            f"{_fmt(ours.get('compile_s'), 's')} / {compile_peers}",
            f"{ours.get('state_bytes', '')} / {state_peers or '-'}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


COMPOSITION = "maxatar[step+reset]"  # the gymnax-style composition users write by hand (benchmarks.impls)
COMPOSITION_PEERS = ("gymnax", "pgx")  # what it is measured against: the JAX peers' own auto-resetting step


def composition_table(rows: list[dict], n: int) -> str:
    """The gymnax-style composition (per-environment keys, `env.step` + `env.reset` + a select, in one vmapped
    function) at N = n, in own time against the best of gymnax's and pgx's own step."""
    lines = []
    for env in dict.fromkeys(r["env"] for r in rows):
        group = [r for r in rows if r["env"] == env and r["n"] == n]
        ours = next((r for r in group if r["impl"] == COMPOSITION), None)
        peers = [r for r in group if r["impl"] in COMPOSITION_PEERS and isinstance(r["own_ns_per_step"], float)]
        peers = [r for r in peers if r["own_ns_per_step"] > 0]
        if ours is None or not peers:
            continue
        best = min(peers, key=lambda r: r["own_ns_per_step"])
        ratio = best["own_ns_per_step"] / ours["own_ns_per_step"]
        lines.append(
            f"| {env} | {_fmt(ours['own_ns_per_step'], 'ns')} | {_fmt(best['own_ns_per_step'], 'ns')} "
            f"({best['impl']}) | {_fmt(ratio, 'x')} |"
        )
    if not lines:
        return ""
    head = ["| env | composition own ns | best JAX peer own ns | x own |", "|---|---|---|---|"]
    return "\n".join(head + lines)


def gym_summary(gym_rows: list[dict]) -> str:
    """`make_vec` with numpy outputs against the pure jitted scan (and Gymnasium's functional phys2d CartPole)."""
    lines = [
        "| env | N | make_vec numpy steps/s | pure steps/s | x pure | x phys2d |",
        "|---|---|---|---|---|---|",
    ]
    for env in dict.fromkeys(r["env"] for r in gym_rows):
        group = [r for r in gym_rows if r["env"] == env]
        numpy_path = next((r for r in group if r["path"] == "maxatar make_vec (numpy)"), None)
        pure = next((r for r in group if r["path"].startswith("maxatar pure")), None)
        phys2d = next((r for r in group if r["path"].startswith("phys2d")), None)
        if numpy_path is None or pure is None:
            continue
        ratio = numpy_path["steps_per_s"] / pure["steps_per_s"]
        lines.append(
            f"| {env} | {numpy_path['n']} | {_fmt(numpy_path['steps_per_s'], 'sps')} | "
            f"{_fmt(pure['steps_per_s'], 'sps')} | {ratio:.3f}x | "
            + (_fmt(numpy_path["steps_per_s"] / phys2d["steps_per_s"], "x") if phys2d else "-")
            + " |"
        )
    return "\n".join(lines)


def readme_section(rows: list[dict], gym_rows: list[dict], meta: dict, plot_path: str) -> str:
    """The performance page's CPU section: the answer first (ours against the best peer at one N, the plot),
    then what the benchmark command measured and how."""
    n = _largest_common_n(rows)
    composition = composition_table(rows, n)
    gym = gym_summary(gym_rows) if gym_rows else ""
    parts = [
        README_START,
        "<!-- Generated by `python -m benchmarks.run ... --readme docs/performance.md`; "
        "edit benchmarks/report.py, not this. -->",
        f"Steps per second at N = {n} environments on a CPU, observations computed and finished episodes reset, "
        "against the fastest peer measured in the same run. *x own* compares the time per step with the harness's "
        "own time (a do-nothing environment through the same rollout) taken off: the environment's own cost.",
        "\n".join(lead_table(rows, n)),
        f"![steps/s against N, log-log, one panel per environment, one line per implementation]({plot_path})",
        f"## Every measure at N = {n} on a CPU",
        f"{Run.from_record(meta).line()} Medians of {meta['repeats']} interleaved repeats; the machine was shared "
        "with other jobs, so read the ratios, which come from interleaved measurements, more than the totals. "
        f"Full tables (every N, min-max of the repeats): `{meta['out']}/results.md`, CSV beside it; "
        "`benchmarks/README.md` explains the columns, `benchmarks/optimisations.md` what moved the numbers. "
        "Compile s is the time to the first step (trace, lower, compile of the rollout).",
        summary_table(rows, n),
    ]
    if composition:
        parts += [
            f"The composition gymnax users write by hand (`{COMPOSITION}`: per-environment keys, `env.step`, "
            "`env.reset` with a second key and a `jnp.where` select of state and observation, in one vmapped "
            f"function), at N = {n}, in own time against the best of gymnax's and pgx's own auto-resetting step:",
            composition,
        ]
    if gym:
        parts += [
            "Gymnasium path: `gymnasium.make_vec(id, num_envs=N)` with numpy outputs, stepped from Python, "
            "against the pure jitted scan (and Gymnasium's own functional `phys2d/CartPole-v1` vector env):",
            gym,
        ]
    return "\n\n".join([*parts, README_END])


def lead_table(rows: list[dict], n: int) -> list[str]:
    """At N = n, ours (the kept mode) against the fastest peer, in steps/s and in own time."""
    lines = ["| env | MaxAtar steps/s | best peer steps/s | x | x own |", "|---|---|---|---|---|"]
    for env in dict.fromkeys(r["env"] for r in rows):
        group = [r for r in rows if r["env"] == env and r["n"] == n]
        ours = next((r for r in group if r["family"] == "maxatar" and r.get("kept")), None)
        best = max((r for r in group if r["family"] == "peer"), key=lambda r: r["steps_per_s"], default=None)
        if ours is not None:
            peer = f"{_fmt(best['steps_per_s'], 'sps')} ({best['impl']})" if best else "- (no peer)"
            lines.append(
                f"| {env} | {_fmt(ours['steps_per_s'], 'sps')} | {peer} | {_fmt(ours.get('x_best_peer'), 'x')} | "
                f"{_fmt(ours.get('x_best_peer_own'), 'x')} |"
            )
    return lines


SPEED_START, SPEED_END = "<!-- speed-short:start -->", "<!-- speed-short:end -->"


def front_door_table(rows: list[dict]) -> str:
    """The README's short speed table: at the largest N every environment was measured at (4096 at most), ours
    against the fastest peer of the same run, for every environment that has a peer."""
    n = _largest_common_n(rows)
    lines = [SPEED_START, "| env | MaxAtar | best peer | ratio |", "|---|---|---|---|"]
    for env in dict.fromkeys(r["env"] for r in rows):
        group = [r for r in rows if r["env"] == env and r["n"] == n]
        ours = next((r for r in group if r["family"] == "maxatar" and r.get("kept")), None)
        best = max((r for r in group if r["family"] == "peer"), key=lambda r: r["steps_per_s"], default=None)
        if ours is None or best is None:
            continue
        lines.append(
            f"| {env} | {_fmt(ours['steps_per_s'], 'sps')} | {_fmt(best['steps_per_s'], 'sps')} ({best['impl']}) "
            f"| {_fmt(ours['steps_per_s'] / best['steps_per_s'], 'x')} |"
        )
    return "\n".join([*lines, SPEED_END])
