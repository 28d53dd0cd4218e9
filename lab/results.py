"""The results table: every agent on every MinAtar game in MinAtar's setting, trained through the agents' own
command line, with the learning curves, the pretrained policies and the GIFs of trained play made from it; and
the like-for-like table: PQN and PPO in gymnax's setting at the budget of the papers that use it, beside their
published returns (`--setting gymnax`).

MinAtar's setting is the environments' default: sticky actions 0.1, difficulty ramping, the full action set.
The protocol (`PROTOCOL`): each agent with its own preset for the games, 10 seeds (PQN, PPO) or 5 (DQN `fast`,
SAC), trained in parts of a few seeds vmapped together in one program, at most MinAtar's 5M frames per seed;
DQN's `minatar` preset (MinAtar's `examples/dqn.py`, the paper's protocol) on two games besides, its 3 seeds
trained one process each (see `Entry.seed_parts`).

    python -m lab.results run            # every run of the protocol in turn (hours on a CPU)
    python -m lab.results run --resume   # after any interruption: continue where it stopped
    python -m lab.results run --resume --jobs 2   # two processes side by side (see train_parts)
    python -m lab.results report --readme docs/results.md   # the table and one PNG per game
    python -m lab.results export         # the shipped policies and docs/trained/*.gif again
    python -m lab.results run --setting gymnax --resume             # the like-for-like runs
    python -m lab.results report --setting gymnax --readme docs/results.md   # and their table

`run` trains one part at a time with `python -m maxatar_agents.<algo> ... --seed FIRST --seeds N` (a process of
its own, its progress bar shown), checkpointing often, so that Ctrl-C, a crash or the end of a session loses at
most a few percent of one run: `run --resume` continues its checkpoint bit for bit and skips the runs already
finished. With `--jobs N` it trains N parts (a run's seeds that share a process) at once instead, each in a
process of its own, and prints each one's latest progress line every minute (see `train_parts`).
The checkpoints (with replay buffers, hundreds of MB) stay in `runs/minatar_results/` (not committed); each
finished run's metrics.csv and summary.json, and the machine's load while it ran, go to
`benchmarks/results/agents/minatar/<algo>-<preset>/<game>/` (committed), from which `report` rebuilds every
number and picture. After each finished run the best seed of each game's strongest agent is exported as the
package's pretrained policy (`maxatar_agents/pretrained/<game>/`, loaded with
`maxatar_agents.load_policy("pretrained:maxatar/Breakout-v0")`) and rendered to `docs/trained/<game>.gif`.

Wall-clock times are those of this machine and of whatever else ran on it: each run records the load average
at its start and end beside them.

gymnax's setting (`GYMNAX_PROTOCOL`): no sticky actions, the minimal action set and gymnax's time limits
(`maxatar.settings`), PQN and PPO with their `minatar` presets at the 10M frames of gymnax-blines, PureJaxRL and
purejaxql, on the games a source publishes a return for; its files go to `runs/gymnax_results/` and
`benchmarks/results/agents/gymnax/`, and no policy is shipped from it.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.pages import replace_section
from lab.published import GYMNAX_SETTING_PUBLISHED, MINATAR_AC, PGX_PPO_5M
from maxatar.machine import machine_now as machine
from maxatar.registry import MINATAR_GAMES as GAMES
from maxatar_agents.experiments.published import MINATAR_DQN, PGX_PPO
from renderers.cli import bounded

SETTINGS = ("minatar", "gymnax")  # the environment settings a protocol is trained in (`protocol`)
RUNS = Path("runs/minatar_results")  # MinAtar's setting's; gymnax's are runs/gymnax_results (`runs_dir`)
RESULTS = Path("benchmarks/results/agents/minatar")  # and benchmarks/results/agents/gymnax (`results_dir`)
PRETRAINED = Path("maxatar_agents/pretrained")
FIGURES = Path("docs/results")
PAGE = Path("docs/results.md")  # the page whose results section `report --readme PAGE` rewrites
FRONT_DOOR = Path("README.md")  # whose short table `report --front-door FRONT_DOOR` rewrites
SHORT_START, SHORT_END = "<!-- results-short:start -->", "<!-- results-short:end -->"
SHORT_AGENTS = ("pqn-minatar", "ppo-minatar")  # the README's columns: the strongest agents of the table
PAGE_AGENTS = (*SHORT_AGENTS, "sac-fast", "dqn-fast")  # the results page's first table: those on every game
GIFS = Path("docs/trained")
SEEDS = 3
MINATAR_FRAMES = 5_000_000
README_START, README_END = "<!-- results:start -->", "<!-- results:end -->"
GYMNAX_START, GYMNAX_END = "<!-- results-gymnax:start -->", "<!-- results-gymnax:end -->"
GYMNAX_FRAMES = 10_000_000  # gymnax-blines', PureJaxRL's and purejaxql's budget (published.GYMNAX_SETTING_BUDGETS)
GIF_STEPS = 400
CHECK_EPISODES = 10  # episodes of the fixed evaluation a shipped policy records and its test replays


@dataclasses.dataclass(frozen=True)
class Entry:
    """One agent with one preset on some games, in an environment setting (`maxatar.settings`: "minatar", the
    environments' default, or "gymnax"); `frames` caps the preset's frames per seed (None: its own).

    Its seeds train in *parts*, `seed_parts` seeds each, one process per part, in order: (3, 7) trains seeds 0-2
    in one vmapped program, then seeds 3-9 in another. With several parts each has its own checkpoint and result
    files under `seeds-<first seed>/`, the run's are merged from them once all are done, and the table shows the
    seeds of the finished parts meanwhile. Parts keep each process short enough to finish in one sitting, and
    let a run grow by more seeds without training its first ones again."""

    algo: str
    preset: str
    games: tuple[str, ...]
    frames: int | None
    seed_parts: tuple[int, ...] = (SEEDS,)
    setting: str = "minatar"

    @property
    def name(self) -> str:
        return f"{self.algo}-{self.preset}"

    @property
    def label(self) -> str:
        """How the tables name it: PQN (`minatar`)."""
        return f"{self.algo.upper()} (`{self.preset}`)"

    @property
    def seeds(self) -> int:
        return sum(self.seed_parts)

    def parts(self) -> list[tuple[int, int]]:
        """(first seed, number of seeds) of each part, in the order they train."""
        firsts = np.cumsum((0, *self.seed_parts[:-1]))
        return [(int(first), count) for first, count in zip(firsts, self.seed_parts, strict=True)]

    def part_name(self, first: int) -> str:
        """The subdirectory of a part's checkpoint and result files ('' when the seeds train together)."""
        return "" if len(self.seed_parts) == 1 else f"seeds-{first}"

    def part_dir(self, game: str, first: int) -> Path:
        """Where a part's files go below --runs (its checkpoint) and below --results (its result files)."""
        return Path(self.name, game, self.part_name(first))


# In the order they run: the fastest agents first, so the table and the shipped policies fill in early. Seeds: 10
# for PQN and PPO (minutes on a GPU), 5 for the slower DQN `fast` and SAC, so that the bootstrap intervals of the
# aggregate rest on more than 3 runs a game; each trained 3 first (the table's first protocol), then the rest.
PROTOCOL = (
    Entry("pqn", "minatar", GAMES, MINATAR_FRAMES, seed_parts=(3, 7)),
    Entry("ppo", "minatar", GAMES, MINATAR_FRAMES, seed_parts=(3, 7)),
    Entry("dqn", "fast", GAMES, None, seed_parts=(3, 2)),
    Entry("sac", "fast", GAMES, None, seed_parts=(3, 2)),
    # One update of 32 samples per frame for 5M frames: 3 seeds together take about 3.1 hours on a 2-core CPU
    # with AVX-512 (1349 seed-frames/s with 4 seeds vmapped against 1444 frames/s with 1, README "DQN `minatar`
    # preset against MinAtar's PyTorch") and about 7 on one with AVX2 only (610 frames/s with 1), longer than the
    # sessions this table is trained in (their end stops the job); one seed per process takes 1 to 2.3 hours,
    # and a finished part's result files are committed. `--runs` outside the work tree keeps a part's checkpoint
    # for a later session on the same machine.
    Entry("dqn", "minatar", ("Breakout-v0", "SpaceInvaders-v0"), None, seed_parts=(1, 1, 1)),
)


# The like-for-like runs: the two agents the gymnax-based papers train, on the games with a published return.
GYMNAX_GAMES = tuple(g for g in GAMES if any(g in s["returns"] for s in GYMNAX_SETTING_PUBLISHED.values()))
GYMNAX_PROTOCOL = (
    Entry("pqn", "minatar", GYMNAX_GAMES, GYMNAX_FRAMES, setting="gymnax"),
    Entry("ppo", "minatar", GYMNAX_GAMES, GYMNAX_FRAMES, setting="gymnax"),
)


def protocol(setting: str = "minatar") -> tuple[Entry, ...]:
    return PROTOCOL if setting == "minatar" else GYMNAX_PROTOCOL


def planned_runs(setting: str = "minatar") -> list[tuple[Entry, str]]:
    return [(entry, game) for entry in protocol(setting) for game in entry.games]


def runs_dir(setting: str) -> Path:
    """Where a setting's checkpoints go by default (not committed)."""
    return Path(f"runs/{setting}_results")


def results_dir(setting: str) -> Path:
    """Where a setting's result files go by default (committed)."""
    return RESULTS.parent / setting


def result_dir(results: Path, entry: Entry, game: str) -> Path:
    return results / entry.name / game


def finished(results: Path, entry: Entry, game: str) -> bool:
    return (result_dir(results, entry, game) / "summary.json").is_file()


# --- run ---


def part_finished(results: Path, entry: Entry, game: str, first: int) -> bool:
    return (results / entry.part_dir(game, first) / "summary.json").is_file()


def protocol_config(entry: Entry, game: str):
    """The config `run` trains `entry` on `game` with today: its preset, with the protocol's frames and setting."""
    from maxatar_agents.algorithms import registry
    from maxatar_agents.run import configs

    overrides = {} if entry.frames is None else {"total_steps": entry.frames}
    if entry.setting != "minatar":
        overrides["env_setting"] = entry.setting
    return configs.make_config(registry.agent_module(entry.algo), f"maxatar/{game}", entry.preset, **overrides)


def preset_changes(results: Path, entry: Entry, game: str) -> dict[str, tuple]:
    """Where the config a run's finished parts trained with (their summary.json) differs from `protocol_config`,
    as field -> (trained, today): a run trained before its preset changed, which the table must not pass off as
    today's preset, and whose missing seeds must not be trained with another config and merged with it."""
    from maxatar_agents.run.configs import config_to_dict

    today = protocol_config(entry, game)
    now = config_to_dict(today)
    defaults = config_to_dict(type(today)())  # what a field added since a run trained was then: its default
    changes: dict[str, tuple] = {}
    for first, _ in entry.parts():
        if part_finished(results, entry, game, first):
            recorded = json.loads((results / entry.part_dir(game, first) / "summary.json").read_text())["config"]
            for field in [*now, *(f for f in recorded if f not in now)]:
                then = recorded.get(field, defaults.get(field))
                if then != now.get(field, "(no such field)"):
                    changes[field] = (then, now.get(field, "(no such field)"))
    return changes


def changes_text(changes: dict[str, tuple]) -> str:
    """critic_target 'min' -> 'mean', ...: how a preset changed since a run trained."""
    return ", ".join(f"{field} {trained!r} -> {now!r}" for field, (trained, now) in changes.items())


def agent_argv(entry: Entry, game: str, out: Path, resume: bool, first: int = 0, count: int | None = None) -> list[str]:
    """The agent command line of one run, or of its part training `count` seeds from `first` (what a user would
    type after `python -m maxatar_agents.<algo>`)."""
    count = entry.seed_parts[0] if count is None else count
    argv = ["--env", f"maxatar/{game}", "--preset", entry.preset, "--seeds", str(count), "--out", str(out)]
    argv += ["--seed", str(first)]
    if entry.setting != "minatar":
        argv += ["--env-setting", entry.setting]
    if entry.frames is not None:
        argv += ["--total-steps", str(entry.frames)]
    frames = entry.frames or MINATAR_FRAMES
    argv += ["--checkpoint-every", str(frames // 50)]  # at most 2% of a run lost to a hard kill
    return argv + (["--resume"] if resume else [])


def trained(out: Path) -> bool:
    """Whether the part whose checkpoint is `out` has finished training (its results may not be copied yet)."""
    from maxatar_agents.run import checkpoint

    return checkpoint.exists(out) and checkpoint.read_meta(out).get("final_eval") is not None


def merge_parts(entry: Entry, dest: Path) -> None:
    """A run's result files from those of its parts, once all are done (see `combine_parts`)."""
    metrics, summary = combine_parts([dest / entry.part_name(first) for first, _ in entry.parts()])
    (dest / "metrics.csv").write_text(metrics)
    (dest / "summary.json").write_text(json.dumps(summary, indent=1))


def combine_parts(parts: list[Path]) -> tuple[str, dict]:
    """The metrics.csv text and summary of the seeds of finished parts taken together: every seed's metrics rows,
    the seeds' evaluations side by side, and the parts' wall-clock summed (the time the seeds took on this
    machine, one after the other)."""
    tables = [(part / "metrics.csv").read_text().splitlines() for part in parts]
    if len({table[0] for table in tables}) != 1:
        raise ValueError(f"the parts {[str(p) for p in parts]} log different metrics; they cannot be merged")
    metrics = "\n".join([tables[0][0], *(row for t in tables for row in t[1:])]) + "\n"
    summaries = [json.loads((part / "summary.json").read_text()) for part in parts]
    merged = {k: v for k, v in summaries[0].items() if k not in ("compile_time_last_session", "checkpoint")}
    merged["seeds"] = [seed for s in summaries for seed in s["seeds"]]
    for evaluation in ("final_eval", "final_eval_sampled"):  # the greedy and, where kept, the sampled returns
        if all(f"{evaluation}_return_per_seed" in s for s in summaries):
            merged[f"{evaluation}_return_per_seed"] = [r for s in summaries for r in s[f"{evaluation}_return_per_seed"]]
            merged[f"{evaluation}_return_mean"] = float(np.mean(merged[f"{evaluation}_return_per_seed"]))
    merged["wall_time"] = sum(s["wall_time"] for s in summaries)
    merged["frames_per_second_all_seeds"] = merged["frames_per_seed"] * len(merged["seeds"]) / merged["wall_time"]
    merged["machine_at_start"] = summaries[0]["machine_at_start"]
    merged["machine_at_end"] = summaries[-1]["machine_at_end"]
    keep = ("seeds", "wall_time", "final_eval_return_per_seed", "checkpoint", "machine_at_start", "machine_at_end")
    merged["parts"] = [
        {"dir": part.name, **{k: s.get(k) for k in keep}} for part, s in zip(parts, summaries, strict=True)
    ]
    return metrics, merged


def keep_results(
    runs: Path, results: Path, part: Path, load_before: str | None, load_after: str, default_runs: Path = RUNS
) -> None:
    """Copy a finished part's metrics.csv and summary.json (the small files) from `runs / part` to
    `results / part` and note the machine's load. The summary names the checkpoint where the default --runs
    (`default_runs`) keeps it, not where this machine happened to keep it."""
    run, dest = runs / part, results / part
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(run / "metrics.csv", dest / "metrics.csv")
    summary = json.loads((run / "summary.json").read_text())
    summary["machine_at_start"], summary["machine_at_end"] = load_before, load_after
    if summary.get("checkpoint"):
        summary["checkpoint"] = str(default_runs / part / Path(summary["checkpoint"]).name)
    (dest / "summary.json").write_text(json.dumps(summary, indent=1))


def run(args) -> None:
    """Every pending run of the protocol, one at a time (or `--jobs` at a time); Ctrl-C or SIGTERM leaves a
    checkpoint that --resume continues."""
    from maxatar_agents.run.interrupts import stops_like_ctrl_c

    with stops_like_ctrl_c():
        run_pending(args)


def run_pending(args) -> None:
    from maxatar_agents.run import checkpoint

    plan = [
        (e, g) for e, g in planned_runs(args.setting) if (not args.algos or e.algo in args.algos) and g in args.games
    ]
    started = [
        (e, g)
        for e, g in plan
        for first, _ in e.parts()
        if part_finished(args.results, e, g, first) or checkpoint.exists(args.runs / e.part_dir(g, first))
    ]
    if started and not args.resume:
        names = ", ".join(f"{e.name}/{g}" for e, g in started[:3])
        raise SystemExit(
            f"{len(started)} run(s) already started or finished ({names}...): pass --resume to continue them and "
            f"train the rest, or choose other --results and --runs directories"
        )
    pending = [(e, g) for e, g in plan if not finished(args.results, e, g)]
    changed = {(e, g): c for e, g in plan if (c := preset_changes(args.results, e, g))}
    mixed = [(e, g) for e, g in pending if (e, g) in changed]
    if mixed:  # its next parts would train today's preset and be merged with seeds of the earlier one
        raise SystemExit(
            "; ".join(f"{e.name} on {g} has seeds trained with an earlier preset ({changes_text(changed[e, g])})"
                      for e, g in mixed)
            + ": its missing seeds would train with another config. Move its results directory (below --results) "
            "and its checkpoints (below --runs) aside to train it again from its first seed"
        )  # fmt: skip
    print(f"{len(plan) - len(pending)} of {len(plan)} runs finished; {len(pending)} to go. {machine()}", flush=True)
    for (entry, game), change in changed.items():
        print(
            f"note: {entry.name} on {game} was trained with an earlier preset ({changes_text(change)}); move "
            f"{result_dir(args.results, entry, game)} aside to train it again",
            flush=True,
        )
    for entry, game in pending:
        if all(part_finished(args.results, entry, game, f) for f, _ in entry.parts()):
            finish_run(entry, game, args)  # its last part was kept, but the run not merged (interrupted just after)
    queue = [(e, g, f, n) for e, g in pending for f, n in e.parts() if not part_finished(args.results, e, g, f)]
    train_parts(queue, args)


# --- the processes ---

STATUS_EVERY = 60.0  # seconds between the status lines of the parts training side by side


def agent_command(algo: str) -> list[str]:
    """How a part's process starts: the agent's own command line, as a user runs it."""
    return [sys.executable, "-m", f"maxatar_agents.{algo}"]


def part_log(out: Path) -> Path:
    """The output (progress bar included) of the process training the part whose checkpoint is `out`."""
    return out.parent / f"{out.name or 'run'}.log"


def latest_line(log: Path) -> str:
    """The last line a part's process wrote (its progress bar redraws itself after carriage returns)."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 2048))
            tail = f.read().decode(errors="replace")
    except FileNotFoundError:
        return "starting"
    lines = [line.strip() for line in tail.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1] if lines else "starting"


def start_part(algo: str, argv: list[str], log: Path | None) -> subprocess.Popen:
    """The agent's process, in a session of its own so that a terminal's Ctrl-C reaches it once, from here
    (twice could interrupt it while it saves). Its output goes to `log`, or to this terminal when None."""
    if log is None:
        return subprocess.Popen([*agent_command(algo), *argv], start_new_session=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        return subprocess.Popen(
            [*agent_command(algo), *argv], stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )


def train_parts(queue: list[tuple[Entry, str, int, int]], args) -> None:
    """Train the parts in `queue` (entry, game, first seed, seeds) `args.jobs` at a time, each in a process of
    its own running the agent's command line. One at a time, its output (the progress bar) is this terminal's;
    side by side, each writes to its `part_log` and every STATUS_EVERY seconds the latest line of each is
    printed. A part's results are kept as soon as it is done, and its run merged and exported when it was the
    run's last part. Ctrl-C or SIGTERM stops every process as Ctrl-C stops one: each saves its checkpoint, and
    `run --resume` continues them all.

    On a 2-core CPU (AVX-512) two one-seed DQN `minatar` processes trained at about 840 and 780 frames/s side by
    side, against 1170 for one alone: one process's small updates leave much of the second core idle."""
    from maxatar_agents.run import checkpoint

    side_by_side = args.jobs > 1
    # process -> entry, game, first seed, the load at its start, its log (None: its output is this terminal's)
    running: dict[subprocess.Popen, tuple[Entry, str, int, str, Path | None]] = {}
    last_status = time.monotonic()
    try:
        while queue or running:
            while queue and len(running) < args.jobs:
                entry, game, first, count = queue.pop(0)
                out = args.runs / entry.part_dir(game, first)
                if trained(out):  # its results were not copied (interrupted just after): copy them now
                    keep_part(entry, game, first, None, args)
                    continue
                argv = agent_argv(entry, game, out, checkpoint.exists(out), first, count)
                argv += ["--no-progress"] if args.no_progress else []
                log = part_log(out) if side_by_side else None
                to_log = f" >> {log}" if log else ""
                print(f"\n$ python -m maxatar_agents.{entry.algo} {' '.join(argv)}{to_log}", flush=True)
                running[start_part(entry.algo, argv, log)] = (entry, game, first, machine(), log)
            time.sleep(0.2)
            for process, (entry, game, first, load_before, log) in list(running.items()):
                if process.poll() is None:
                    continue
                del running[process]
                if process.returncode != 0:
                    where = f"; its output is in {log}" if log else ""
                    raise SystemExit(
                        f"{entry.name} on {game} {entry.part_name(first)} stopped with exit code "
                        f"{process.returncode}{where}"
                    )
                keep_part(entry, game, first, load_before, args)
            if side_by_side and running and not args.no_progress and time.monotonic() - last_status >= STATUS_EVERY:
                last_status = time.monotonic()
                for entry, game, first, _, log in running.values():
                    print(f"  {entry.part_dir(game, first)}: {latest_line(log)}", flush=True)
    except BaseException as stop:  # Ctrl-C, SIGTERM or a failed part: the others stop as Ctrl-C stops them
        for process in running:
            process.send_signal(signal.SIGINT)
        for process in running:
            process.wait()  # each saves its checkpoint
        if isinstance(stop, KeyboardInterrupt):
            flags = (f" --setting {args.setting}" if args.setting != "minatar" else "") + (
                f" --jobs {args.jobs}" if side_by_side else ""
            )
            raise SystemExit(f"interrupted; continue with: python -m lab.results run --resume{flags}") from None
        raise


def keep_part(entry: Entry, game: str, first: int, load_before: str | None, args) -> None:
    """A finished part's result files kept; when it was its run's last part, the run finished."""
    part = entry.part_dir(game, first)
    keep_results(args.runs, args.results, part, load_before, machine(), runs_dir(entry.setting))
    print(f"{entry.name} on {game} {entry.part_name(first) or f'{entry.seeds} seeds'}: done", flush=True)
    if all(part_finished(args.results, entry, game, f) for f, _ in entry.parts()):
        finish_run(entry, game, args)


def finish_run(entry: Entry, game: str, args) -> None:
    """A run whose parts are all kept: its parts' results merged into the run's, and the shipped policies
    updated (a new run may be its game's strongest)."""
    if len(entry.parts()) > 1:
        merge_parts(entry, result_dir(args.results, entry, game))
    if not args.no_export and entry.setting == "minatar":  # the shipped policies play MinAtar's setting
        export(args)


# --- pretrained policies and GIFs ---


def summaries(results: Path) -> dict[tuple[str, str], dict]:
    """(entry name, game) -> summary.json of every finished run."""
    found = {}
    for entry, game in planned_runs():
        path = result_dir(results, entry, game) / "summary.json"
        if path.is_file():
            found[(entry.name, game)] = json.loads(path.read_text())
    return found


def strongest(results: Path) -> dict[str, tuple[str, dict]]:
    """Per game, the finished run with the highest mean greedy evaluation: (entry name, summary)."""
    best: dict[str, tuple[str, dict]] = {}
    for (name, game), summary in summaries(results).items():
        if game not in best or summary["final_eval_return_mean"] > best[game][1]["final_eval_return_mean"]:
            best[game] = (name, summary)
    return best


def export(args) -> None:
    """Ship the best seed of each game's strongest run as a pretrained policy, with its GIF, where it beats
    (or replaces a missing) shipped one; needs the run's checkpoint in --runs."""
    from maxatar_agents.run import checkpoint, policies

    for game, (name, summary) in sorted(strongest(args.results).items()):
        per_seed = summary["final_eval_return_per_seed"]
        best = int(np.argmax(per_seed))
        run_dir, seed_index = args.runs / name / game, best
        for part in summary.get("parts", ()):  # a run in parts: the best seed's part, and its place there
            if summary["seeds"][best] in part["seeds"]:
                run_dir, seed_index = run_dir / part["dir"], part["seeds"].index(summary["seeds"][best])
                break
        dest = args.pretrained / game
        if (dest / checkpoint.META_FILE).is_file():
            shipped = json.loads((dest / checkpoint.META_FILE).read_text())["record"]
            if shipped["run"] == f"{name}/{game}" and shipped["seed"] == summary["seeds"][best]:
                continue
            if shipped["greedy_return"] >= per_seed[best] and not args.force:
                continue
        if not checkpoint.exists(run_dir):
            print(f"{game}: the strongest run {name} is not in {run_dir}; the shipped policy stays", file=sys.stderr)
            continue
        record = {
            "run": f"{name}/{game}",
            "seed": summary["seeds"][best],
            "greedy_return": per_seed[best],
            "greedy_episodes": summary["final_eval_episodes"],
            "frames_per_seed": summary["frames_per_seed"],
            "setting": "MinAtar: sticky actions 0.1, difficulty ramping, full action set",
        }
        record["check"] = check_figure(run_dir, seed_index)
        policies.export_policy(run_dir, dest, seed_index, record)
        print(f"{game}: shipped {name} seed {record['seed']} (greedy return {record['greedy_return']:.2f})")
        render_gif(game, dest, args.gifs)


def check_figure(run_dir: Path, seed_index: int) -> dict:
    """The greedy return over the few fixed episodes that tests/test_pretrained.py plays, recorded at export
    so the test can tell a policy that still plays as trained from one that does not."""
    from maxatar_agents.run.policies import policy_returns

    returns = policy_returns(run_dir, CHECK_EPISODES, 0, seed_index)
    return {"episodes": CHECK_EPISODES, "key": 0, "return_mean": float(np.mean(returns))}


def render_gif(game: str, policy: Path, gifs: Path) -> None:
    """docs/trained/<game>.gif of the shipped policy (the renderers' command line, as a user runs it)."""
    gifs.mkdir(parents=True, exist_ok=True)
    out = gifs / f"{game.split('-')[0].lower()}.gif"
    command = [sys.executable, "-m", "renderers", "gif", "--env", f"maxatar/{game}", "--policy", str(policy)]
    command += ["--steps", str(GIF_STEPS), "--seed", "0", "--out", str(out)]
    subprocess.run(command, check=True)


# --- report ---


def curve_table(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """frames (F,), recent return (seeds, F) from metrics.csv rows."""
    seeds = sorted({int(r["seed"]) for r in rows})
    frames = sorted({int(r["frames"]) for r in rows})
    table = np.full((len(seeds), len(frames)), np.nan)
    for r in rows:
        table[seeds.index(int(r["seed"])), frames.index(int(r["frames"]))] = float(r["recent_return"])
    return np.asarray(frames), table


def plot_game(game: str, curves: dict[str, tuple[np.ndarray, np.ndarray]], path: Path) -> None:
    """Every agent's learning curve on one game (mean over seeds, min-max band), MinAtar's published final
    returns as dashed lines: MinAtar's figure, with this package's agents."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for i, (name, (frames, table)) in enumerate(curves.items()):
        colour = f"C{i}"
        x = frames / 1e6
        with warnings.catch_warnings():  # the first points have no finished episode yet (NaN for every seed)
            warnings.simplefilter("ignore", RuntimeWarning)
            ax.fill_between(x, np.nanmin(table, 0), np.nanmax(table, 0), color=colour, alpha=0.18, linewidth=0)
            ax.plot(
                x, np.nanmean(table, 0), color=colour, linewidth=1.8, label=f"{name} ({seeds_label(table.shape[0])})"
            )
    ax.axhline(MINATAR_DQN[game], color="black", linestyle="--", linewidth=1, label="MinAtar DQN, 5M frames")
    ax.axhline(MINATAR_AC[game], color="grey", linestyle=":", linewidth=1.2, label="MinAtar AC(0.8), 5M frames")
    ax.set_xlabel("frames per seed (millions)")
    ax.set_ylabel("mean return of the last 100 training episodes")
    ax.set_title(f"{game.split('-')[0]} (MinAtar setting: sticky 0.1, ramping, full action set)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def seeds_label(count: int) -> str:
    return "1 seed" if count == 1 else f"{count} seeds"


def spread(values: list[float]) -> str:
    """mean +- standard deviation over seeds (the range is in the curves' band); one seed's value alone."""
    v = np.asarray(values, float)
    if v.size == 1:
        return f"{v[0]:.1f} ({seeds_label(1)})"
    return f"{v.mean():.1f} ± {v.std():.1f}"


def machine_kind(summary: dict) -> str:
    """GPU or CPU: which the run (or part) whose summary this is trained on, from the machine line it recorded."""
    return "GPU" if "gpu backend" in (summary.get("machine_at_start") or "") else "CPU"


def wall_clock(summary: dict) -> str:
    """A row's training time, its parts' times summed per kind of machine: a part trained on a GPU is not
    added to CPU minutes as if it were one of them."""
    minutes: dict[str, float] = {}
    for part in summary.get("parts") or [summary]:
        kind = machine_kind(part)
        minutes[kind] = minutes.get(kind, 0.0) + part["wall_time"] / 60
    if list(minutes) == ["CPU"]:
        return f"{minutes['CPU']:.0f} min"
    return " + ".join(f"{m:.1f} min {kind}" if m < 10 else f"{m:.0f} min {kind}" for kind, m in minutes.items())


def read_metrics(path: Path) -> list[dict]:
    """The rows of a run's metrics.csv, as strings."""
    with open(path, newline="") as metrics:
        return list(csv.DictReader(metrics))


def run_results(results: Path, entry: Entry, game: str) -> tuple[dict, list[dict]] | None:
    """The summary and metrics rows of a finished run; of an unfinished run in parts, those of the seeds its
    finished parts trained (the table shows them as they come); None when there are none."""
    dest = result_dir(results, entry, game)
    if finished(results, entry, game):
        return json.loads((dest / "summary.json").read_text()), read_metrics(dest / "metrics.csv")
    done = [dest / entry.part_name(first) for first, _ in entry.parts() if part_finished(results, entry, game, first)]
    if len(entry.parts()) == 1 or not done:
        return None
    metrics, summary = combine_parts(done)
    return summary, list(csv.DictReader(metrics.splitlines()))


def aggregate_lines(args) -> list[str]:
    """The agents over the five games as the field compares them (`maxatar_agents.evaluate`: normalised scores,
    interquartile mean with stratified-bootstrap intervals, performance profiles), from the same results; the
    profile figure goes beside the learning curves."""
    from maxatar_agents.experiments import statistics as ev

    names = list(dict.fromkeys(entry.name for entry in PROTOCOL))
    runs = [str(args.results / name) for name in names if (args.results / name).is_dir()]
    if not runs:
        return []
    agents = ev.read_runs(runs, "recent_return", None)
    result = ev.evaluate(agents, ev.read_random_scores(), ev.BOOTSTRAP, ev.SEED)
    figure = args.figures / "performance_profiles.png"
    figure.parent.mkdir(parents=True, exist_ok=True)
    ev.plot_profiles(result, figure)
    lines = [
        "Over the games, normalised as (score - random) / (MinAtar DQN - random) (0: the uniform random policy, "
        "measured in the same setting; 1: MinAtar's published DQN), every seed of every game a run: the "
        "interquartile mean (IQM), mean and optimality gap with 95% stratified-bootstrap intervals, as Agarwal "
        "et al. (2021) report them (`python -m maxatar_agents.evaluate benchmarks/results/agents/minatar/*`).",
        "",
        "| agent (preset) | games | runs | IQM | mean | optimality gap |",
        "|---|---|---|---|---|---|",
    ]
    for name, agent in result["agents"].items():
        stats = " | ".join(ev.fmt(agent["aggregate"][m]) for m in ("iqm", "mean", "optimality_gap"))
        lines.append(f"| {name} | {len(agent['games'])} | {agent['runs']} | {stats} |")
    return [*lines, "", f"![performance profiles]({link(figure, args)})", ""]


def link(path: Path, args) -> str:
    """`path` as a Markdown image link from the page being rewritten (`--readme`), else as given."""
    page = getattr(args, "readme", None)
    return os.path.relpath(Path(path).resolve(), Path(page).resolve().parent) if page else str(path)


def report(args) -> None:
    """The results page's section of the setting (docs/results.md) and, for MinAtar's, the PNG per game, from the
    committed results files only: the answer first (one short table, the aggregate, the curves), then every run
    with its seeds, greedy return and wall-clock, the published returns, and how the runs were trained."""
    if args.setting == "gymnax":
        return gymnax_report(args)
    rows, pending, earlier, frames = [], [], {}, {}  # earlier: (agent, what changed) -> its games
    for game in GAMES:
        curves = {}
        for entry in PROTOCOL:
            if game not in entry.games:
                continue
            found = run_results(args.results, entry, game)
            seeds = 0 if found is None else len(found[0]["seeds"])
            if seeds < entry.seeds:
                done = f" ({seeds} of {entry.seeds} seeds done)" if seeds else ""
                pending.append(f"{entry.name} on {game}{done}")
            if found is None:
                continue
            summary, metrics = found
            count = str(seeds) if seeds == entry.seeds else f"{seeds} of {entry.seeds}"
            label = entry.label
            if change := preset_changes(args.results, entry, game):
                label += " \\*"
                earlier.setdefault((entry.name, changes_text(change)), []).append(game)
            curves[f"{entry.algo.upper()} {entry.preset}"] = curve_table(metrics)
            table = curves[f"{entry.algo.upper()} {entry.preset}"][1]
            frames[entry.name] = f"{summary['frames_per_seed'] / 1e6:.1f}M"
            greedy = spread(summary["final_eval_return_per_seed"])
            if summary.get("final_eval_sampled_return_per_seed"):  # a stochastic policy: its sampled play too
                greedy += f"; sampled {np.mean(summary['final_eval_sampled_return_per_seed']):.1f}"
            rows.append(
                f"| {game.split('-')[0]} | {label} | {count} | {summary['frames_per_seed'] / 1e6:.1f}M | "
                f"{spread(table[:, -1])} | {greedy} | {wall_clock(summary)} |"
            )
        if curves:
            plot_game(game, curves, args.figures / f"{game.split('-')[0].lower()}.png")
    shown = [e for name in PAGE_AGENTS for e in PROTOCOL if e.name == name and name in frames]
    budgets = ", ".join(f"{e.label} {e.seeds} x {frames[e.name]}" for e in shown)
    lines = [
        README_START,
        "",
        "<!-- Generated by `python -m lab.results report --readme docs/results.md` from "
        "benchmarks/results/agents/minatar/; edit lab/results.py, not this. -->",
        "",
        "Mean return of the last 100 training episodes at the end of training (MinAtar's measure), mean over "
        "seeds, in **MinAtar's setting** (sticky actions 0.1, difficulty ramping, full action set), beside "
        f"MinAtar's published DQN after 5M frames. Seeds x frames per seed: {budgets}.",
        "",
        *lead_table(args.results, PAGE_AGENTS),
        "",
        *aggregate_lines(args),
    ]
    figures = [args.figures / f"{game.split('-')[0].lower()}.png" for game in GAMES]
    drawn = [f"![{game}]({link(path, args)})" for game, path in zip(GAMES, figures, strict=True) if path.exists()]
    if drawn:
        lines += ["Learning curves (mean over seeds, min-max band):", "", " ".join(drawn), ""]
    lines += [
        "## Every run",
        "",
        "*Final*: the last-100 training return, as above; *greedy*: the final policy's (greedy, or most probable "
        "action) return over 100 evaluation episodes, and for SAC, whose policy is stochastic, also played as "
        "trained (*sampled*). Both mean ± standard deviation over seeds.",
        "",
        "| game | agent (preset) | seeds | frames per seed | final | greedy | wall-clock |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        *earlier_preset_lines(earlier),
    ]
    if pending:
        runs = f"{len(pending)} run" + ("s" if len(pending) > 1 else "")
        lines += [f"Not finished yet ({runs}; `run --resume` continues): {', '.join(pending)}.", ""]
    lines += [
        "Published returns in the same setting: MinAtar's DQN and AC(0.8) after 5M frames (30 seeds; AC read off "
        "its figure); pgx's PPO after 20M frames with the minimal action set, and at 5M as read off its learning "
        "curves (roughly: their axis is seconds).",
        "",
        "| game | MinAtar DQN | MinAtar AC(0.8) | pgx PPO, 20M | pgx PPO at 5M |",
        "|---|---|---|---|---|",
        *(
            f"| {g.split('-')[0]} | {MINATAR_DQN[g]} | {MINATAR_AC[g]} | {PGX_PPO[g]} | ~{PGX_PPO_5M[g]} |"
            for g in GAMES
        ),
        "",
        "### How the runs were trained",
        "",
        f"- Each agent with its own preset for the games, its seeds in parts of a few vmapped together in one "
        f"program ({SEEDS} first, then the rest), through `python -m lab.results run`: on 2-core CPUs, and PQN's "
        "and PPO's seeds 3-9, DQN `fast`'s seeds 3-4 and SAC's rows on one NVIDIA H200 through the same command "
        "(`lab/gpu_suite.sh`; logs in `benchmarks/results/gpu_h200/`).",
        "- DQN's `minatar` preset is MinAtar's `examples/dqn.py` (one update per frame); its seeds train one "
        "process each, and its wall-clock is their sum.",
        "- Wall-clock is training time with compilation excluded, summed per kind of machine, on machines shared "
        "with other jobs (the GPU parts ran up to 20 processes on one card), so it is an upper bound; the CPUs "
        "differ (AVX-512 trains these networks about twice as fast as AVX2 only). Each run's summary.json "
        "records its machine and load average.",
        "",
        README_END,
    ]
    section = "\n".join(lines)
    print(section)
    if args.readme:
        replace_section(args.readme, section, README_START, README_END)
    if getattr(args, "front_door", None):
        replace_section(args.front_door, short_table(args), SHORT_START, SHORT_END)


def last_returns(run: Path) -> np.ndarray:
    """Each seed's mean return over its last 100 training episodes at the end of a run (its metrics.csv)."""
    return curve_table(read_metrics(run / "metrics.csv"))[1][:, -1]


def earlier_preset_lines(earlier: dict[tuple[str, str], list[str]]) -> list[str]:
    """The footnote of the rows (or cells) marked `\\*`, from (agent, what changed) -> its games; none: none."""
    if not earlier:
        return []
    which = "; ".join(f"{name} on {', '.join(games)} ({change})" for (name, change), games in earlier.items())
    return [
        f"\\* Trained with an earlier version of its preset, so not what the preset trains today: {which}. "
        "`run` trains such a run again once its results directory is moved aside.",
        "",
    ]


def like_for_like_lines(runs: list[tuple[str, Path]], marked: frozenset = frozenset()) -> list[str]:
    """Runs in gymnax's setting, each (column label, directory of `<game>/` result files), beside the returns
    published for that setting (`published.GYMNAX_SETTING_PUBLISHED`), one column per source; a game is a row
    when a source or a run has it; the cells of `marked` (column label, game) carry `\\*`. No runs: no table."""
    if not runs:
        return []
    sources = list(GYMNAX_SETTING_PUBLISHED)
    lines = [
        "| game | " + " | ".join(label for label, _ in runs) + " | " + " | ".join(sources) + " |",
        "|---|" + "---|" * (len(runs) + len(sources)),
    ]
    for game in GAMES:
        published = [GYMNAX_SETTING_PUBLISHED[s]["returns"].get(game) for s in sources]
        done = [(label, directory / game / "summary.json") for label, directory in runs]
        if all(v is None for v in published) and not any(path.is_file() for _, path in done):
            continue
        cells = []
        for label, path in done:
            if path.is_file():
                summary = json.loads(path.read_text())
                v, greedy = last_returns(path.parent), summary.get("final_eval_return_per_seed")
                cell = f"{v.mean():.1f} ± {v.std():.1f}" + (f", greedy {np.mean(greedy):.1f}" if greedy else "")
                frames = f"{summary['frames_per_seed'] / 1e6:.3g}M frames"
                if (v.size, frames) != (SEEDS, f"{GYMNAX_FRAMES / 1e6:.3g}M frames"):  # else the sentence says them
                    cell += f" ({seeds_label(v.size)}, {frames})"
                cells.append(cell + (" \\*" if (label, game) in marked else ""))
            else:
                cells.append("-")
        cells += ["-" if v is None else str(v) for v in published]
        lines.append(f"| {game.split('-')[0]} | " + " | ".join(cells) + " |")
    notes = "; ".join(f"{name}: {entry['how']} ({entry['source']})" for name, entry in GYMNAX_SETTING_PUBLISHED.items())
    ours = "mean ± sd over seeds of the last-100 training return; greedy: the mean over seeds of the final policy's"
    ours += " (greedy, or most probable action) return over 100 evaluation episodes"
    return [*lines, "", f"Ours: {ours}. Published: {notes}."]


def gymnax_report(args) -> None:
    """The results page's gymnax-setting section: `GYMNAX_PROTOCOL`'s runs beside the published returns."""
    runs = [(e.label, args.results / e.name) for e in GYMNAX_PROTOCOL]
    pending = [f"{e.name} on {g}" for e, g in planned_runs("gymnax") if not finished(args.results, e, g)]
    earlier, marked = {}, set()  # as in `report`: runs trained with an earlier version of their preset
    for entry, game in planned_runs("gymnax"):
        if change := preset_changes(args.results, entry, game):
            earlier.setdefault((entry.name, changes_text(change)), []).append(game)
            marked.add((entry.label, game))
    lines = [
        GYMNAX_START,
        "",
        "<!-- Generated by `python -m lab.results report --setting gymnax --readme docs/results.md` from "
        "benchmarks/results/agents/gymnax/; edit lab/results.py, not this. -->",
        "",
        "PQN and PPO in **gymnax's setting** (no sticky actions, the minimal action set, gymnax's time limits: "
        '`maxatar.make(id, setting="gymnax")`), with the same presets as above, at the '
        f"{GYMNAX_FRAMES / 1e6:g}M frames per seed of gymnax-blines, PureJaxRL and purejaxql "
        f"({SEEDS} seeds in one vmapped program, `python -m lab.results run --setting gymnax`, on a 2-core "
        "CPU or on one NVIDIA H200 through `lab/gpu_suite.sh`'s `gymnax` stage), beside the "
        "returns published for that setting. No source publishes a Seaquest return. Each published figure is "
        "what its note below says it is (an evaluation of the source's trained agent), so our greedy evaluation "
        "is the nearer figure to set beside it; the last-100 training return (MinAtar's measure, as in the table "
        "above) includes the agent's exploration.",
        "",
        *like_for_like_lines(runs, frozenset(marked)),
        "",
        *earlier_preset_lines(earlier),
    ]
    if pending:
        lines += [f"Not trained yet ({len(pending)} of {len(planned_runs('gymnax'))} runs; `run --setting gymnax "
                  f"--resume` trains them, each twice the frames of its MinAtar-setting run above): "
                  f"{', '.join(pending)}.", ""]  # fmt: skip
    lines.append(GYMNAX_END)
    section = "\n".join(lines)
    print(section)
    if args.readme:
        replace_section(args.readme, section, GYMNAX_START, GYMNAX_END)


def lead_table(results: Path, names: tuple[str, ...]) -> list[str]:
    """The last-100 return (mean over seeds) of the agents `names` on every game beside MinAtar's published DQN,
    from the results files: the results page's first table and, for `SHORT_AGENTS`, the README's."""
    entries = [entry for name in names for entry in PROTOCOL if entry.name == name]
    head = " | ".join(entry.label for entry in entries)
    lines = [f"| game | {head} | MinAtar DQN |", "|---|" + "---|" * (len(entries) + 1)]
    for game in GAMES:
        cells = []
        for entry in entries:
            found = run_results(results, entry, game)
            cells.append("-" if found is None else f"{curve_table(found[1])[1][:, -1].mean():.1f}")
        lines.append(f"| {game.split('-')[0]} | " + " | ".join(cells) + f" | {MINATAR_DQN[game]} |")
    return lines


def short_table(args) -> str:
    """The README's short table: the strongest agents' lead table."""
    return "\n".join([SHORT_START, *lead_table(args.results, SHORT_AGENTS), SHORT_END])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train the protocol's runs in turn")
    r.add_argument("--resume", action="store_true", help="continue an interrupted run and train the rest")
    r.add_argument(
        "--algos", nargs="+", choices=sorted({e.algo for e in PROTOCOL + GYMNAX_PROTOCOL}), help="only these agents"
    )
    r.add_argument("--games", nargs="+", default=GAMES, choices=GAMES, help="only these games")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")
    r.add_argument("--no-export", action="store_true", help="do not update the shipped policies after each run")
    r.add_argument(
        "--jobs", type=bounded(int, 1), default=1, help="train this many parts (seeds in a process) side by side"
    )
    e = sub.add_parser("export", help="the shipped policies and their GIFs from the finished runs")
    e.add_argument("--force", action="store_true", help="replace a shipped policy even by a weaker one")
    p = sub.add_parser("report", help="the results page's section and the figures from the results files")
    p.add_argument(
        "--readme", type=Path, help="rewrite this page's results section (between the markers): docs/results.md"
    )
    p.add_argument("--front-door", type=Path, help="rewrite this file's short results table: README.md")
    p.add_argument("--figures", type=Path, default=FIGURES, help="where the PNG per game goes")
    for s in (r, e, p):
        s.add_argument("--results", type=Path, help="the committed results files (default: results_dir(setting))")
        s.add_argument("--runs", type=Path, help="the runs' checkpoints, not committed (default: runs_dir(setting))")
    for s in (r, p):
        s.add_argument(
            "--setting", choices=SETTINGS, default="minatar", help="MinAtar's (the table) or gymnax's (like-for-like)"
        )
    e.set_defaults(setting="minatar")
    for s in (r, e):
        s.add_argument("--pretrained", type=Path, default=PRETRAINED, help="where the shipped policies go")
        s.add_argument("--gifs", type=Path, default=GIFS, help="where the GIFs of trained play go")
    r.set_defaults(force=False)
    args = parser.parse_args()
    args.results = args.results or results_dir(args.setting)
    args.runs = args.runs or runs_dir(args.setting)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    start = time.time()
    {"run": run, "export": export, "report": report}[args.command](args)
    if args.command == "run":
        print(f"done in {(time.time() - start) / 60:.1f} min")


if __name__ == "__main__":
    main()
