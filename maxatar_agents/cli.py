"""The command line shared by the agents: config from presets and overrides, a chunked run with a progress
bar and checkpoints, and the artefacts of a run (metrics.csv, summary.json, learning_curve.png, a GIF).

The run is cut into the program's logging intervals; each interval is one call of the same jitted function
for all seeds, so a run interrupted and resumed from its last checkpoint ends bit for bit where the
uninterrupted run ends (and where `make_train(config)(key)` ends).

`--devices all|N` splits the seed axis over a 1-D mesh of devices (`maxatar.sharding`, `shard_map`): every
device trains its share of the seeds with the program one device runs for that many seeds, so a run on D
devices equals, bit for bit, the one-device runs of each device's group of seeds (and the one-device run of
all seeds up to float rounding: XLA may round a batch of 2 seeds differently from a batch of 1). With
`--distributed`, `jax.distributed.initialize` joins several processes (hosts) first and the mesh spans the
devices of all of them; every process runs the same command and process 0 writes the artefacts.
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
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from maxatar import sharding
from maxatar_agents import checkpoint
from maxatar_agents.common import canonical_env_id, config_diff, config_from_dict, config_to_dict, parse_value

EXIT_INTERRUPTED = 130
SEED_AXIS = "seeds"


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
    parser.add_argument(
        "--devices",
        default="1",
        metavar="all|N",
        help="split the seeds over this many devices ('all', or N: the first N); --seeds must be a multiple "
        "(default 1)",
    )
    parser.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize first (one process per host, all running this command; "
        "arguments auto-detected on Cloud TPU, SLURM and Open MPI, else give the three below); "
        "needs --devices all",
    )
    parser.add_argument("--coordinator", metavar="HOST:PORT", help="with --distributed: process 0's address")
    parser.add_argument("--num-processes", type=int, help="with --distributed: how many processes")
    parser.add_argument("--process-id", type=int, help="with --distributed: this process's index, 0..n-1")
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
def compiled(algorithm: str, config: Any, num_seeds: int, mesh: Mesh | None = None) -> dict[str, Any]:
    """Jitted init and evaluate, and the interval compiled ahead of time (so its compile time is not
    counted as training time).

    With a mesh, each function is a `shard_map` over the seed axis: every device runs, on its own seeds,
    exactly the program a single device runs for that many seeds (all inputs and outputs lead with the seed
    axis; the interval's start step is replicated). So a run on D devices equals, bit for bit, the
    one-device runs of each device's group of seeds.
    """
    program = checkpoint.agent_module(algorithm).make_program(config)
    keys = jax.ShapeDtypeStruct((num_seeds, 2), jnp.uint32)
    t0 = jax.ShapeDtypeStruct((), jnp.int32)
    local = num_seeds if mesh is None else num_seeds // mesh.devices.size
    init = _over_seeds(program.init, local, (0,))
    interval = _over_seeds(program.interval, local, (0, None))
    evaluate = _over_seeds(program.evaluate, local, (0,))
    split: dict[str, Any] = {}
    both: dict[str, Any] = {}
    if mesh is not None:
        seeds, whole = NamedSharding(mesh, P(SEED_AXIS)), NamedSharding(mesh, P())
        # check_vma=False: the agents' programs are written for one device (e.g. a `lax.cond` whose branches
        # differ in what depends on the seed); every output is per-seed, so no cross-device check is needed.
        per_device = functools.partial(jax.shard_map, mesh=mesh, out_specs=P(SEED_AXIS), check_vma=False)
        init = per_device(init, in_specs=P(SEED_AXIS))
        interval = per_device(interval, in_specs=(P(SEED_AXIS), P()))
        evaluate = per_device(evaluate, in_specs=P(SEED_AXIS))
        split = {"in_shardings": seeds, "out_shardings": seeds}
        both = {"in_shardings": (seeds, whole), "out_shardings": seeds}
        keys = jax.ShapeDtypeStruct(keys.shape, keys.dtype, sharding=seeds)
        t0 = jax.ShapeDtypeStruct((), jnp.int32, sharding=whole)
    init = jax.jit(init, **split)
    template = jax.eval_shape(init, keys)
    return {
        "program": program,
        "template": template,
        "init": init,
        "interval": jax.jit(interval, **both).lower(template, t0).compile(),
        "evaluate": jax.jit(evaluate, **split),
    }


def parse_devices(text: str) -> str | int:
    """`--devices`: 'all' or a positive integer."""
    if text.strip().lower() == "all":
        return "all"
    try:
        count = int(text)
    except ValueError:
        raise UsageError(f"--devices must be 'all' or a positive integer, got {text!r}") from None
    if count < 1:
        raise UsageError(f"--devices must be 'all' or a positive integer, got {text!r}")
    return count


def start_distributed(args: argparse.Namespace) -> None:
    """`jax.distributed.initialize` for --distributed (before any JAX computation)."""
    given = {"--coordinator": args.coordinator, "--num-processes": args.num_processes}
    given["--process-id"] = args.process_id
    if not args.distributed:
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise UsageError(f"{', '.join(named)} only make sense with --distributed")
        return
    if args.devices.strip().lower() != "all":
        raise UsageError("--distributed splits the seeds over every process's devices: pass --devices all")
    try:
        jax.distributed.initialize(
            coordinator_address=args.coordinator, num_processes=args.num_processes, process_id=args.process_id
        )
    except (RuntimeError, ValueError) as error:
        raise UsageError(f"jax.distributed.initialize failed: {error}") from None


def make_seed_mesh(devices: str | int, num_seeds: int, distributed: bool) -> Mesh | None:
    """The mesh the seeds are split over, or None for a single device (the plain, unsharded program)."""
    try:
        mesh = sharding.make_mesh(devices, SEED_AXIS, local=not distributed)
    except ValueError as error:
        raise UsageError(f"--devices: {error}") from None
    if num_seeds % mesh.devices.size:
        count = mesh.devices.size
        raise UsageError(
            f"--seeds {num_seeds} cannot be split evenly over {count} devices: use a multiple of {count} "
            f"seeds or another --devices"
        )
    return None if mesh.devices.size == 1 and not distributed else mesh


def seed_keys(seeds: list[int], mesh: Mesh | None = None) -> jax.Array:
    """One PRNGKey per seed, split over the mesh's devices when there is one."""
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    return keys if mesh is None else sharding.shard_batch(keys, mesh)


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
    devices = parse_devices(args.devices)
    start_distributed(args)
    lead = jax.process_index() == 0  # the process that writes files and prints
    out = Path(args.out)
    plan = plan_run(algorithm, module, args, out)
    config, seeds = plan.config, plan.seeds
    mesh = make_seed_mesh(devices, len(seeds), args.distributed)
    used = [jax.local_devices()[0]] if mesh is None else list(mesh.devices.flat)

    def start_step(done: int) -> jax.Array:
        t0 = np.int32(done * sched.steps_per_interval)
        return jnp.int32(t0) if mesh is None else sharding.replicate(t0, mesh)

    compile_start = time.time()
    parts = compiled(algorithm, config, len(seeds)) if mesh is None else compiled(algorithm, config, len(seeds), mesh)
    sched = parts["program"].schedule
    if plan.meta is None:
        state, done, rows, wall = parts["init"](seed_keys(seeds, mesh)), 0, [], 0.0
    else:
        try:
            state = checkpoint.load_state(out, parts["template"], plan.meta)
        except checkpoint.CheckpointError as error:
            raise UsageError(str(error)) from None
        if mesh is not None:
            state = sharding.shard_batch(sharding.to_numpy(state), mesh)
        done, rows, wall = plan.meta["intervals_done"], plan.meta["rows"], plan.meta["wall_time"]
    compile_time = time.time() - compile_start
    every = args.checkpoint_every
    checkpoint_every = max(1, sched.num_intervals // 10 if every is None else round(every / sched.frames_per_interval))

    def save(state, done: int, final_eval: dict | None = None) -> Path:
        state = sharding.to_numpy(state)  # gathered from every device (and process) before writing
        path = out / checkpoint.STATE_FILE
        if not lead:
            return path
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
    if not args.no_progress and lead:
        from tqdm import tqdm

        name = f"{algorithm} {config.env_id.split('/')[-1]} x{len(seeds)}"
        initial = done * sched.frames_per_interval
        bar = tqdm(total=sched.total_frames, initial=initial, unit="frame", unit_scale=True, desc=name)
    saved_at = done
    try:
        while done < sched.num_intervals:
            start = time.time()
            next_state, metrics = parts["interval"](state, start_step(done))
            metrics = sharding.to_numpy(metrics)  # waits for the interval to finish
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

    returns = sharding.to_numpy(parts["evaluate"](state))  # (seeds, episodes)
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
        "num_devices": len(used),
        "devices": [str(d) for d in used],
        "process_count": jax.process_count(),
        "jax_version": jax.__version__,
        "checkpoint": str(policy_path),
    }
    if not lead:
        return summary
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
