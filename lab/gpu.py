"""Training time on one GPU (issue 37): the agents' own presets, all seeds in one vmapped program, wall-clock
from the first line of the run (compilation included) to MinAtar's published DQN return; and DQN with the
paper's protocol beside MinAtar's own PyTorch `examples/dqn.py` on the same card. Prints a line per run and
appends it to a JSON-lines file that `report` turns into the GPU section of docs/performance.md.

    python -m lab.gpu train --algo pqn --seeds 10 --cap 60 --out benchmarks/results/gpu_h200
    python -m lab.gpu dqn --seeds 10 --frames 30000 --reference MinAtar/examples/dqn.py --out DIR
    python -m lab.gpu report --out benchmarks/results/gpu_h200 --readme docs/performance.md
    python -m lab.gpu device --out DIR     # only the card's description (device.json), beside every figure

`train` runs each game's preset (MinAtar's setting, `--frames` per seed) one interval at a time and stops at
`--frames` or after `--cap` seconds of wall-clock; the time to the target is the first interval end at which
the seeds' mean return over their last 100 training episodes reaches MinAtar's published DQN return
(`maxatar_agents.experiments.published.MINATAR_DQN`). A run stopped by the cap reports its frames per second, from which
the whole run's time is extrapolated (marked as such). `dqn` times the `minatar` preset (one update per frame)
after its 5,000 random frames, on both implementations, and extrapolates each to 5M frames. `report` also sets
the runs of the GPU suite's `gymnax` stage (`agents_gymnax/`, the results pipeline's layout) beside the returns
published for gymnax's setting.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.agents_bench import keys_for
from benchmarks.pages import replace_section
from maxatar.registry import MINATAR_GAMES as GAMES
from maxatar_agents.algorithms.registry import agent_module
from maxatar_agents.experiments.published import MINATAR_DQN
from maxatar_agents.run.configs import default_preset, make_config
from maxatar_agents.run.runner import compiled

FULL_FRAMES = 5_000_000  # MinAtar's protocol: 5M frames per seed
TRAIN_FILE, DQN_FILE, DEVICE_FILE = "train.jsonl", "dqn.jsonl", "device.json"
GPU_START, GPU_END = "<!-- gpu:start -->", "<!-- gpu:end -->"


def device_description() -> dict:
    """The card, driver and library versions beside every figure."""
    info = {"jax": jax.__version__, "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()]}
    info["device_kind"] = jax.devices()[0].device_kind
    try:
        line = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
        info["nvidia_smi"] = line
    except (OSError, subprocess.SubprocessError):
        info["nvidia_smi"] = ""
    info["cpus"] = os.cpu_count()
    return info


def append(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


# --- train: time to the published return ---


def train_one(algo: str, game: str, preset: str | None, seeds: int, frames: int, cap: float) -> dict:
    """One game's run, timed from before compilation; see the module docstring."""
    module = agent_module(algo)
    env_id, target = f"maxatar/{game}", MINATAR_DQN[game]
    config = make_config(module, env_id, preset, total_steps=frames)
    start = time.time()
    parts = compiled(algo, config, seeds)
    state = jax.block_until_ready(parts["init"](keys_for(seeds)))
    compile_s = time.time() - start
    sched = parts["program"].schedule
    reached, reached_frames, done, returns = None, None, 0, np.full(seeds, np.nan)
    while done < sched.num_intervals and time.time() - start < cap:
        state, metrics = parts["interval"](state, jnp.int32(done * sched.steps_per_interval))
        returns = np.asarray(jax.device_get(metrics["recent_return"]))  # waits for the interval
        done += 1
        if reached is None and np.all(np.isfinite(returns)) and returns.mean() >= target:
            reached, reached_frames = time.time() - start, done * sched.frames_per_interval
    wall = time.time() - start
    trained = done * sched.frames_per_interval
    fps = trained * seeds / max(wall - compile_s, 1e-9)
    finished = done == sched.num_intervals
    return {
        "algo": algo,
        "preset": preset or default_preset(module, env_id),
        "game": game,
        "seeds": seeds,
        "target": target,
        "compile_s": round(compile_s, 2),
        "to_target_s": None if reached is None else round(reached, 2),
        "to_target_frames": reached_frames,
        "frames_per_seed": trained,
        "planned_frames_per_seed": sched.total_frames,
        "wall_s": round(wall, 2),
        "finished": finished,
        # The whole run's time: measured when it finished, else compile + the rest at the measured rate.
        "full_run_s": round(wall if finished else compile_s + sched.total_frames * seeds / fps, 2),
        "fps_all_seeds": round(fps),
        "last_mean_return": float(np.nanmean(returns)) if np.any(np.isfinite(returns)) else None,
        "seeds_at_target": int(np.sum(returns >= target)),
        "last_returns_per_seed": [round(float(r), 3) for r in returns],  # for IQM and intervals over seeds
        "num_envs": getattr(config, "num_envs", None),
    }


def cmd_train(args) -> None:
    games = GAMES if args.games == ["all"] else [g if g.endswith("-v0") else f"{g}-v0" for g in args.games]
    for game in games:
        row = train_one(args.algo, game, args.preset, args.seeds, args.frames, args.cap)
        row["device"] = jax.devices()[0].device_kind
        append(args.out / TRAIN_FILE, row)
        print(json.dumps(row), flush=True)


# --- dqn: the paper's protocol beside MinAtar's examples/dqn.py ---


def cmd_dqn(args) -> None:
    module = agent_module("dqn")
    game = args.game
    # An interval of 5,000 frames: the first holds the random frames, the others one update per frame.
    config = make_config(
        module, f"maxatar/{game}", "minatar", total_steps=args.frames, log_points=max(1, args.frames // 5000)
    )
    start = time.time()
    parts = compiled("dqn", config, args.seeds)
    state = jax.block_until_ready(parts["init"](keys_for(args.seeds)))
    compile_s = time.time() - start
    sched = parts["program"].schedule
    times = []
    for i in range(sched.num_intervals):
        t = time.time()
        state, metrics = parts["interval"](state, jnp.int32(i * sched.steps_per_interval))
        jax.block_until_ready(metrics)
        times.append((i, time.time() - t))
    # Intervals that start after the random frames: one update per frame from then on.
    starts = getattr(config, "learning_starts", 5000)
    learning = [s for i, s in times if i * sched.frames_per_interval >= starts]
    per_frame = sum(learning) / (len(learning) * sched.frames_per_interval)  # seconds per frame, all seeds at once
    row = {
        "impl": "maxatar_agents dqn (minatar preset)",
        "game": game,
        "seeds": args.seeds,
        "compile_s": round(compile_s, 2),
        "frames_timed_per_seed": len(learning) * sched.frames_per_interval,
        "s_per_frame": per_frame,
        "est_5m_s": round(compile_s + FULL_FRAMES * per_frame, 1),
        "device": jax.devices()[0].device_kind,
    }
    append(args.out / DQN_FILE, row)
    print(json.dumps(row), flush=True)
    if args.reference:
        import torch

        from benchmarks.agents_bench import run_reference

        # Its first 5,000 frames are random (no updates): time that part alone, then the whole, and take the
        # difference for the per-frame time with one update per frame (after a short run that loads CUDA).
        run_reference(args.reference, f"maxatar/{game}", 200)
        _, _, warm, _, _ = run_reference(args.reference, f"maxatar/{game}", 5000)
        _, frames, wall, _, _ = run_reference(args.reference, f"maxatar/{game}", 5000 + args.reference_frames)
        per_frame = (wall - warm) / args.reference_frames
        row = {
            "impl": f"MinAtar examples/dqn.py (torch {torch.__version__}, cuda {torch.cuda.is_available()})",
            "game": game,
            "seeds": 1,
            "compile_s": 0.0,
            "frames_timed_per_seed": args.reference_frames,
            "s_per_frame": per_frame,
            "est_5m_s": round(FULL_FRAMES * per_frame, 1),
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        }
        append(args.out / DQN_FILE, row)
        print(json.dumps(row), flush=True)


# --- report: the GPU section of the docs ---


def fmt_s(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def train_table(rows: list[dict]) -> list[str]:
    lines = [
        "| agent | game | seeds | compile | to the return, compile included | "
        "frames/s, all seeds | 5M frames | last-100 return (seeds past it) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        to_target = (
            "not reached"
            if r["to_target_s"] is None
            else f"{fmt_s(r['to_target_s'])} at {r['to_target_frames'] / 1e6:.2f}M frames"
        )
        full = fmt_s(r["full_run_s"]) + ("" if r["finished"] else " (extrapolated)")
        ret = "-"
        if r["last_mean_return"] is not None:
            ret = f"{r['last_mean_return']:.1f} ({r['seeds_at_target']}/{r['seeds']} >= {r['target']})"
        lines.append(
            f"| {r['algo']}-{r['preset']} | {r['game'].split('-')[0]} | {r['seeds']} | {fmt_s(r['compile_s'])} | "
            f"{to_target} | {r['fps_all_seeds'] / 1e6:.1f}M | {full} | {ret} |"
        )
    return lines


def dqn_table(rows: list[dict]) -> list[str]:
    lines = [
        "| implementation | game | seeds in the program | time per frame (all seeds) | 5M frames, extrapolated |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['impl']} | {r['game'].split('-')[0]} | {r['seeds']} | {r['s_per_frame'] * 1e6:,.0f} us | "
            f"{fmt_s(r['est_5m_s'])} |"
        )
    return lines


def logged_rows(out: Path, measured: set[tuple[str, int]]) -> list[dict]:
    """The medians a benchmarks.run process printed before it was stopped (by its stage's cap) without
    writing its tables: `  Env N=n: impl steps/s, ...` lines of the logs, for the (env, N) that no table has.
    They lack compile times."""
    import re

    rows, seen = [], set(measured)
    for log in sorted(out.glob("log_throughput_*.txt")):
        for env, n, rest in re.findall(r"^  (\S+-v\d) N=(\d+): (.*)$", log.read_text(), re.M):
            if (env, int(n)) in seen:
                continue
            seen.add((env, int(n)))
            parts = [part.rsplit(" ", 1) for part in rest.split(", ")]
            # MaxAtar's uniform-call mode draws no per-environment keys: its ceiling is the keyless one.
            ceiling = next((impl for impl, _ in parts if impl.startswith("ceiling[nokeys")), "")
            for impl, value in parts:
                family = next((f for f in ("maxatar", "ceiling") if impl.startswith(f)), "peer")
                rows.append(
                    {"env": env, "n": n, "impl": impl, "family": family, "steps_per_s": value, "compile_s": "",
                     "ceiling": ceiling if family == "maxatar" else ""}
                )  # fmt: skip
    return rows


def throughput_rows(out: Path) -> list[dict]:
    import csv

    rows = [r for f in sorted(out.glob("throughput_*/throughput.csv")) for r in csv.DictReader(f.open())]
    return rows + logged_rows(out, {(r["env"], int(r["n"])) for r in rows})


def throughput_table(rows: list[dict]) -> list[str]:
    """Per environment and N: MaxAtar beside gymnax and pgx (steps/s, compile s), the ratio to the best peer
    and MaxAtar's share of the do-nothing harness ceiling."""
    if not rows:
        return []
    lines = [
        "| env | N | MaxAtar steps/s (compile) | gymnax | pgx | x best peer | of the harness ceiling |",
        "|---|---|---|---|---|---|---|",
    ]
    order = {g: i for i, g in enumerate([*GAMES, "CartPole-v1"])}
    keys = sorted({(r["env"], int(r["n"])) for r in rows}, key=lambda k: (order.get(k[0], 99), k[1]))
    for env, n in keys:
        here = [r for r in rows if r["env"] == env and int(r["n"]) == n]
        ours = max((r for r in here if r["family"] == "maxatar"), key=lambda r: float(r["steps_per_s"]), default=None)
        if ours is None:
            continue
        peers = {r["impl"]: r for r in here if r["family"] == "peer"}
        ceiling = next((r for r in here if r["impl"] == ours["ceiling"]), None)

        def cell(r):
            if r is None:
                return "-"
            compile_s = f"{float(r['compile_s']):.1f} s" if r["compile_s"] else "log only"
            return f"{float(r['steps_per_s']) / 1e6:,.1f}M ({compile_s})"

        ratio = "no peer"
        if peers:
            x = float(ours["steps_per_s"]) / max(float(r["steps_per_s"]) for r in peers.values())
            ratio = f"{x:.1f}x"
        share = "-"
        if ceiling is not None:
            fraction = float(ours["steps_per_s"]) / float(ceiling["steps_per_s"])
            share = f"{fraction:.0%}"
        lines.append(
            f"| {env} | {n:,} | {cell(ours)} | {cell(peers.get('gymnax'))} | {cell(peers.get('pgx'))} | "
            f"{ratio} | {share} |"
        )
    return lines


def like_for_like_table(out: Path) -> list[str]:
    """PQN and PPO trained in gymnax's setting (the `gymnax` stage's runs, out/agents_gymnax/) beside the returns
    published for that setting: the results page's like-for-like table (`results.like_for_like_lines`)."""
    from lab.results import GYMNAX_PROTOCOL, like_for_like_lines

    runs = [(e.label, out / "agents_gymnax" / e.name) for e in GYMNAX_PROTOCOL]
    return like_for_like_lines([(label, run) for label, run in runs if any(run.glob("*/summary.json"))])


def demoted(path: Path) -> list[str]:
    """A benchmarks script's published file under a section heading of the page: its own title dropped, its
    other headings two levels down."""
    lines = path.read_text().strip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return ["", *[f"##{line}" if line.startswith("#") else line for line in lines]]


def continual_lines(out: Path) -> list[str]:
    """The continual stage's run (`continual_nap/`): frames, seeds, wall-clock and rate from its summary, or, for a
    run its cap stopped, from its checkpoint's record, extrapolated to the whole protocol."""
    run = out / "continual_nap"
    done = run / "summary.json"
    record = done if done.exists() else run / "checkpoint.json"
    if not record.exists():
        return []
    r = json.loads(record.read_text())
    frames = r.get("frames_per_seed", r.get("frames_done", 0))
    total = r["config"]["total_steps"]
    seeds = len(r["seeds"])
    wall = r["wall_time"]
    rate = seeds * frames / wall if wall else float("nan")
    whole = wall * total / frames if frames else float("nan")  # the protocol's time at this run's pace
    protocol = r["config"].get("protocol")
    line = (
        f"{r['algorithm']}, preset `{r['preset']}`, protocol `{protocol}`: {seeds} seeds in one program, "
        f"{frames:,} frames each of {total:,}, {fmt_s(wall)} wall-clock (compilation included), "
        f"{rate / 1e6:.2f}M frames/s over all seeds"
    )
    if done.exists():
        line += f", compile {fmt_s(r.get('compile_time_last_session'))}; final evaluation return "
        line += f"{r['final_eval_return_mean']:.2f}."
    else:
        line += (
            f"; stopped by the stage's cap: at this rate (compilation included) the whole protocol takes "
            f"{fmt_s(whole)}."
        )
    return ["", line]


def digests_line(out: Path) -> list[str]:
    """The digests stage: tests/test_versions.py on the card, its backend and pytest's verdict."""
    import re

    log = out / "log_digests.txt"
    if not log.exists():
        return []
    text = log.read_text()
    backend = re.search(r"^backend: (.*)$", text, re.M)
    verdicts = re.findall(r"^=*\s*(\d+ (?:passed|failed).*?)\s*=*$", text, re.M)
    verdict = verdicts[-1] if verdicts else "no verdict (see log_digests.txt)"
    where = backend.group(1) if backend else "an unknown backend"
    test = "`tests/test_versions.py` (every id's recorded digest, under every JAX setting)"
    return ["", f"{test} on {where}: {verdict}."]


def card(out: Path) -> str:
    device = json.loads((out / DEVICE_FILE).read_text()) if (out / DEVICE_FILE).exists() else {}
    smi = device.get("nvidia_smi", "").split(", ")
    name = smi[0] if smi and smi[0] else device.get("device_kind", "unknown card")
    driver = f", driver {smi[1]}" if len(smi) > 1 else ""
    return f"one {name}{driver}, jax {device.get('jax', '?')}"


def gpu_section(out: Path) -> str:
    """The docs page's GPU section: every table, from the files in `out`."""
    lines = [GPU_START, "", f"Measured on {card(out)}; the files, logs and commands are in `{out}/`."]
    throughput = throughput_table(throughput_rows(out))
    if throughput:
        lines += ["", "### Environment throughput beside gymnax and pgx", "", *throughput]
    train = read_rows(out / TRAIN_FILE)
    if train:
        lines += ["", "### Training time to MinAtar's published DQN return", "", *train_table(train)]
        for algo in sorted({r["algo"] for r in train}):
            done = [r for r in train if r["algo"] == algo and r["finished"]]
            if {r["game"] for r in done} >= set(GAMES):
                total = sum(r["wall_s"] for r in done)
                lines += ["", f"The whole {algo} table (5 games x 10 seeds x 5M frames, one game after another, "
                          f"compilation included): {fmt_s(total)}."]  # fmt: skip
    like = like_for_like_table(out)
    if like:
        lines += ["", "### In gymnax's setting, beside the published returns", "", *like]
    profiles = sorted(out.glob("profile_*.md"))
    if profiles:
        lines += ["", "### Where the step time goes", ""]
        lines += ["`benchmarks.profile_envs`: the step's phases, gymnax's step beside, the costliest kernels."]
        lines += [line for path in profiles for line in demoted(path)]
    continual = continual_lines(out)
    if continual:
        lines += ["", "### The continual protocol at scale", *continual]
    if (out / "datasets.md").exists():
        lines += ["", "### Offline datasets: collection and writing", *demoted(out / "datasets.md")]
    digests = digests_line(out)
    if digests:
        lines += ["", "### The version digests on the card", *digests]
    dqn = read_rows(out / DQN_FILE)
    if dqn:
        lines += ["", "### DQN with the paper's protocol (one update per frame), beside MinAtar's own", ""]
        lines += dqn_table(dqn)
    return "\n".join([*lines, "", GPU_END])


def front_door(out: Path) -> str:
    """The README's few lines: each game's PQN time to the published return, and the throughput ratio to the
    best peer at the largest N."""
    train = {r["game"]: r for r in read_rows(out / TRAIN_FILE) if r["algo"] == "pqn"}
    rows = throughput_rows(out)
    largest = max((int(r["n"]) for r in rows), default=0)
    lines = [
        GPU_START,
        f"| on {card(out).split(',')[0].removeprefix('one ')} | PQN, 10 seeds: to MinAtar's DQN return "
        f"(whole 5M-frame run), compile included | steps/s at N = {largest:,} | x best of gymnax and pgx |",
        "|---|---|---|---|",
    ]
    for game in [*GAMES, "CartPole-v1"]:
        r = train.get(game)
        time = "-" if r is None or r["to_target_s"] is None else f"{fmt_s(r['to_target_s'])} ({fmt_s(r['wall_s'])})"
        here = [x for x in rows if x["env"] == game and int(x["n"]) == largest]
        ours = max((float(x["steps_per_s"]) for x in here if x["family"] == "maxatar"), default=None)
        peers = [float(x["steps_per_s"]) for x in here if x["family"] == "peer"]
        speed = "not measured" if ours is None else f"{ours / 1e6:,.0f}M"
        ratio = "-" if ours is None or not peers else f"{ours / max(peers):.1f}x"
        lines.append(f"| {game.split('-')[0]} | {time} | {speed} | {ratio} |")
    return "\n".join([*lines, GPU_END])


def cmd_report(args) -> None:
    section = gpu_section(args.out)
    print(section)
    if args.readme:
        replace_section(args.readme, section, GPU_START, GPU_END)
    if args.front_door:
        replace_section(args.front_door, front_door(args.out), GPU_START, GPU_END)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="time to the published return, all seeds in one program")
    t.add_argument("--algo", default="pqn")
    t.add_argument("--preset", help="default: the agent's preset for the game")
    t.add_argument("--games", nargs="+", default=["all"])
    t.add_argument("--seeds", type=int, default=10)
    t.add_argument("--frames", type=int, default=FULL_FRAMES, help="frames per seed")
    t.add_argument("--cap", type=float, default=120.0, help="wall-clock seconds per game, compilation included")
    d = sub.add_parser("dqn", help="DQN's minatar preset beside MinAtar's examples/dqn.py")
    d.add_argument("--game", default="Breakout-v0")
    d.add_argument("--seeds", type=int, default=10)
    d.add_argument("--frames", type=int, default=30_000, help="frames per seed (the first 5,000 are random)")
    d.add_argument("--reference", help="path of MinAtar's examples/dqn.py")
    d.add_argument("--reference-frames", type=int, default=10_000, help="timed frames of the reference")
    v = sub.add_parser("device", help="only write the card's description (device.json) into --out")
    r = sub.add_parser("report", help="the GPU section of the docs from --out")
    r.add_argument("--readme", type=Path, help="rewrite this page's GPU section (between the gpu markers)")
    r.add_argument("--front-door", type=Path, help="rewrite this file's short GPU table (README.md)")
    for p in (t, d, v, r):
        p.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.command != "report":
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / DEVICE_FILE).write_text(json.dumps(device_description(), indent=1) + "\n")
    {"train": cmd_train, "dqn": cmd_dqn, "device": lambda args: None, "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    main()
