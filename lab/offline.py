"""The offline table: behaviour cloning and discrete CQL trained on each MinAtar game's Minari datasets (runs of
the agents' own command line, `maxatar/<Game>/<tier>-v0`), their final evaluation normalised by the dataset's
reference scores (`minari.get_normalized_score`'s formula, times 100: random play 0, the expert 100), the mean and
a 95% bootstrap confidence interval over seeds, rebuilt from the committed run folders by one command:

    python -m lab.offline run --out benchmarks/results/agents/offline --seeds 5   # trains the missing runs
    python -m lab.offline run --games Breakout --tiers expert -- --total-steps 20000   # some, with options
    python -m lab.offline report benchmarks/results/agents/offline --page docs/guides/offline-baselines.md

A run folder is read from its `summary.json` alone (the dataset's id, sha256 and reference scores are recorded
there by the run), so the table needs neither the datasets nor the checkpoints.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from benchmarks.pages import replace_section
from lab.continual import interval
from maxatar.registry import MINATAR_GAMES

START, END = "<!-- offline-table:start -->", "<!-- offline-table:end -->"
AGENTS = ("bc", "cql")
TIERS = ("random", "medium", "mixed", "noisy", "expert", "human")  # the datasets' tiers, in the table's order
RESULTS = Path("benchmarks/results/agents/offline")


def games() -> dict[str, str]:
    """{game ("Breakout"): the id of its environment ("maxatar/Breakout-v0")}, MinAtar's five in MinAtar's order."""
    return {game_id.rsplit("-v", 1)[0]: f"maxatar/{game_id}" for game_id in MINATAR_GAMES}


def dataset_id(game: str, tier: str) -> str:
    """`Breakout`, `expert` -> `maxatar/Breakout/expert-v0` (Minari's namespace/name/version)."""
    return f"maxatar/{game}/{tier}-v0"


def run_dir(results: Path, algorithm: str, dataset: str) -> Path:
    """`bc`, `maxatar/Breakout/expert-v0` -> results/bc-Breakout-expert."""
    _, game, tier = dataset.split("/")
    return results / f"{algorithm}-{game}-{tier.rsplit('-v', 1)[0]}"


def train(
    results: Path, seeds: int, chosen: list[str], tiers: list[str], agents: list[str], options: list[str] = ()
) -> None:
    """Each agent on each game's datasets that exist locally, `seeds` seeds in one program, into its run folder,
    with the agent's command-line `options` (e.g. `--total-steps 20000`); a finished run is kept, an
    interrupted one resumed (with its own options)."""
    from maxatar_agents import commands
    from maxatar_agents.run.cli import UsageError

    for game in chosen:
        for tier in tiers:
            dataset = dataset_id(game, tier)
            for algorithm in agents:
                out = run_dir(results, algorithm, dataset)
                if (out / "summary.json").exists():
                    continue
                if (out / "checkpoint.json").exists():
                    argv = ["--out", str(out), "--resume"]
                else:
                    argv = ["--env", games()[game], "--dataset", dataset, "--seeds", str(seeds), "--out", str(out)]
                    argv += options
                try:
                    commands.run(algorithm, argv)
                except UsageError as error:  # a dataset that is not there: the table shows the runs that are
                    print(f"{algorithm} on {dataset}: skipped: {error}")


def normalised(summary: dict) -> np.ndarray | None:
    """A run's final evaluation per seed, normalised by its dataset's reference scores (x 100); None without
    them."""
    low, high = (summary["dataset"].get(name) for name in ("ref_min_score", "ref_max_score"))
    if low is None or high is None or high == low:
        return None
    return 100 * (np.asarray(summary["final_eval_return_per_seed"]) - low) / (high - low)


def read_runs(results: Path) -> dict[tuple[str, str], dict]:
    """{(algorithm, dataset id): summary} of the finished offline runs in `results`."""
    runs = {}
    for path in sorted(results.glob("*/summary.json")) if results.is_dir() else []:
        summary = json.loads(path.read_text())
        if "dataset" in summary:
            runs[summary["algorithm"], summary["dataset"]["id"]] = summary
    return runs


def cell(summary: dict | None) -> str:
    """`mean [low, high] (n)` of a run's normalised scores, its raw mean return without reference scores."""
    if summary is None:
        return "-"
    scores = normalised(summary)
    if scores is None:
        return f"return {summary['final_eval_return_mean']:.2f} (no reference scores)"
    mean, low, high = interval(scores)
    spread = "" if math.isnan(low) else f" [{low:.1f}, {high:.1f}]"
    return f"{mean:.1f}{spread} ({len(scores)})"


def budget(summaries) -> str:
    """The runs' training budget in one sentence, read from their recorded configs (updates, minibatch, dataset
    steps), so that the page cannot state another."""

    def spread(values) -> str:
        low, high = min(values), max(values)
        return f"{low:,}" if low == high else f"{low:,} to {high:,}"

    summaries = list(summaries)
    updates = spread([s["config"]["total_steps"] for s in summaries])
    batch = spread([s["config"]["batch_size"] for s in summaries])
    steps = spread([s["dataset"]["steps"] for s in summaries])
    return (
        f"Each run: {updates} updates of {batch} dataset steps per seed, on datasets of {steps} steps "
        f"({len(summaries)} runs, recorded in their `summary.json`)."
    )


def order(dataset: str) -> tuple[int, int, str]:
    """Games in MinAtar's order, then tiers in `TIERS`' order (others after each, by name)."""
    _, game, tier = dataset.split("/")
    known, tier = list(games()), tier.rsplit("-v", 1)[0]
    game_rank = known.index(game) if game in known else len(known)
    return game_rank, TIERS.index(tier) if tier in TIERS else len(TIERS), dataset


def report(results: Path, page: Path | None = None) -> str:
    """The table of the runs in `results`; written between the markers of `page` when given."""
    runs = read_runs(results)
    datasets = sorted({dataset for _, dataset in runs}, key=order)
    lines = [START, ""]
    if not datasets:
        lines += ["No offline runs yet: `python -m lab.offline run` trains them.", "", END]
    else:
        lines.append(
            "Final evaluation (100 episodes per seed) normalised by each dataset's reference scores (0: random "
            "play, 100: the expert), mean over seeds with its 95% bootstrap confidence interval and (the seeds):"
        )
        lines += ["", budget(runs.values())]
        lines += ["", "| dataset | " + " | ".join(a.upper() for a in AGENTS) + " |", "|---" * (len(AGENTS) + 1) + "|"]
        for dataset in datasets:
            lines.append(f"| `{dataset}` | " + " | ".join(cell(runs.get((a, dataset))) for a in AGENTS) + " |")
        lines += ["", END]
    section = "\n".join(lines)
    if page is not None:
        replace_section(page, section, START, END)
    return section


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train every agent on every game's local datasets (the missing runs)")
    run.add_argument("--out", type=Path, default=RESULTS, help="the folder of run folders")
    run.add_argument("--seeds", type=int, default=5)
    run.add_argument("--games", nargs="+", default=list(games()), choices=list(games()))
    run.add_argument("--tiers", nargs="+", default=list(TIERS))
    run.add_argument("--agents", nargs="+", default=list(AGENTS), choices=AGENTS)
    run.add_argument("options", nargs="*", help="after --: options of the agents' command line for new runs")
    rep = sub.add_parser("report", help="the table from the run folders' summary.json")
    rep.add_argument("results", type=Path, nargs="?", default=RESULTS, help="the folder of run folders")
    rep.add_argument("--page", type=Path, default=None, help="the page whose offline-table section to rewrite")
    args = parser.parse_args(argv)
    if args.command == "run":
        train(args.out, args.seeds, args.games, args.tiers, args.agents, args.options)
    else:
        print(report(args.results, args.page))


if __name__ == "__main__":
    main()
