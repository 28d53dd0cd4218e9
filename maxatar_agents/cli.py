"""The command line shared by the agents: config from presets and overrides, a chunked run with a progress
bar and checkpoints, and the artefacts of a run (metrics.csv, summary.json, learning_curve.png, a GIF).

The run is cut into the program's logging intervals; each interval is one call of the same jitted function
for all seeds, so a run interrupted and resumed from its last checkpoint ends bit for bit where the
uninterrupted run ends (and where `make_train(config)(key)` ends).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import importlib.util
import json
import math
import subprocess
import sys
import tempfile
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar_agents import checkpoint
from maxatar_agents.common import canonical_env_id, config_diff, config_from_dict, config_to_dict, parse_value

EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad command-line input; reported as `error: ...` with exit status 2."""


def build_parser(algorithm: str, module) -> argparse.ArgumentParser:
    fields = ", ".join(f.name for f in dataclasses.fields(module.Config))
    parser = argparse.ArgumentParser(
        prog=f"python -m maxatar_agents.{algorithm}",
        description=f"Train {algorithm.upper()} on a MaxAtar environment (all seeds in one jitted program).",
        epilog=f"config fields for --set: {fields}",
    )
    parser.add_argument("--env", help="environment id, e.g. maxatar/Breakout-v0 (default: the preset's)")
    parser.add_argument("--preset", help=f"one of: {', '.join(module.PRESETS)} (default: {module.DEFAULT_PRESET})")
    parser.add_argument("--seeds", type=int, help="number of seeds trained together (default 1)")
    parser.add_argument("--seed", type=int, help="first seed; seed i uses PRNGKey(seed + i) (default 0)")
    parser.add_argument("--total-steps", type=int, help="environment frames per seed")
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="override a config field (repeatable)"
    )
    parser.add_argument("--out", required=True, help="output directory (metrics, summary, plot, checkpoints)")
    parser.add_argument("--resume", action="store_true", help="continue the run whose checkpoint is in --out")
    parser.add_argument("--checkpoint-every", type=int, help="frames between checkpoints (default: a tenth of the run)")
    parser.add_argument("--gif", action="store_true", help="render the trained policy to OUT/policy.gif")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def make_config(args: argparse.Namespace, module, base: Any | None = None) -> Any:
    """Preset, then --env, --total-steps and --set on top. With `base` (a checkpoint's config) and no
    --preset, the overrides apply to `base`."""
    if base is None or args.preset is not None:
        preset = args.preset or module.DEFAULT_PRESET
        if preset not in module.PRESETS:
            raise UsageError(f"unknown preset {preset!r}; known presets: {', '.join(module.PRESETS)}")
        values = config_to_dict(module.Config(**module.PRESETS[preset]))
    else:
        values = config_to_dict(base)
    if args.env is not None:
        values["env_id"] = args.env
    if args.total_steps is not None:
        values["total_steps"] = args.total_steps
    hints = typing.get_type_hints(module.Config)
    for item in args.set:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in hints:
            raise UsageError(f"--set expects FIELD=VALUE with FIELD one of: {', '.join(hints)}; got {item!r}")
        try:
            values[name] = parse_value(text, hints[name])
        except ValueError as error:
            raise UsageError(f"--set {item}: {error}") from None
    try:
        values["env_id"] = canonical_env_id(values["env_id"])
    except (ValueError, TypeError) as error:
        raise UsageError(str(error)) from None
    try:
        return config_from_dict(module.Config, values)
    except (TypeError, ValueError) as error:
        raise UsageError(f"invalid config: {error}") from None


def prepare_out(out: Path) -> None:
    """Create --out and prove it is writable before any compilation starts."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as error:
        raise UsageError(f"cannot write to --out {str(out)!r}: {error.strerror or error}") from None


# --- compiled pieces, cached per (algorithm, config, number of seeds) so repeated runs share compilation ---


def _over_seeds(fn: Callable, num_seeds: int, in_axes: tuple) -> Callable:
    """vmap over seeds; a single seed runs unbatched (XLA's CPU code is faster without the size-1 batch
    axis) with the axis added back, so states and metrics always lead with the seed axis."""
    if num_seeds > 1:
        return jax.vmap(fn, in_axes=in_axes)

    def single(*args):
        args = [jax.tree.map(lambda x: x[0], a) if axis == 0 else a for a, axis in zip(args, in_axes, strict=True)]
        return jax.tree.map(lambda x: x[None], fn(*args))

    return single


@functools.lru_cache(maxsize=8)
def compiled(algorithm: str, config: Any, num_seeds: int) -> dict[str, Any]:
    """Jitted init and evaluate, and the interval compiled ahead of time (so its compile time is not
    counted as training time)."""
    program = checkpoint.agent_module(algorithm).make_program(config)
    init = jax.jit(_over_seeds(program.init, num_seeds, (0,)))
    template = jax.eval_shape(init, jnp.zeros((num_seeds, 2), jnp.uint32))
    interval = jax.jit(_over_seeds(program.interval, num_seeds, (0, None)))
    return {
        "program": program,
        "template": template,
        "init": init,
        "interval": interval.lower(template, jnp.int32(0)).compile(),
        "evaluate": jax.jit(_over_seeds(program.evaluate, num_seeds, (0,))),
    }


def seed_keys(seeds: list[int]) -> jax.Array:
    return jnp.stack([jax.random.PRNGKey(s) for s in seeds])


# --- artefacts ---


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot_learning_curve(path: Path, rows: list[dict[str, Any]], title: str) -> None:
    """Mean recent return over seeds against frames, with the min-max band and each seed faintly."""
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
    """Hand the checkpoint to the `renderers` CLI (imported only now, and only if present)."""
    if importlib.util.find_spec("renderers") is None or importlib.util.find_spec("renderers.__main__") is None:
        raise UsageError(
            "--gif needs the `renderers` package and its command line (python -m renderers); "
            "install MaxAtar with its [render] extra. The trained checkpoint is saved; render it later with: "
            f"python -m renderers gif --env {env_id} --policy {policy_path}"
        )
    command = [sys.executable, "-m", "renderers", "gif", "--env", env_id, "--policy", str(policy_path)]
    command += ["--out", str(gif_path)]
    result = subprocess.run(command)
    if result.returncode != 0:
        raise UsageError(f"rendering failed (exit status {result.returncode}): {' '.join(command)}")


# --- the run ---


@dataclasses.dataclass
class Plan:
    """What to run, checked before anything is compiled: the config, the seeds, and for --resume the
    checkpoint's metadata."""

    config: Any
    seeds: list[int]
    preset: str | None
    meta: dict[str, Any] | None


def plan_run(algorithm: str, module, args: argparse.Namespace, out: Path) -> Plan:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} exists and is not a directory")
    if not args.resume:
        config = make_config(args, module)
        num_seeds = 1 if args.seeds is None else args.seeds
        if num_seeds < 1:
            raise UsageError(f"--seeds must be >= 1, got {num_seeds}")
        first = 0 if args.seed is None else args.seed
        if checkpoint.exists(out):
            raise UsageError(f"{str(out)!r} already holds a run; pass --resume to continue it, or choose another --out")
        prepare_out(out)
        return Plan(config, list(range(first, first + num_seeds)), args.preset or module.DEFAULT_PRESET, None)

    if not checkpoint.exists(out):
        raise UsageError(f"--resume: no checkpoint in {str(out)!r}")
    try:
        meta = checkpoint.read_meta(out)
        saved_config = checkpoint.config_for(meta)
    except checkpoint.CheckpointError as error:
        raise UsageError(str(error)) from None
    if meta["algorithm"] != algorithm:
        raise UsageError(f"the checkpoint in {str(out)!r} is a {meta['algorithm']} run, not {algorithm}")
    config = make_config(args, module, base=saved_config)
    if config.env_id != meta["env_id"]:
        raise UsageError(f"the checkpoint in {str(out)!r} is for {meta['env_id']}, not {config.env_id}")
    diff = config_diff(saved_config, config)
    if diff:
        listed = "; ".join(f"{k}: checkpoint {a!r}, now {b!r}" for k, (a, b) in diff.items())
        raise UsageError(f"the checkpoint in {str(out)!r} was made with another config ({listed})")
    seeds = meta["seeds"]
    if args.seeds is not None and args.seeds != len(seeds):
        raise UsageError(f"the checkpoint has {len(seeds)} seeds, --seeds says {args.seeds}")
    if args.seed is not None and args.seed != seeds[0]:
        raise UsageError(f"the checkpoint starts at seed {seeds[0]}, --seed says {args.seed}")
    prepare_out(out)
    return Plan(config, seeds, args.preset or meta.get("preset"), meta)


def run(algorithm: str, argv: list[str] | None = None, on_interval: Callable[[int], None] | None = None) -> dict:
    """Parse `argv`, train, write the artefacts; returns the summary. `on_interval(intervals_done)` is called
    after each interval (tests use it to simulate Ctrl-C)."""
    module = checkpoint.agent_module(algorithm)
    args = build_parser(algorithm, module).parse_args(argv)
    out = Path(args.out)
    plan = plan_run(algorithm, module, args, out)
    config, seeds = plan.config, plan.seeds

    compile_start = time.time()
    parts = compiled(algorithm, config, len(seeds))
    sched = parts["program"].schedule
    if plan.meta is None:
        state, done, rows, wall = parts["init"](seed_keys(seeds)), 0, [], 0.0
    else:
        try:
            state = checkpoint.load_state(out, parts["template"], plan.meta)
        except checkpoint.CheckpointError as error:
            raise UsageError(str(error)) from None
        done, rows, wall = plan.meta["intervals_done"], plan.meta["rows"], plan.meta["wall_time"]
    compile_time = time.time() - compile_start
    every = args.checkpoint_every
    checkpoint_every = max(1, sched.num_intervals // 10 if every is None else round(every / sched.frames_per_interval))

    def save(state, done: int, final_eval: dict | None = None) -> Path:
        meta = {
            "algorithm": algorithm,
            "env_id": config.env_id,
            "config": config_to_dict(config),
            "preset": plan.preset,
            "seeds": seeds,
            "intervals_done": done,
            "num_intervals": sched.num_intervals,
            "frames_done": done * sched.frames_per_interval,
            "wall_time": wall,
            "rows": rows,
            "final_eval": final_eval,
        }
        path = checkpoint.save(out, state, meta)
        write_metrics(out / "metrics.csv", rows)
        return path

    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        name = f"{algorithm} {config.env_id.split('/')[-1]} x{len(seeds)}"
        initial = done * sched.frames_per_interval
        bar = tqdm(total=sched.total_frames, initial=initial, unit="frame", unit_scale=True, desc=name)
    saved_at = done
    try:
        while done < sched.num_intervals:
            start = time.time()
            next_state, metrics = parts["interval"](state, jnp.int32(done * sched.steps_per_interval))
            metrics = jax.device_get(metrics)  # waits for the interval to finish
            elapsed = time.time() - start
            state, done, wall = next_state, done + 1, wall + elapsed
            for i, seed in enumerate(seeds):
                rows.append({"seed": seed, **{k: _scalar(v[i]) for k, v in metrics.items()}, "wall_time": wall})
            if bar is not None:
                recent = metrics["recent_return"]
                recent = float(np.nanmean(recent)) if np.any(np.isfinite(recent)) else float("nan")
                fps = sched.frames_per_interval * len(seeds) / max(elapsed, 1e-9)
                bar.set_postfix_str(f"fps(all seeds)={fps:,.0f} recent return={recent:.2f}", refresh=False)
                bar.update(sched.frames_per_interval)
            if done % checkpoint_every == 0:
                save(state, done)
                saved_at = done
            if on_interval is not None:
                on_interval(done)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        if saved_at != done:
            save(state, done)  # the last completed interval: resuming from it stays exact
        print(
            f"\ninterrupted after {done * sched.frames_per_interval} frames per seed; checkpoint kept in {out}. "
            f"Continue with: python -m maxatar_agents.{algorithm} --out {out} --resume",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_INTERRUPTED) from None
    if bar is not None:
        bar.close()

    returns = np.asarray(jax.device_get(parts["evaluate"](state)))  # (seeds, episodes)
    per_seed = [float(r) for r in returns.mean(axis=1)]
    final_eval = {
        "episodes": int(returns.shape[1]),
        "return_per_seed": per_seed,
        "return_mean": float(np.mean(per_seed)),
        "return_min_episode": float(returns.min()),
    }
    policy_path = save(state, done, final_eval)
    summary = {
        "algorithm": algorithm,
        "env_id": config.env_id,
        "preset": plan.preset,
        "seeds": seeds,
        "config": config_to_dict(config),
        "frames_per_seed": sched.total_frames,
        "wall_time": wall,
        "compile_time_last_session": compile_time,
        "frames_per_second_all_seeds": sched.total_frames * len(seeds) / max(wall, 1e-9),
        "final_eval_return_mean": final_eval["return_mean"],
        "final_eval_return_per_seed": per_seed,
        "final_eval_episodes": final_eval["episodes"],
        "devices": [str(d) for d in jax.devices()],
        "jax_version": jax.__version__,
        "checkpoint": str(policy_path),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plot_learning_curve(out / "learning_curve.png", rows, f"{algorithm.upper()} on {config.env_id}")
    print(
        f"final {'greedy' if algorithm == 'dqn' else 'deterministic'} evaluation: mean return "
        f"{final_eval['return_mean']:.2f} (per seed: {', '.join(f'{r:.1f}' for r in per_seed)}); artefacts in {out}",
        file=sys.stderr,
    )
    if args.gif:
        render_gif(config.env_id, policy_path, out / "policy.gif")
    return summary


def _scalar(value: Any) -> float | int:
    value = np.asarray(value).item()
    if isinstance(value, float):
        return value if math.isfinite(value) else float("nan")
    return value


def main(algorithm: str, argv: list[str] | None = None) -> None:
    try:
        run(algorithm, argv)
    except UsageError as error:
        print(f"python -m maxatar_agents.{algorithm}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
