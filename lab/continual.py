"""The continual-RL table: an agent trained through a protocol of `maxatar.continual` (a run of the agents' own
command line on `maxatar/MinAtar-Continual-v0`), its evaluation matrix, the three metrics with bootstrap
confidence intervals over seeds, a heatmap of the matrix and the per-game curves, rebuilt from the committed
run files (`metrics.csv`, `summary.json`) by one command:

    python -m maxatar_agents.pqn --preset c-chain --seeds 5 --out runs/pqn-c-chain   # train (resumable)
    python -m lab.continual report runs/pqn-c-chain --readme docs/guides/continual.md

R[i, j] is the mean return on game j of the greedy policy after stage i (`return_<game>`, logged after each
stage's last interval), normalised per game by the random policy (0) and MinAtar's published DQN (1). From it
(rows 1..S, the untrained network taken as the random policy, 0):

* average performance (GEM's ACC, Lopez-Paz & Ranzato, 2017): the mean of the last row over the games;
* forgetting (Chaudhry et al., 2018, "Riemannian Walk"): for each game trained before the last stage, its best
  return after an earlier stage minus its return at the end, averaged over those games;
* forward transfer (GEM's FWT): for each stage after the first that plays a game for the first time, the return
  on it just before its stage, minus the random policy's (0), averaged.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
from pathlib import Path

import numpy as np
from scipy import stats

import maxatar
from benchmarks.pages import replace_section
from maxatar.registry import MINATAR_GAMES, env_class
from maxatar_agents.experiments.published import MINATAR_DQN
from maxatar_agents.experiments.statistics import read_random_scores

START, END = "<!-- continual-table:start -->", "<!-- continual-table:end -->"


def game_ids() -> dict[str, str]:
    """{game name ("space_invaders"): its id ("SpaceInvaders-v0")}."""
    return {env_class(game_id).name: game_id for game_id in MINATAR_GAMES}


def read_run(run: Path) -> tuple[dict, dict[int, list[dict]]]:
    """A run's summary and its metrics rows, by seed; a run still training (no summary.json yet) is read from its
    checkpoint's record, and its table holds the stages it has finished."""
    if (run / "summary.json").exists():
        summary = json.loads((run / "summary.json").read_text())
    else:
        record = json.loads((run / "checkpoint.json").read_text())
        summary = {**record, "frames_per_seed": record["frames_done"]}
    rows: dict[int, list[dict]] = {}
    with open(run / "metrics.csv", newline="") as f:
        for row in csv.DictReader(f):
            rows.setdefault(int(row["seed"]), []).append({k: float(v) for k, v in row.items() if v != ""})
    return summary, rows


def matrix(rows: list[dict], games: list[str]) -> tuple[np.ndarray, list[int]]:
    """One seed's R (stages x games, raw returns) and each stage's game index."""
    ends = [row for row in rows if not math.isnan(row[f"return_{games[0]}"])]
    return np.array([[row[f"return_{g}"] for g in games] for row in ends]), [int(row["task"]) for row in ends]


def normalise(R: np.ndarray, games: list[str]) -> np.ndarray:
    ids, random = game_ids(), read_random_scores()
    low = np.array([random[ids[g]] for g in games])
    high = np.array([MINATAR_DQN[ids[g]] for g in games], float)
    return (R - low) / (high - low)


def average_performance(R: np.ndarray, stages: list[int]) -> float:
    return float(R[-1].mean())


def forgetting(R: np.ndarray, stages: list[int]) -> float:
    earlier = sorted(set(stages[:-1]))
    if not earlier or len(R) < 2:
        return math.nan
    return float(np.mean([R[:-1, j].max() - R[-1, j] for j in earlier]))


def forward_transfer(R: np.ndarray, stages: list[int]) -> float:
    seen, gains = {stages[0]}, []
    for i, task in enumerate(stages[1:], start=1):
        if task not in seen:
            gains.append(R[i - 1, task])
        seen.add(task)
    return float(np.mean(gains)) if gains else math.nan


METRICS = {
    "average performance": average_performance,
    "forgetting": forgetting,
    "forward transfer": forward_transfer,
}


def interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% bootstrap confidence interval (percentile, 10,000 resamples, seeded) over seeds."""
    if len(values) < 2:
        return float(values.mean()), math.nan, math.nan
    result = stats.bootstrap(
        (values,), np.mean, n_resamples=10_000, method="percentile", random_state=np.random.default_rng(0)
    )
    return float(values.mean()), float(result.confidence_interval.low), float(result.confidence_interval.high)


def report(run: Path, page: Path | None, figures: Path) -> str:
    """The section (table, metrics, pictures) of the run in `run`; written into `page` when given."""
    summary, by_seed = read_run(run)
    config = summary["config"]
    names = games_in_task_order(config)
    per_seed = [(normalise(R, names), stages) for R, stages in (matrix(rows, names) for rows in by_seed.values())]
    stages = max((s for _, s in per_seed), key=len)
    complete = [(R, s) for R, s in per_seed if s == stages]
    mean_R = np.mean([R for R, _ in complete], axis=0)
    lines = [START, ""]
    lines.append(
        f"`{summary.get('algorithm', run.name)}`, preset `{summary.get('preset', '?')}`, protocol "
        f"`{config.get('protocol')}`: {len(complete)} seeds of {summary.get('frames_per_seed', 0):,} frames; returns "
        "normalised per game (0: the random policy, 1: MinAtar's DQN). R[i, j], the mean over seeds:"
    )
    lines += ["", "| after stage | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for i, row in enumerate(mean_R):
        lines.append(f"| {i + 1} ({names[stages[i]]}) | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    lines += ["", "| metric | mean | 95% CI over seeds |", "|---|---|---|"]
    for metric, fn in METRICS.items():
        mean, low, high = interval(np.array([fn(R, s) for R, s in complete]))
        lines.append(f"| {metric} | {mean:.2f} | [{low:.2f}, {high:.2f}] |")
    heatmap, curves = plot(mean_R, stages, names, by_seed, figures, run.name)
    where = (lambda p: os.path.relpath(p, page.parent)) if page is not None else str
    lines += ["", f"![the evaluation matrix]({where(heatmap)})", "", f"![per-game curves]({where(curves)})", "", END]
    section = "\n".join(lines)
    if page is not None:
        replace_section(page, section, START, END)
    return section


def games_in_task_order(config: dict) -> list[str]:
    """The games of the run's environment, task k the k-th (the environment made again from its config)."""
    env, _ = maxatar.make(config["env_id"], **({"preset": config["protocol"]} if config.get("protocol") else {}))
    return list(env.games)


def plot(mean_R, stages, names, by_seed, figures: Path, stem: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(names), 1.2 + 0.6 * len(mean_R)))
    image = ax.imshow(mean_R, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(names)), names)
    ax.set_yticks(range(len(mean_R)), [f"{i + 1}: {names[t]}" for i, t in enumerate(stages)])
    ax.set_xlabel("evaluated on")
    ax.set_ylabel("after stage")
    for i in range(mean_R.shape[0]):
        for j in range(mean_R.shape[1]):
            ax.text(j, i, f"{mean_R[i, j]:.2f}", ha="center", va="center", color="white", fontsize=8)
    fig.colorbar(image, ax=ax, label="normalised return")
    fig.tight_layout()
    heatmap = figures / f"{stem}-matrix.png"
    fig.savefig(heatmap, dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 2.8), sharex=True)
    for k, (ax, name) in enumerate(zip(np.atleast_1d(axes), names, strict=True)):
        for seed, rows in by_seed.items():
            frames = np.array([r["frames"] for r in rows])
            train = np.array([r["recent_return"] if int(r["task"]) == k else np.nan for r in rows])
            ax.plot(frames, train, color="C0", alpha=0.6, lw=1, label="training" if seed == 0 else None)
            evaluated = np.array([r[f"return_{name}"] for r in rows])
            shown = ~np.isnan(evaluated)
            ax.plot(
                frames[shown], evaluated[shown], "o", color="C1", ms=3, label="greedy, stage end" if seed == 0 else None
            )
        rows = next(iter(by_seed.values()))
        for i in range(1, len(rows)):
            if rows[i]["stage"] != rows[i - 1]["stage"]:
                ax.axvline(rows[i - 1]["frames"], color="grey", lw=0.8, ls="--")
        ax.set_title(name)
        ax.set_xlabel("frames")
    np.atleast_1d(axes)[0].set_ylabel("return")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    curves = figures / f"{stem}-curves.png"
    fig.savefig(curves, dpi=110)
    plt.close(fig)
    return heatmap, curves


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="the table and its pictures from a run's files")
    rep.add_argument("run", type=Path, help="the run's folder (metrics.csv, summary.json)")
    rep.add_argument("--readme", type=Path, default=None, help="the page whose continual-table section to rewrite")
    rep.add_argument("--figures", type=Path, default=Path("docs/guides/continual"), help="where the PNGs go")
    args = parser.parse_args(argv)
    print(report(args.run, args.readme, args.figures))


if __name__ == "__main__":
    main()
