"""What a run leaves on disk besides its checkpoint: metrics.csv (one row per seed and logged point),
summary.json, learning_curve.png and, on request, a GIF of the trained policy; for a sweep (`grid`), those
of each combination of values in its own directory, and sweep.csv, sweep.json and sweep.png comparing them.
Plain functions of plain data (rows, dicts), whatever the algorithm, so the next agents write the same
files."""

from __future__ import annotations

import csv
import dataclasses
import errno
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np

from maxatar import files, sharding
from maxatar_agents.algorithms import grid
from maxatar_agents.algorithms.program import Schedule
from maxatar_agents.run import checkpoint
from maxatar_agents.run.configs import config_to_dict
from maxatar_agents.run.runner import Plan, Progress


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    """metrics.csv, its columns those of the first row (the runner writes every row with the same keys)."""
    if not rows:
        return
    if path.exists() and not (path.is_file() or path.is_dir()):  # a FIFO would block the open (a directory fails it)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
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
    if plan.dataset is not None:
        meta["dataset"] = plan.dataset
    if plan.sweep:
        meta["sweep"] = {name: list(values) for name, values in plan.sweep.items()}
    path = checkpoint.save(out, state, meta)
    try:
        write_metrics(out / "metrics.csv", progress.rows)
    except OSError as error:  # the rows are in the checkpoint just saved: a resume writes the file again
        raise checkpoint.CheckpointError(
            f"could not write {out / 'metrics.csv'}: {error.strerror or error}; the checkpoint of interval "
            f"{progress.done} of {sched.num_intervals} in {out} is intact"
        ) from None
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
    sampled_eval: dict | None = None,
) -> dict[str, Any]:
    """summary.json's content: what ran, how fast, on which devices, and the final evaluation (for a policy
    that is a distribution, also with actions drawn from it: `sampled_eval`)."""
    sampled = (
        {}
        if sampled_eval is None
        else {
            "final_eval_sampled_return_mean": sampled_eval["return_mean"],
            "final_eval_sampled_return_per_seed": sampled_eval["return_per_seed"],
        }
    )
    frames = progress.done * sched.frames_per_interval  # the run's frames, fewer if --stop-at-return ended it
    return {
        "algorithm": plan.algorithm,
        "env_id": plan.config.env_id,
        "preset": plan.preset,
        "seeds": plan.seeds,
        "config": config_to_dict(plan.config),
        "frames_per_seed": frames,
        "wall_time": progress.wall,
        "compile_time_last_session": compile_time,
        "frames_per_second_all_seeds": frames * len(plan.seeds) / max(progress.wall, 1e-9),
        "final_eval_return_mean": final_eval["return_mean"],
        "final_eval_return_per_seed": final_eval["return_per_seed"],
        "final_eval_episodes": final_eval["episodes"],
        **sampled,
        "num_devices": len(devices),
        "devices": [str(d) for d in devices],
        "process_count": jax.process_count(),
        "jax_version": jax.__version__,
        "checkpoint": str(checkpoint_path),
        **({} if plan.dataset is None else {"dataset": plan.dataset}),
    }


def write_summary(plan: Plan, progress: Progress, summary: dict[str, Any], out: Path) -> None:
    """summary.json and the learning curve, then the closing line on stderr."""
    files.write_json(out / "summary.json", summary)
    plot_learning_curve(out / "learning_curve.png", progress.rows, f"{plan.algorithm.upper()} on {plan.config.env_id}")
    per_seed = summary["final_eval_return_per_seed"]
    sampled = ""
    if "final_eval_sampled_return_mean" in summary:
        sampled = f"; actions drawn from the policy: {summary['final_eval_sampled_return_mean']:.2f}"
    print(
        f"final evaluation (greedy / most probable action): mean return "
        f"{summary['final_eval_return_mean']:.2f} (per seed: {', '.join(f'{r:.1f}' for r in per_seed)}){sampled}; "
        f"artefacts in {out}",
        file=sys.stderr,
    )


# --- sweeps ---


def write_sweep(
    plan: Plan,
    sched: Schedule,
    progress: Progress,
    returns: np.ndarray,
    compile_time: float,
    devices: list,
    out: Path,
) -> dict[str, Any]:
    """A finished sweep's files: for each combination of values, OUT/<field=value>/ with what an ordinary
    run of that config writes (a checkpoint of its seeds, whose policy `policies.load_policy` loads,
    metrics.csv, summary.json, learning_curve.png), then OUT/sweep.csv, sweep.json and sweep.png comparing
    the combinations. `progress.state` holds every run (numpy, combination-major) and `returns` their
    (runs, episodes) final evaluation. Returns sweep.json's content."""
    combos = grid.combinations(plan.sweep)
    num_seeds = len(plan.seeds)
    frames = progress.done * sched.frames_per_interval  # the run's frames, fewer if --stop-at-return ended it
    results = []
    for j, combo in enumerate(combos):
        runs = slice(j * num_seeds, (j + 1) * num_seeds)
        directory = out / grid.label(combo)
        directory.mkdir(exist_ok=True)
        own_plan = Plan(plan.algorithm, dataclasses.replace(plan.config, **combo), plan.seeds, plan.preset, None)
        rows = [
            {k: v for k, v in row.items() if k not in combo}
            for row in progress.rows
            if all(row[name] == value for name, value in combo.items())
        ]
        own = Progress(jax.tree.map(lambda x, runs=runs: x[runs], progress.state), progress.done, rows, progress.wall)
        evaluation = final_eval(returns[runs])
        path = save_progress(own_plan, sched, own, directory, evaluation)
        own_summary = summary(own_plan, sched, own, evaluation, compile_time, devices, path)
        own_summary["part_of_sweep"] = str(out)  # its wall time is the whole sweep's
        files.write_json(directory / "summary.json", own_summary)
        title = f"{plan.algorithm.upper()} on {plan.config.env_id}, {grid.label(combo)}"
        plot_learning_curve(directory / "learning_curve.png", rows, title)
        last = [r["recent_return"] for r in rows if r["frames"] == frames]
        results.append(
            {
                **combo,
                "final_eval_return_mean": evaluation["return_mean"],
                "final_eval_return_std": float(np.std(evaluation["return_per_seed"])),
                "final_eval_return_per_seed": evaluation["return_per_seed"],
                "final_recent_return_mean": float(np.nanmean(last)) if np.any(np.isfinite(last)) else float("nan"),
                "dir": grid.label(combo),
            }
        )
    content = {
        "algorithm": plan.algorithm,
        "env_id": plan.config.env_id,
        "preset": plan.preset,
        "seeds": plan.seeds,
        "sweep": {name: list(values) for name, values in plan.sweep.items()},
        "config": config_to_dict(plan.config),  # the swept fields' values here are unused
        "frames_per_seed": frames,
        "runs": len(combos) * num_seeds,
        "wall_time": progress.wall,
        "compile_time_last_session": compile_time,
        "frames_per_second_all_runs": frames * len(combos) * num_seeds / max(progress.wall, 1e-9),
        "best": max(results, key=lambda r: r["final_eval_return_mean"])["dir"],
        "results": results,
        "num_devices": len(devices),
        "jax_version": jax.__version__,
    }
    files.write_json(out / "sweep.json", content)
    write_metrics(
        out / "sweep.csv", [{k: v for k, v in r.items() if k != "final_eval_return_per_seed"} for r in results]
    )
    plot_sweep(out / "sweep.png", plan, progress.rows, results)
    for r in results:
        print(f"{r['dir']}: final evaluation mean return {r['final_eval_return_mean']:.2f}", file=sys.stderr)
    print(
        f"best: {content['best']}; artefacts in {out} (sweep.csv, sweep.png, one directory per value)", file=sys.stderr
    )
    return content


def plot_sweep(path: Path, plan: Plan, rows: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    """One learning curve per combination of values (mean recent return over seeds, min-max band), with
    its final evaluation in the legend, so the values compare at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    colours = plt.get_cmap("viridis" if len(results) > 10 else "tab10")
    for j, result in enumerate(results):
        combo = {name: result[name] for name in plan.sweep}
        own = [r for r in rows if all(r[name] == value for name, value in combo.items())]
        seeds, frames = sorted({r["seed"] for r in own}), sorted({r["frames"] for r in own})
        table = np.full((len(seeds), len(frames)), np.nan)
        for r in own:
            table[seeds.index(r["seed"]), frames.index(r["frames"])] = r["recent_return"]
        colour = colours(j / max(len(results) - 1, 1) if len(results) > 10 else j)
        x = np.asarray(frames)
        with np.errstate(all="ignore"):
            if len(seeds) > 1:
                ax.fill_between(x, np.nanmin(table, 0), np.nanmax(table, 0), color=colour, alpha=0.15)
            name = f"{result['dir']} (eval {result['final_eval_return_mean']:.1f})"
            ax.plot(x, np.nanmean(table, 0), color=colour, linewidth=2, label=name)
    ax.set_xlabel("frames per seed")
    ax.set_ylabel("return (mean of last 100 training episodes)")
    seeds = len(plan.seeds)
    ax.set_title(f"{plan.algorithm.upper()} on {plan.config.env_id}: mean and min-max of {seeds} seed(s)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
