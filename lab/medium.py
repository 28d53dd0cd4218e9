"""The medium policies the offline datasets' `medium` and `mixed` tiers play (`maxatar_agents.datasets`): for each
MinAtar game, the shipped expert's own training run (PQN, its `minatar` preset, its seed, 5M frames of schedule)
stopped part-way, once its training return reaches a quarter of the expert's greedy return
(`--stop-at-return`), then exported beside the expert (`maxatar_agents/pretrained/medium/<game>/`).

    python -m lab.medium              # train and export the games that have no medium policy yet
    python -m lab.medium --force      # all five again
    python -m lab.medium Freeway-v0 --force --stop-at-return 2.4   # a game whose return jumps past the target
    python -m lab.medium Freeway-v0 --stop-at-return -1   # (its export removed) one more interval, then export

Each export records the greedy return over 100 episodes, which the datasets' tests and docs read; the
training return (played with epsilon 0.05, and averaged over the last 100 episodes while the policy improves)
lags the greedy one, hence a quarter as the stopping point for a policy meant to score about a third to a half of
the expert.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from maxatar.registry import MINATAR_GAMES as GAMES

RUNS = Path("runs/medium")
STOP_FRACTION = 0.25  # of the expert's greedy return, in training return


def train_and_export(game: str, runs: Path, stop: float | None = None, fresh: bool = False) -> None:
    from maxatar_agents.run import checkpoint, policies

    expert_dir = checkpoint.pretrained_path(game)
    expert = checkpoint.read_meta(expert_dir)
    stop = stop if stop is not None else round(STOP_FRACTION * expert["record"]["greedy_return"], 1)
    out = runs / game
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", f"maxatar_agents.{expert['algorithm']}", "--env", f"maxatar/{game}"]
    command += ["--preset", expert["preset"], "--frames", str(expert["config"]["total_steps"])]
    command += ["--seed", str(expert["seeds"][0]), "--seeds", "1", "--no-progress"]
    command += ["--checkpoint-every", "0", "--stop-at-return", str(stop), "--out", str(out)]
    if checkpoint.exists(out):
        command.append("--resume")
    subprocess.run(command, check=True)
    summary = json.loads((out / "summary.json").read_text())
    record = {
        "run": f"{expert['algorithm']}-{expert['preset']}/{game}, stopped after {summary['frames_per_seed']} frames",
        "seed": expert["seeds"][0],
        "greedy_return": summary["final_eval_return_mean"],
        "greedy_episodes": summary["final_eval_episodes"],
        "frames_per_seed": summary["frames_per_seed"],
        "expert_greedy_return": expert["record"]["greedy_return"],
        "setting": expert["record"]["setting"],
    }
    policies.export_policy(out, checkpoint.PRETRAINED_DIR / "medium" / game, 0, record)
    ratio = record["greedy_return"] / record["expert_greedy_return"]
    print(f"{game}: medium greedy return {record['greedy_return']:.2f} ({ratio:.2f} of the expert's)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.medium", description=__doc__)
    parser.add_argument("games", nargs="*", default=list(GAMES), help="games (default: the five MinAtar games)")
    parser.add_argument("--runs", type=Path, default=RUNS, help="where the training runs go (not committed)")
    parser.add_argument("--force", action="store_true", help="train afresh and export games that already have one")
    parser.add_argument("--stop-at-return", type=float, help="the training return to stop at (default: a quarter of "
                        "the expert's greedy return)")  # fmt: skip
    args = parser.parse_args(argv)
    from maxatar_agents.run import checkpoint

    for game in args.games:
        if args.force or not checkpoint.exists(checkpoint.PRETRAINED_DIR / "medium" / game):
            train_and_export(game, args.runs, args.stop_at_return, fresh=args.force)


if __name__ == "__main__":
    main()
