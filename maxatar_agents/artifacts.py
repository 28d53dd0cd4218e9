"""What a run leaves on disk besides its checkpoint: metrics.csv (one row per seed and logged point),
summary.json, learning_curve.png and, on request, a GIF of the trained policy. Plain functions of plain data
(rows, dicts), whatever the algorithm, so the next agents write the same files."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np

from maxatar import sharding
from maxatar_agents import checkpoint
from maxatar_agents.configs import config_to_dict
from maxatar_agents.program import Schedule
from maxatar_agents.runner import Plan, Progress


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    """metrics.csv, its columns those of the first row (the runner writes every row with the same keys)."""
    if not rows:
        return
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def save_progress(plan: Plan, sched: Schedule, progress: Progress, out: Path, final_eval: dict | None = None) -> Path:
    """Checkpoint and metrics.csv of the last completed interval; returns the state file's path. Every
    process must call it (the state is gathered from all of them); only process 0 writes."""
    state = sharding.to_numpy(progress.state)  # gathered from every device (and process) before writing
    path = out / checkpoint.STATE_FILE
    if jax.process_index() != 0:
        return path
    meta = {
        "algorithm": plan.algorithm,
        "env_id": plan.config.env_id,
        "config": config_to_dict(plan.config),
        "preset": plan.preset,
        "seeds": plan.seeds,
        "intervals_done": progress.done,
        "num_intervals": sched.num_intervals,
        "frames_done": progress.done * sched.frames_per_interval,
        "wall_time": progress.wall,
        "rows": progress.rows,
        "final_eval": final_eval,
    }
    path = checkpoint.save(out, state, meta)
    write_metrics(out / "metrics.csv", progress.rows)
    return path


def final_eval(returns: np.ndarray) -> dict[str, Any]:
    """The final evaluation as checkpoints and summaries record it, from (seeds, episodes) returns."""
    per_seed = [float(r) for r in returns.mean(axis=1)]
    return {
        "episodes": int(returns.shape[1]),
        "return_per_seed": per_seed,
        "return_mean": float(np.mean(per_seed)),
        "return_min_episode": float(returns.min()),
    }


def plot_learning_curve(path: Path, rows: list[dict[str, Any]], title: str) -> None:
    """Mean recent return over seeds against frames, with the min-max band and each seed faintly, so one
    picture shows both the trend and the spread between seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = sorted({r["seed"] for r in rows})
    frames = sorted({r["frames"] for r in rows})
    table = np.full((len(seeds), len(frames)), np.nan)
    for r in rows:
        table[seeds.index(r["seed"]), frames.index(r["frames"])] = r["recent_return"]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    x = np.asarray(frames)
    for row in table:
        ax.plot(x, row, color="tab:blue", alpha=0.25, linewidth=0.8)
    with np.errstate(all="ignore"):
        if len(seeds) > 1:
            ax.fill_between(x, np.nanmin(table, 0), np.nanmax(table, 0), color="tab:blue", alpha=0.15)
        ax.plot(x, np.nanmean(table, 0), color="tab:blue", linewidth=2, label=f"mean of {len(seeds)} seed(s)")
    ax.set_xlabel("frames per seed")
    ax.set_ylabel("return (mean of last 100 training episodes)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def render_gif(env_id: str, policy_path: Path, gif_path: Path) -> None:
    """Hand the checkpoint to the `renderers` command line in a subprocess, so that the agents never import
    the renderers (they sit side by side). Raises RuntimeError, saying how to render later, when the
    renderers are missing or fail."""
    if importlib.util.find_spec("renderers") is None or importlib.util.find_spec("renderers.__main__") is None:
        raise RuntimeError(
            "--gif needs the `renderers` package and its command line (python -m renderers); "
            "install MaxAtar with its [render] extra. The trained checkpoint is saved; render it later with: "
            f"python -m renderers gif --env {env_id} --policy {policy_path}"
        )
    command = [sys.executable, "-m", "renderers", "gif", "--env", env_id, "--policy", str(policy_path)]
    command += ["--out", str(gif_path)]
    result = subprocess.run(command)
    if result.returncode != 0:
        raise RuntimeError(f"rendering failed (exit status {result.returncode}): {' '.join(command)}")


def summary(
    plan: Plan,
    sched: Schedule,
    progress: Progress,
    final_eval: dict,
    compile_time: float,
    devices: list,
    checkpoint_path: Path,
) -> dict[str, Any]:
    """summary.json's content: what ran, how fast, on which devices, and the final evaluation."""
    return {
        "algorithm": plan.algorithm,
        "env_id": plan.config.env_id,
        "preset": plan.preset,
        "seeds": plan.seeds,
        "config": config_to_dict(plan.config),
        "frames_per_seed": sched.total_frames,
        "wall_time": progress.wall,
        "compile_time_last_session": compile_time,
        "frames_per_second_all_seeds": sched.total_frames * len(plan.seeds) / max(progress.wall, 1e-9),
        "final_eval_return_mean": final_eval["return_mean"],
        "final_eval_return_per_seed": final_eval["return_per_seed"],
        "final_eval_episodes": final_eval["episodes"],
        "num_devices": len(devices),
        "devices": [str(d) for d in devices],
        "process_count": jax.process_count(),
        "jax_version": jax.__version__,
        "checkpoint": str(checkpoint_path),
    }


def write_summary(plan: Plan, progress: Progress, summary: dict[str, Any], out: Path) -> None:
    """summary.json and the learning curve, then the closing line on stderr."""
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_learning_curve(out / "learning_curve.png", progress.rows, f"{plan.algorithm.upper()} on {plan.config.env_id}")
    per_seed = summary["final_eval_return_per_seed"]
    print(
        f"final evaluation (greedy / most probable action): mean return "
        f"{summary['final_eval_return_mean']:.2f} (per seed: {', '.join(f'{r:.1f}' for r in per_seed)}); "
        f"artefacts in {out}",
        file=sys.stderr,
    )
