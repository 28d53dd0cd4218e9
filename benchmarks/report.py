"""Derived columns (harness ceiling subtracted, ratios to the best peer), tables, CSV files and the plot."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from benchmarks.measure import Run, Spread
from maxatar.registry import MINATAR_GAMES

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
    """Log-log steps/s against N, one panel per environment, one line per implementation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(dict.fromkeys(r["env"] for r in rows))
    if not envs:
        return
    cols = min(3, len(envs))
    nrows = math.ceil(len(envs) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.8 * nrows), squeeze=False)
    for ax, env in zip(axes.flat, envs, strict=False):
        group = [r for r in rows if r["env"] == env]
        for impl in dict.fromkeys(r["impl"] for r in group):
            line = sorted((r for r in group if r["impl"] == impl), key=lambda r: r["n"])
            family = line[0]["family"]
            style = {"maxatar": "-o", "peer": "-s", "ceiling": ":x"}[family]
            color = "0.6" if family == "ceiling" else None
            ax.plot([r["n"] for r in line], [r["steps_per_s"] for r in line], style, color=color, label=impl, ms=4)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(env)
        ax.set_xlabel("environments N")
        ax.set_ylabel("steps/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(envs) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- reading results back, and the README's performance section ---------------------------------------------

README_START, README_END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"
SEAQUEST_TARGET = 2e6  # steps/s at N = 4096
OWN_TARGET = 2.0  # own time per step at most half the best peer's
GYM_TARGET = 0.5  # make_vec (numpy) at least half the pure path's steps/s

# What changed MaxAtar's numbers, measured with `python -m benchmarks.profile_envs` (own ns per step at N = 4096,
# interleaved medians, before -> after, load average in brackets). Kept here so that the README section the
# benchmark command writes says it; update it with the change that moves a number.
WHAT_MADE_THE_DIFFERENCE = [
    "**Threefry written out** (`maxatar.prng.uniform`): JAX lowers the threefry hash on CPU as a rolled loop of "
    "small kernels; the same 20 rounds in plain `jnp` fuse into one loop and give the same bits as "
    "`jax.random.uniform` (tests/test_random.py: many keys and shapes, raw and typed keys), so a seed plays the "
    "same episodes as before. Full step at N = 4096, interleaved, `jax.random.uniform` -> `prng.uniform`: "
    "CartPole 104 -> 51 ns, Doors 548 -> 429, Freeway 2460 -> 1267 (load 2-6).",
    "**Materialize what many fusions read** (`maxatar.prng.materialize`): XLA's CPU backend copies an "
    "elementwise chain into every fusion that reads it. Without it the written-out hash was recomputed inside "
    "each consumer and Freeway got 4x slower (3277 ns against 804 with JAX's own loop); a one-step running max "
    "(a reduce-window, which XLA does not fuse into consumers) computes the uniforms once. Seaquest already "
    "used the trick for its terminal flag, read by the reset select of every state field.",
    "**Freeway draws 8 uniforms per step instead of 16** (and 8 per reset): one uniform per car is both the "
    "direction draw and, through its lower bits, the speed draw; the game reads the direction only as "
    "sign(u - 0.5), so speed and sign stay independent with the reference's distributions (tested over every "
    "float32 uniform). With the two changes above Freeway went from 1.56x pgx's own time (3162 ns, previous "
    "README run) to the ratio in the table.",
    "**Doors without a sort**: the random-door subset is ranked by pairwise comparisons (the same columns as the "
    "stable double argsort it replaces, ties included; tested). With params traced (as `make_vec` passes them) "
    "a full step at N = 4096 took 60,370 ns with the argsorts, 7,620 with sequential k-th-free-column picks and "
    "2,935 with the pairwise ranks (interleaved, load 5); with params as constants XLA drops it either way.",
    "**Seaquest's observation as row masks**: each (column, channel) gets a 10-bit mask of its rows (the enemy "
    "channels from slot-mask intersections, 320 tests instead of 1000; the others from their few entities), "
    "materialized as two bytes, then expanded with one AND per bool against a per-row constant along the "
    "contiguous (column, channel) axis, which XLA's CPU backend vectorizes. The observation alone went from "
    "696 to 270 ns per environment at N = 4096 (interleaved, same bits), and Seaquest passed 2M steps/s.",
    "**No freeze under AutoReset**: `Environment.transition` keeps a terminated state's game with a select per "
    "field, and XLA copied Seaquest's bit-sliced game step into each of those selects. AutoReset replaces a "
    "terminated state anyway, so it skips that select (results unchanged, tested): Seaquest's optimized HLO "
    "went from 19.7k to 12.8k lines and its compile from 7.9 to 5.4-6.3 s (A/B on a quiet machine; step time "
    "within noise).",
    "The previous README run (load average 6-15) measured Breakout 2.17x, Asterix 3.99x, Freeway 1.56x, "
    "SpaceInvaders 6.35x, Seaquest 6.98x (0.357M steps/s) and CartPole 1.39x in own time at N = 4096; part of "
    "the change in totals since then is the lighter load, which is why only ratios from one run are compared.",
]

# What was tried and measured, but did not help (kept so that nobody tries it again blindly).
TRIED = [
    "Seaquest's observation was more than half of its step (before the row masks above): per-kernel profile "
    "(`jax.profiler`) at N = 4096, "
    "about 1,100 ns per environment in the final fusion alone, the outer product of (row, channel) and "
    "(column, channel) entity masks into 1000 bools, about 1 ns per bool where the do-nothing ceiling writes "
    "its 1000 bools in about 0.1. Tried: materializing the masks first (no gain; the reduce-windows cost 600 "
    "ns), the six single-cell and gauge channels by compares and only four by masks (1361 against 1276 ns), "
    "packing each cell's 10 channel bits and expanding them with a multiply (13x slower), channel-major "
    "layouts (within noise). The 2M steps/s target needs the whole step under about 400 ns own.",
    "Seaquest's observation, second look (before the row masks above; quiet machine, N = 4096): the step "
    "without the observation is "
    "240-290 ns and with it 700-980 ns, so 2M steps/s needs the observation under about 250 ns. The optimized "
    "LLVM IR of the final fusion shows why it is not: XLA's CPU emitter unrolls the 10-long channel loop into a "
    "scalar load, and, compare and byte store per bool, with no SIMD. The same work vectorizes when the "
    "operands have the output's shape (u8 [N, 1000]: 89 ns) or are broadcast only along a major axis (a "
    "100-long contiguous minor axis: 48 ns), but the (row, channel) masks repeat with period 10 along "
    "(column, channel) and tiling them costs 180-250 ns; a batch-minor layout computes in 98 ns and its "
    "transpose back costs 560; two-stage bit masks expanded by shifts, 1750. Stacking the masks on the "
    "channel axis so that the fusion reads no transposed operand: 540 against 551 ns (noise, not kept).",
    "Materializing AutoReset's done flag for every game (the Seaquest trick): Asterix -12%, SpaceInvaders -18%, "
    "but Seaquest +24% and Breakout +13% (interleaved, load 6); not applied.",
    "Doors' observation built with compares instead of three scatters: 13,094 against 1,708 ns per step "
    "(XLA's CPU loop emitter is slow on those broadcasts); reverted.",
    "CartPole: own time is mostly the 5 uniforms (sticky + 4 reset) and sin/cos; NumPy's vectorized "
    "CartPoleVectorEnv is itself fast at N = 4096 on an idle core (about 85 ns per step), so 2x its own time "
    "would need about 40 ns per step for physics, draws, reset select and observation.",
    "The gymnax-style composition (its table above) costs more than its parts. Own ns at N = 4096, its parts measured"
    " alone in one interleaved run (2026-11-26, quiet machine; `step` is `env.step` without a reset, `reset` is "
    "`env.reset` every step): CartPole composition 70-78 against step 15 and reset 0; Breakout 204-258 against 89 and"
    " 44; Freeway 1,114-1,250 against 252 and 227 (AutoReset's whole step: 27-33, 102-116, 386-417). So for Breakout "
    "even the parts add up to more than the 2x budget (97 ns against gymnax's 194), while for CartPole and Freeway "
    "the cost is in how XLA fuses two observations and their select with the two draws: without the key split, "
    "CartPole 39 and Freeway 1,041; without the split and the state select (only the observations selected), 18 and "
    "985; with the split but no reset, 37 and 299. So JAX's split in the user's code is about 30 ns of CartPole's, "
    "and on Freeway selecting between the two observations costs about 550 ns more than computing them apart. Tried: "
    "materializing either observation before the select (`prng.materialize`): Freeway 1,250 -> 955-979, Breakout 258 "
    "-> 393-426, CartPole within noise; both: Freeway 1,176, Breakout 549. Not applied (it would tax every other "
    "path). Earlier: materializing Freeway's 10x10 code grid before its seven channel compares (about 450 against 300"
    " ns per environment; reverted); materializing the state before the observation (kept) is what took this "
    "composition from 0.06x back to 0.9x.",
    "Gymnasium path (CartPole, Doors, Breakout at N = 1024): a synchronous jitted call is far slower than a "
    "step inside the scan (CartPole about 400 us against 120). A do-nothing jit with 1, 4 and 12 outputs takes "
    "11, 20 and 139 us when the result is awaited (quiet machine): independent kernels go to XLA's thread "
    "pool and the hand-offs dominate. Tried, interleaved: donating the state buffers (-10 to -15%, but a "
    "state the user kept from `env.state` would be deleted by the next step; not applied), packing state and "
    "results into one buffer each (CartPole -15%, Breakout 6x slower: the concatenations break fusions; "
    "reverted), synchronous CPU dispatch (`JAX_CPU_ENABLE_ASYNC_DISPATCH=false`) and a single-threaded "
    "Eigen pool (within noise).",
]


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


def summary_table(rows: list[dict], n: int) -> tuple[str, list[str]]:
    """One line per environment at N = n: ours (the kept mode) against the best peer, and the targets."""
    lines = [
        "| env | MaxAtar steps/s | best peer steps/s | x total | own ns (ours / best peer) | x own | "
        "compile s (ours / JAX peers) | state B (ours / peers) | target |",
        "|" + "---|" * 9,
    ]
    missed = []
    for env in dict.fromkeys(r["env"] for r in rows):
        group = [r for r in rows if r["env"] == env and r["n"] == n]
        ours = next((r for r in group if r["family"] == "maxatar" and r.get("kept")), None)
        if ours is None:
            continue
        peers = [r for r in group if r["family"] == "peer"]
        best = max(peers, key=lambda r: r["steps_per_s"], default=None)
        own_peers = [r for r in peers if isinstance(r["own_ns_per_step"], float) and r["own_ns_per_step"] > 0]
        best_own = min(own_peers, key=lambda r: r["own_ns_per_step"], default=None)
        jax_peers = [r for r in peers if isinstance(r.get("compile_s"), float) and not math.isnan(r["compile_s"])]
        compile_peers = " / ".join(f"{_fmt(r['compile_s'], 's')} {r['impl']}" for r in jax_peers) or "-"
        state_peers = " / ".join(f"{r['state_bytes']} {r['impl']}" for r in jax_peers if r.get("state_bytes") != "")
        x_own = ours.get("x_best_peer_own")
        targets = []
        if env in MINATAR_GAMES or _game(env) == "CartPole":
            ok = isinstance(x_own, float) and x_own >= OWN_TARGET
            targets.append(f"2x own: {'met' if ok else 'MISSED'}")
            if not ok and best_own is not None:
                need = best_own["own_ns_per_step"] / OWN_TARGET
                missed.append(
                    f"{env}: own {ours['own_ns_per_step']:.0f} ns per step, {need:.0f} ns needed for 2x "
                    f"{best_own['impl']} ({x_own:.2f}x now)"
                )
        if _game(env) == "Seaquest":
            ok = ours["steps_per_s"] >= SEAQUEST_TARGET
            targets.append(f"2M steps/s: {'met' if ok else 'MISSED'}")
            if not ok:
                missed.append(f"{env}: {_fmt(ours['steps_per_s'], 'sps')} steps/s against the 2M target")
        slower = [r["impl"] for r in jax_peers if r["compile_s"] < ours["compile_s"]]
        if slower:
            missed.append(
                f"{env}: compile {ours['compile_s']:.2f} s, slower than "
                + ", ".join(f"{r['impl']} ({r['compile_s']:.2f} s)" for r in jax_peers if r["impl"] in slower)
            )
        own_cell = f"{_fmt(ours['own_ns_per_step'], 'ns')} / " + (
            f"{_fmt(best_own['own_ns_per_step'], 'ns')} ({best_own['impl']})" if best_own else "-"
        )
        lines.append(
            "| "
            + " | ".join(
                [
                    env,
                    _fmt(ours["steps_per_s"], "sps"),
                    f"{_fmt(best['steps_per_s'], 'sps')} ({best['impl']})" if best else "- (no peer)",
                    _fmt(ours.get("x_best_peer"), "x"),
                    own_cell,
                    _fmt(x_own, "x"),
                    f"{_fmt(ours.get('compile_s'), 's')} / {compile_peers}",
                    f"{ours.get('state_bytes', '')} / {state_peers or '-'}",
                    "; ".join(targets) or "no peer",
                ]
            )
            + " |"
        )
    return "\n".join(lines), missed


COMPOSITION = "maxatar[step+reset]"  # the gymnax-style composition users write by hand (benchmarks.impls)
COMPOSITION_PEERS = ("gymnax", "pgx")  # what it is measured against: the JAX peers' own auto-resetting step


def composition_table(rows: list[dict], n: int) -> tuple[str, list[str]]:
    """The gymnax-style composition (per-environment keys, `env.step` + `env.reset` + a select, in one vmapped
    function) at N = n, in own time against the best of gymnax's and pgx's own step; the target is 2x."""
    lines, missed = [], []
    for env in dict.fromkeys(r["env"] for r in rows):
        group = [r for r in rows if r["env"] == env and r["n"] == n]
        ours = next((r for r in group if r["impl"] == COMPOSITION), None)
        peers = [r for r in group if r["impl"] in COMPOSITION_PEERS and isinstance(r["own_ns_per_step"], float)]
        peers = [r for r in peers if r["own_ns_per_step"] > 0]
        if ours is None or not peers:
            continue
        best = min(peers, key=lambda r: r["own_ns_per_step"])
        ratio = best["own_ns_per_step"] / ours["own_ns_per_step"]
        ok = ratio >= OWN_TARGET
        if not ok:
            missed.append(
                f"{env}: gymnax-style composition, own {ours['own_ns_per_step']:.0f} ns per step against "
                f"{best['own_ns_per_step']:.0f} for {best['impl']} ({ratio:.2f}x, 2x needed)"
            )
        lines.append(
            f"| {env} | {_fmt(ours['own_ns_per_step'], 'ns')} | {_fmt(best['own_ns_per_step'], 'ns')} "
            f"({best['impl']}) | {_fmt(ratio, 'x')} | 2x own: {'met' if ok else 'MISSED'} |"
        )
    if not lines:
        return "", []
    head = ["| env | composition own ns | best JAX peer own ns | x own | target |", "|---|---|---|---|---|"]
    return "\n".join(head + lines), missed


def gym_summary(gym_rows: list[dict]) -> tuple[str, list[str]]:
    lines = [
        "| env | N | make_vec numpy steps/s | pure steps/s | x pure (target >= 0.5) | x phys2d |",
        "|---|---|---|---|---|---|",
    ]
    missed = []
    for env in dict.fromkeys(r["env"] for r in gym_rows):
        group = [r for r in gym_rows if r["env"] == env]
        numpy_path = next((r for r in group if r["path"] == "maxatar make_vec (numpy)"), None)
        pure = next((r for r in group if r["path"].startswith("maxatar pure")), None)
        phys2d = next((r for r in group if r["path"].startswith("phys2d")), None)
        if numpy_path is None or pure is None:
            continue
        ratio = numpy_path["steps_per_s"] / pure["steps_per_s"]
        if ratio < GYM_TARGET:
            missed.append(f"{env}: Gymnasium path, make_vec (numpy) at {ratio:.3f}x of the pure path")
        lines.append(
            f"| {env} | {numpy_path['n']} | {_fmt(numpy_path['steps_per_s'], 'sps')} | "
            f"{_fmt(pure['steps_per_s'], 'sps')} | {ratio:.3f}x {'met' if ratio >= GYM_TARGET else 'MISSED'} | "
            + (_fmt(numpy_path["steps_per_s"] / phys2d["steps_per_s"], "x") if phys2d else "-")
            + " |"
        )
    return "\n".join(lines), missed


def readme_section(rows: list[dict], gym_rows: list[dict], meta: dict, plot_path: str) -> str:
    """The README's performance section: what the benchmark command measured, with the targets."""
    n = _largest_common_n(rows)
    table, missed = summary_table(rows, n)
    parts = [
        README_START,
        "<!-- Generated by `python -m benchmarks.run ... --readme docs/performance.md`; "
        "edit benchmarks/report.py, not this. -->",
        f"{Run.from_record(meta).line()} The machine was shared with other jobs, so read the ratios, which come "
        "from interleaved measurements in the same run, more than the totals. Full tables (every N, min-max of the "
        f"repeats): `{meta['out']}/results.md`, CSV beside it; `benchmarks/README.md` explains the columns.",
        f"At N = {n} environments (medians of {meta['repeats']} interleaved repeats), with observations "
        'computed and finished episodes reset. "own ns" is the time per step minus the do-nothing harness '
        "ceiling measured in the same run; the targets compare own time (2x = half the best peer's own ns). "
        "Compile s is the time to the first step (trace, lower, compile of the rollout).",
        table,
        f"![steps/s against N, log-log, one line per implementation]({plot_path})",
    ]
    composition, composition_missed = composition_table(rows, n)
    if composition:
        missed += composition_missed
        parts += [
            f"The composition gymnax users write by hand (`{COMPOSITION}`: per-environment keys, `env.step`, "
            "`env.reset` with a second key and a `jnp.where` select of state and observation, in one vmapped "
            f"function), at N = {n}, in own time against the best of gymnax's and pgx's own auto-resetting step:",
            composition,
        ]
    if gym_rows:
        gym, gym_missed = gym_summary(gym_rows)
        missed += gym_missed
        parts += [
            "Gymnasium path: `gymnasium.make_vec(id, num_envs=N)` with numpy outputs, stepped from Python, "
            "against the pure jitted scan (and Gymnasium's own functional `phys2d/CartPole-v1` vector env):",
            gym,
        ]
    parts += [
        "Targets not met: " + ("none." if not missed else "\n\n" + "\n".join(f"- {m}" for m in missed)),
        "What made the difference (profiles with `python -m benchmarks.profile_envs`; see benchmarks/README.md):",
        "\n".join(f"- {item}" for item in WHAT_MADE_THE_DIFFERENCE),
        "Tried without success:",
        "\n".join(f"- {item}" for item in TRIED),
    ]
    if meta.get("notes"):
        parts += ["Notes on this run:", "\n".join(f"- {note}" for note in meta["notes"])]
    parts += [
        README_END,
    ]
    return "\n\n".join(parts)


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
