"""Benchmarks of the baseline agents (a script that prints tables and writes results files, not a test).

  (a) `cartpole`: every agent's `cartpole` preset on several seeds (vmapped, one program): the final greedy
      / most-probable-action return of every seed (target: >= 475 for all) and the training wall time
      (compilation reported separately).
  (b) `throughput`: DQN's `minatar` preset on Breakout, frames per second of this implementation against
      MinAtar's own PyTorch examples/dqn.py on this machine, for the same number of frames (the reference
      is not shipped: pass its path with --reference, e.g. a checkout of github.com/kenjyoung/MinAtar).
  (c) `target`: an agent's default preset for each MinAtar game, in MinAtar's setting (sticky actions 0.1,
      difficulty ramping, full action set), one seed at a time, until the mean return of the last 100
      training episodes reaches MinAtar's published DQN return (or the time cap): frames per second and
      minutes to the target, beside the published anchors.
  (d) `report`: the README's agents section from the results files of (a) and (c).
  (e) `speed`: frames per second of variants of a preset, side by side (where the training time goes).
  (f) `command`: the whole command a user types, `python -m maxatar_agents.ALGO --env maxatar/GAME --seed S
      --stop-at-return TARGET --out DIR`, timed from start to exit with a warm compilation cache (one run of
      an unmeasured seed fills it first): start-up, compilation, training to MinAtar's DQN return, the final
      evaluation and the files.

    python -m benchmarks.agents_bench cartpole --seeds 4
    python -m benchmarks.agents_bench throughput --frames 20000 --reference MinAtar/examples/dqn.py
    python -m benchmarks.agents_bench target --algo pqn --seeds 1 --minutes 15
    python -m benchmarks.agents_bench report --readme docs/agents/index.md
    python -m benchmarks.agents_bench speed --game Seaquest-v0 --variant one-epoch num_epochs=1
    python -m benchmarks.agents_bench command --algo pqn --preset cpu --seeds 3

(a), (c) and (f) append their rows to CSV files in --out (default benchmarks/results/agents); (c) and (f) skip
the (agent, game, seed) runs already there, so an interrupted benchmark continues where it stopped. Times exclude
compilation, which is reported separately. Every figure depends on the machine and on what else runs on it;
the script records the CPU count and load average beside the numbers.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import options
from benchmarks.measure import Spread
from benchmarks.pages import replace_section
from maxatar.machine import machine_now as machine  # each results row's machine
from maxatar.registry import MINATAR_GAMES as GAMES
from maxatar_agents.algorithms import dqn
from maxatar_agents.algorithms.registry import AGENT_MODULES, agent_module
from maxatar_agents.experiments.published import MINATAR_DQN, PGX_PPO
from maxatar_agents.run.configs import default_preset, make_config, parse_assignments
from maxatar_agents.run.runner import compiled

RESULTS = Path("benchmarks/results/agents")
# MINATAR_DQN: MinAtar's published DQN returns, the targets of (c).
README_START, README_END = "<!-- agents:start -->", "<!-- agents:end -->"
# The deep agents, which all have `cartpole` and MinAtar presets (the tabular agent plays only Doors).
DEEP_AGENTS = ["dqn", "sac", "ppo", "pqn"]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def keys_for(seeds: int) -> jax.Array:
    return jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])


# --- (a) CartPole presets ---


def append_rows(path: Path, rows: list[dict]) -> None:
    """Add rows to a CSV file (header written with the first rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)


def read_rows(path: Path) -> list[dict]:
    """A CSV file's rows, as strings (none before the file exists)."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def bench_cartpole(args) -> None:
    print(f"(a) CartPole presets, {args.seeds} seeds vmapped; {machine()}")
    print(f"{'agent':6} {'frames/seed':>11} {'compile s':>9} {'train s':>8} {'cpu s':>7}  final return per seed")
    rows = []
    for name in args.algos:
        module = agent_module(name)
        config = make_config(module, "maxatar/CartPole-v1")
        train = jax.jit(jax.vmap(module.make_train(config)))
        keys = keys_for(args.seeds)
        start = time.time()
        executable = train.lower(keys).compile()
        compile_time = time.time() - start
        start, cpu = time.time(), cpu_seconds()
        result = jax.block_until_ready(executable(keys))
        wall, cpu = time.time() - start, cpu_seconds() - cpu
        per_seed = np.asarray(result.eval_returns).mean(axis=1)
        worst = np.asarray(result.eval_returns).min()
        verdict = "all >= 475" if np.all(per_seed >= 475) else "NOT all >= 475"
        frames = int(result.metrics["frames"][0, -1])
        returns = " ".join(f"{r:.1f}" for r in per_seed)
        timing = f"{name:6} {frames:>11} {compile_time:>9.1f} {wall:>8.1f} {cpu:>7.1f}"
        print(f"{timing}  {returns} (worst episode {worst:.0f}; {verdict})", flush=True)
        rows.append(
            {
                "algo": name,
                "preset": default_preset(module, "maxatar/CartPole-v1"),
                "seeds": args.seeds,
                "frames_per_seed": frames,
                "compile_s": round(compile_time, 2),
                "train_s": round(wall, 2),
                "returns": " ".join(f"{r:.2f}" for r in per_seed),
                "worst_episode": float(worst),
                "machine": machine(),
            }
        )
    append_rows(args.out / "cartpole.csv", rows)


# --- (b) throughput against the PyTorch reference ---


def bench_throughput(args) -> None:
    print(f"(b) DQN `minatar` preset on {args.env}, {args.frames} frames; {machine()}")
    config = dqn.Config(**{**dqn.PRESETS["minatar"], "env_id": args.env, "total_steps": args.frames})
    config = dataclasses.replace(config, log_points=max(1, args.frames // 5000))
    rows = []
    for seeds in args.seeds_list:
        start = time.time()
        parts = compiled("dqn", config, seeds)
        state = parts["init"](keys_for(seeds))
        jax.block_until_ready(state)
        compile_time = time.time() - start
        sched = parts["program"].schedule
        start, cpu = time.time(), cpu_seconds()
        for i in range(sched.num_intervals):
            state, metrics = parts["interval"](state, jnp.int32(i * sched.steps_per_interval))
        jax.block_until_ready(state)
        wall, cpu = time.time() - start, cpu_seconds() - cpu
        frames = sched.total_frames * seeds
        rows.append((f"maxatar_agents dqn, {seeds} seed(s)", frames, wall, cpu, compile_time))
    if args.reference:
        rows.append(run_reference(args.reference, args.env, args.frames))
    else:
        print("  (no --reference given: the PyTorch reference was not run)")
    print(f"{'implementation':40} {'frames':>8} {'wall s':>8} {'cpu s':>8} {'frames/s':>9} {'frames/cpu-s':>12}")
    for label, frames, wall, cpu, compile_time in rows:
        extra = f"  (+{compile_time:.1f} s compile)" if compile_time else ""
        print(f"{label:40} {frames:>8} {wall:>8.1f} {cpu:>8.1f} {frames / wall:>9.0f} {frames / cpu:>12.0f}{extra}")


def run_reference(path: str, env_id: str, frames: int):
    """Import MinAtar's examples/dqn.py from `path` and run its `dqn` for `frames` frames (its defaults
    otherwise: 5k random frames, then one update per frame)."""
    from minatar import Environment

    spec = importlib.util.spec_from_file_location("minatar_reference_dqn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.NUM_FRAMES = frames
    game = env_id.split("/")[-1].split("-")[0].lower().replace("spaceinvaders", "space_invaders")
    env = Environment(game, sticky_action_prob=0.1, difficulty_ramping=True)
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu = time.time(), cpu_seconds()
        module.dqn(env, False, False, os.path.join(tmp, "ref"))
        wall, cpu = time.time() - start, cpu_seconds() - cpu
    import torch

    return (f"MinAtar examples/dqn.py (torch {torch.__version__})", frames, wall, cpu, 0.0)


# --- (c) time to MinAtar's published DQN return ---


def run_columns(algo: str, preset: str, env_id: str, seed: int, target: float) -> dict:
    """The columns that name a run in target.csv and command.csv."""
    return {"algo": algo, "preset": preset, "env": env_id, "seed": seed, "target": target}


def finished_runs(path: Path) -> set[tuple]:
    """The (algo, preset, env, seed) of the runs already in `path`: what a resumed benchmark skips."""
    return {(r["algo"], r["preset"], r["env"], int(r["seed"])) for r in read_rows(path)}


def bench_target(args) -> None:
    """Each seed trains alone, one after the other (as one `--seeds 1` run each), so the wall time of every
    seed is what a user sees; the compiled program is shared by a game's seeds. The run is the preset's
    own (its frame budget sets the schedules), checked every `--check-every` frames and stopped at the target,
    at the preset's last frame, or after `--minutes` of training."""
    module = agent_module(args.algo)
    path = args.out / "target.csv"
    done = finished_runs(path)
    for game in args.games:
        env_id, target = f"maxatar/{game}", MINATAR_DQN[game]
        preset = args.preset or default_preset(module, env_id)
        config = make_config(module, env_id, preset)
        config = dataclasses.replace(config, log_points=max(1, config.total_steps // args.check_every))
        print(f"(c) {args.algo} `{preset}` on {env_id} until the last-100-episode return reaches {target}; {machine()}")
        start = time.time()
        parts = compiled(args.algo, config, 1)
        jax.block_until_ready(parts["init"](keys_for(1)))
        compile_time = time.time() - start
        sched = parts["program"].schedule
        for seed in range(args.seeds):
            if (args.algo, preset, env_id, seed) in done:
                print(f"  seed {seed}: already in {path}")
                continue
            state = jax.block_until_ready(parts["init"](jnp.stack([jax.random.PRNGKey(seed)])))
            elapsed, hit, recent, frames = 0.0, None, float("nan"), 0
            for i in range(sched.num_intervals):
                start = time.time()
                state, metrics = parts["interval"](state, jnp.int32(i * sched.steps_per_interval))
                recent = float(np.asarray(metrics["recent_return"])[0])  # waits for the interval
                elapsed += time.time() - start
                frames = (i + 1) * sched.frames_per_interval
                print(f"  seed {seed} {frames:>10} frames {elapsed:>7.1f} s  last-100 return {recent:.2f}", flush=True)
                if recent >= target:
                    hit = (frames, elapsed)
                    break
                if elapsed > args.minutes * 60:
                    break
            verdict = f"reached {target}" if hit else f"did not reach {target}"
            print(f"seed {seed}: {verdict} ({frames} frames, {elapsed / 60:.1f} min of training)")
            row = {
                **run_columns(args.algo, preset, env_id, seed, target),
                "reached": hit is not None,
                "frames": frames,
                "train_s": round(elapsed, 1),
                "frames_per_s": round(frames / max(elapsed, 1e-9)),
                "last100_return": round(recent, 2),
                "compile_s": round(compile_time, 1),
                "machine": machine(),
            }
            append_rows(path, [row])


def bench_speed(args) -> None:
    """Frames per second of one seed's training program for variants of a preset (`--variant NAME FIELD=VALUE
    ...`): the median of the intervals after the first, each interval `--interval` frames, all variants in one
    run so that their ratios share the machine's load."""
    module = agent_module(args.algo)
    env_id = f"maxatar/{args.game}"
    base = make_config(module, env_id, args.preset)
    print(f"(e) {args.algo} `{args.preset}` on {env_id}, frames/s of one seed; {machine()}")
    print("| variant | frames/s | ratio to the first |\n|---|---|---|")
    first = None
    for name, *assignments in [["preset"], *args.variant]:
        config = dataclasses.replace(base, **parse_assignments(assignments, module.Config, option="--variant"))
        config = dataclasses.replace(config, log_points=max(1, config.total_steps // args.interval))
        parts = compiled(args.algo, config, 1)
        state = jax.block_until_ready(parts["init"](keys_for(1)))
        sched = parts["program"].schedule
        times = []
        for i in range(args.intervals + 1):
            start = time.time()
            state, metrics = parts["interval"](state, jnp.int32(i * sched.steps_per_interval))
            jax.block_until_ready(metrics)
            times.append(time.time() - start)
        fps = sched.frames_per_interval / Spread.of(times[1:]).median
        first = first or fps
        print(f"| {name} {' '.join(assignments)} | {fps:,.0f} | {fps / first:.2f}x |", flush=True)


# --- (f) the whole command, to MinAtar's published DQN return ---


def user_command(algo: str, env_id: str, preset: str, target: float, out: str, seed: int) -> None:
    """One seed's training command, in a process of its own, until the target return (output kept back)."""
    argv = ["--env", env_id, "--preset", preset, "--seed", str(seed), "--stop-at-return", str(target)]
    argv += ["--no-progress", "--out", f"{out}/{seed}"]
    result = subprocess.run([sys.executable, "-m", f"maxatar_agents.{algo}", *argv], text=True, capture_output=True)
    if result.returncode:
        raise SystemExit(f"{algo} {' '.join(argv)} failed (exit {result.returncode}):\n{result.stderr[-2000:]}")


def bench_command(args) -> None:
    """Each seed's command runs alone, as a user runs it, in a fresh process; a first run of seed `--seeds`
    (not measured) fills the compilation cache that the measured ones read."""
    path = args.out / "command.csv"
    done = finished_runs(path)
    for game in args.games:
        env_id, target = f"maxatar/{game}", MINATAR_DQN[game]
        preset = args.preset or default_preset(agent_module(args.algo), env_id)
        print(f"(f) python -m maxatar_agents.{args.algo} --preset {preset} on {env_id} --stop-at-return {target}")
        with tempfile.TemporaryDirectory() as tmp:
            command = functools.partial(user_command, args.algo, env_id, preset, target, tmp)
            warm = False
            for seed in range(args.seeds):
                if (args.algo, preset, env_id, seed) in done:
                    print(f"  seed {seed}: already in {path}")
                    continue
                if not warm:
                    command(args.seeds)  # fills the compilation cache
                    warm = True
                start = time.time()
                command(seed)
                seconds = time.time() - start
                summary = json.loads(Path(tmp, str(seed), "summary.json").read_text())
                last = float(read_rows(Path(tmp, str(seed), "metrics.csv"))[-1]["recent_return"])
                row = {
                    **run_columns(args.algo, preset, env_id, seed, target),
                    "reached": last >= target,
                    "command_s": round(seconds, 1),
                    "train_s": round(summary["wall_time"], 1),
                    "compile_s": round(summary["compile_time_last_session"], 1),
                    "frames": summary["frames_per_seed"],
                    "last100_return": round(last, 2),
                    "machine": machine(),
                }
                print(
                    f"  seed {seed}: {row['command_s']} s in all, {row['train_s']} s of training, "
                    f"{row['frames']} frames, last-100 return {last:.2f}",
                    flush=True,
                )
                append_rows(path, [row])


# --- (d) the README section ---


def bench_report(args) -> None:
    """The agents section of the README from cartpole.csv and target.csv (the last row of each run)."""
    lines = [
        README_START,
        "",
        "<!-- Generated by `python -m benchmarks.agents_bench report --readme docs/agents/index.md` from "
        "benchmarks/results/agents/; edit benchmarks/agents_bench.py, not this. -->",
        "",
    ]
    cartpole = read_rows(args.out / "cartpole.csv")
    if cartpole:
        latest = {r["algo"]: r for r in cartpole}
        lines += [
            "CartPole-v1, each agent's `cartpole` preset (chosen by `--env maxatar/CartPole-v1`), seeds 0-3 trained "
            "together in one vmapped program; greedy / most-probable-action return of each seed over 100 episodes "
            "(`python -m benchmarks.agents_bench cartpole --seeds 4`):",
            "",
            "| agent | frames per seed | training s (4 seeds) | compile s | return per seed | >= 475 every seed |",
            "|---|---|---|---|---|---|",
        ]
        for algo in [a for a in AGENT_MODULES if a in latest]:
            r = latest[algo]
            returns = [float(x) for x in r["returns"].split()]
            ok = "yes" if min(returns) >= 475 else "**no**"
            shown = ", ".join(f"{x:.0f}" for x in returns)
            lines.append(
                f"| {algo.upper()} | {int(r['frames_per_seed']):,} | {float(r['train_s']):.1f} | "
                f"{float(r['compile_s']):.1f} | {shown} | {ok} |"
            )
        lines += ["", f"Machine: {latest[next(iter(latest))]['machine']}.", ""]
    target = read_rows(args.out / "target.csv")
    if target:
        lines += [
            "MinAtar games in MinAtar's setting (sticky actions 0.1, difficulty ramping, full action set), each "
            "agent's default preset (and PQN's `cpu` preset), one seed at a time on this CPU: seconds of training "
            "(compile excluded) until "
            "the mean return of the last 100 training episodes reaches MinAtar's published DQN return "
            "(`python -m benchmarks.agents_bench target --algo ALGO --seeds N --minutes CAP`; a miss shows where "
            "its run stopped: the cap or the preset's last frame). pgx's PPO figure is its return after 20M frames "
            "on one GPU (30-75 s; sticky 0.1, minimal action set), for scale.",
            "",
            "| game | agent (preset) | seeds reaching the target | seconds to target (median, slowest) | "
            "frames to target (median) | frames/s | target (MinAtar DQN, 5M frames) | pgx PPO, 20M frames |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for game in GAMES:
            runs = [(r["algo"], r["preset"]) for r in target if r["env"] == f"maxatar/{game}"]
            for algo, preset in sorted(set(runs), key=lambda run: (list(AGENT_MODULES).index(run[0]), run[1])):
                rows = [
                    r for r in target if r["env"] == f"maxatar/{game}" and (r["algo"], r["preset"]) == (algo, preset)
                ]
                hits = [r for r in rows if r["reached"] == "True"]
                seconds = [float(r["train_s"]) for r in hits]
                frames = [int(r["frames"]) for r in hits]
                fps = Spread.of(float(r["frames_per_s"]) for r in rows).median
                timing = f"{Spread.of(seconds).median:.0f}, {max(seconds):.0f}" if hits else "not reached"
                if len(hits) < len(rows):
                    best = max(float(r["last100_return"]) for r in rows if r["reached"] != "True")
                    longest = max(float(r["train_s"]) for r in rows)
                    timing += f" (misses ended at {best:.1f} after {longest:.0f} s)"
                to_target = f"{Spread.of(frames).median / 1e6:.2f}M" if hits else "-"
                lines.append(
                    f"| {game.split('-')[0]} | {algo.upper()} (`{preset}`) | {len(hits)}/{len(rows)} | "
                    f"{timing} | {to_target} | {fps:,.0f} | {MINATAR_DQN[game]} | {PGX_PPO[game]} |"
                )
        lines += ["", f"Machine: {target[-1]['machine']}.", ""]
    command = read_rows(args.out / "command.csv")
    if command:
        lines += [
            "The whole command, as a user types it with a warm compilation cache (start-up, compilation, training "
            "until every seed's last-100 training return reaches MinAtar's DQN return, the final evaluation of 100 "
            "episodes and the files; `python -m maxatar_agents.pqn --env maxatar/GAME --preset cpu --seed S "
            "--stop-at-return TARGET --out DIR`, each seed alone; `python -m benchmarks.agents_bench command --algo "
            "pqn --preset cpu --seeds 3`):",
            "",
            "| game | agent (preset) | seeds reaching the target | seconds, whole command (per seed) | "
            "of which training | frames (median) |",
            "|---|---|---|---|---|---|",
        ]
        for game in GAMES:
            runs = sorted({(r["algo"], r["preset"]) for r in command if r["env"] == f"maxatar/{game}"})
            for algo, preset in runs:
                rows = [
                    r for r in command if r["env"] == f"maxatar/{game}" and (r["algo"], r["preset"]) == (algo, preset)
                ]
                hits = sum(r["reached"] == "True" for r in rows)
                whole = ", ".join(f"{float(r['command_s']):.0f}" for r in rows)
                train = ", ".join(f"{float(r['train_s']):.0f}" for r in rows)
                frames = Spread.of(int(r["frames"]) for r in rows).median
                lines.append(
                    f"| {game.split('-')[0]} | {algo.upper()} (`{preset}`) | {hits}/{len(rows)} | {whole} | {train} | "
                    f"{frames / 1e6:.2f}M |"
                )
        lines += ["", f"Machine: {command[-1]['machine']}.", ""]
    lines.append(README_END)
    section = "\n".join(lines)
    print(section)
    if args.readme:
        replace_section(args.readme, section, README_START, README_END)


def main(argv=None) -> None:
    parser = options.parser(__doc__)
    sub = parser.add_subparsers(dest="part", required=True)
    a = sub.add_parser("cartpole", help="(a) the CartPole presets reach 475 on every seed")
    a.add_argument("--seeds", type=int, default=4)
    a.add_argument("--algos", nargs="+", default=DEEP_AGENTS, choices=DEEP_AGENTS)
    b = sub.add_parser("throughput", help="(b) DQN minatar preset frames/s against MinAtar's PyTorch DQN")
    b.add_argument("--env", default="maxatar/Breakout-v0")
    b.add_argument("--frames", type=int, default=20_000)
    b.add_argument("--seeds-list", type=int, nargs="+", default=[1, 4], help="seed counts to time (vmapped)")
    b.add_argument("--reference", help="path of MinAtar's examples/dqn.py")
    c = sub.add_parser("target", help="(c) time for an agent to reach MinAtar's DQN return on each game")
    c.add_argument("--algo", default="pqn", choices=DEEP_AGENTS)
    c.add_argument("--preset", help="default: the agent's preset for each game")
    c.add_argument("--games", nargs="+", default=GAMES, choices=GAMES)
    c.add_argument("--minutes", type=float, default=15.0, help="training time cap per seed")
    c.add_argument("--check-every", type=int, default=250_000, help="frames between checks of the return")
    c.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1, each trained alone in turn")
    e = sub.add_parser("speed", help="(e) frames/s of variants of a preset (where the training time goes)")
    e.add_argument("--algo", default="pqn", choices=DEEP_AGENTS)
    e.add_argument("--game", default="Seaquest-v0", choices=GAMES)
    e.add_argument("--preset", default="minatar")
    e.add_argument(
        "--variant",
        nargs="+",
        action="append",
        default=[],
        metavar="NAME FIELD=VALUE",
        help="a named variant: fields of the preset changed, e.g. --variant one-epoch num_epochs=1",
    )
    e.add_argument("--interval", type=int, default=131_072, help="frames per timed interval")
    e.add_argument("--intervals", type=int, default=2, help="timed intervals after the first")
    f = sub.add_parser("command", help="(f) the whole command, to MinAtar's DQN return, with a warm cache")
    f.add_argument("--algo", default="pqn", choices=DEEP_AGENTS)
    f.add_argument("--preset", help="default: the agent's preset for each game")
    f.add_argument("--games", nargs="+", default=GAMES, choices=GAMES)
    f.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, each run alone in turn")
    d = sub.add_parser("report", help="(d) the README section from the results files")
    d.add_argument("--readme", type=Path, help="rewrite this file's agents section (between the markers)")
    for p in (a, c, d, f):
        p.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    args = parser.parse_args(argv)
    parts = {"cartpole": bench_cartpole, "throughput": bench_throughput, "target": bench_target, "speed": bench_speed}
    {**parts, "command": bench_command, "report": bench_report}[args.part](args)


if __name__ == "__main__":
    main()
