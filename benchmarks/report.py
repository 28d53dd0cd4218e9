"""Derived columns (harness ceiling subtracted, ratios to the best peer), tables, CSV files and the plot."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

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
    runs = row["runs"]
    row["steps_per_s"] = statistics.median(runs)
    row["min_steps_per_s"], row["max_steps_per_s"] = min(runs), max(runs)
    row["ns_per_step"] = 1e9 / row["steps_per_s"]
    return row


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
