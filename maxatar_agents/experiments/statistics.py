"""Evaluation as the field does it (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical Precipice",
the `rliable` library): normalised scores of finished runs, their aggregates with stratified-bootstrap
confidence intervals, performance profiles and the probability of improvement of each agent over each other.

    python -m maxatar_agents.evaluate benchmarks/results/agents/minatar/* --out benchmarks/results/agents/evaluation
    python -m maxatar_agents.evaluate PQN=runs/pqn DQN=runs/dqn --score final_eval   # labels of your own
    python -m maxatar_agents.evaluate --measure-random --random-scores maxatar_agents/random_scores.json

Runs. Each RUN_DIR (or LABEL=RUN_DIR) is a finished run's directory (its `summary.json` and `metrics.csv`, as
the agents' command line leaves them) or any directory above some: the directories below it that hold a
`summary.json` are the runs (a run's own subdirectories, such as the `seeds-<n>/` parts of a run trained in
several processes, are not read again). Runs are grouped into agents by LABEL, or else by "<algorithm>-<preset>"
from summary.json; one agent's runs of one game are pooled (their seeds must differ).

Scores. One score per seed: by default MinAtar's measure, the mean return of the last 100 training episodes at
the end of the run (`recent_return` of the seed's last metrics.csv row, the "final" column of the README's
table); `--score final_eval` takes the final greedy evaluation's per-seed return from summary.json instead.
A score is normalised as (score - random) / (MinAtar DQN - random): 0 is the uniform random policy, 1 MinAtar's
published DQN after 5M frames (Young & Tian 2019; `published.MINATAR_DQN`). The random policy's
returns are measured here, in the same setting (`--measure-random`: MinAtar's sticky actions 0.1, difficulty
ramping, uniform actions over the full action set), and read from maxatar_agents/random_scores.json.

Statistics, as rliable defines them (`rliable.metrics`, `rliable.library`), on normalised scores:
* mean: the mean over games of each game's mean over seeds; median: the median over games of those means (on
  one game alone: the median over its seeds); IQM: the interquartile mean of all runs pooled (scipy's
  `trim_mean(x, 0.25)`: int(n / 4) runs cut at each end; with 3 seeds of one game that cuts none, the mean);
  optimality gap: the mean over all runs of max(1 - score, 0), how far short of MinAtar's DQN the runs fall.
* 95% confidence intervals by the stratified bootstrap: each game's seeds resampled with replacement,
  independently of the other games', percentile intervals.
* performance profile (score distribution): the fraction of runs whose normalised score exceeds tau, for each
  tau (averaged over games, so each game weighs the same), with bootstrap bands.
* probability of improvement P(X > Y): for each game the probability that a run of X scores above a run of Y
  (the Mann-Whitney U statistic over m * n; ties count half), averaged over the games both agents played; its
  interval resamples X's and Y's seeds independently within each game.

The bootstrap is numpy's (vectorised, a few lines below: `resample`), not rliable's: rliable 1.2.0 needs `arch`,
which brings statsmodels, patsy, formulaic and pandas for what is an index draw, and does not run on this
project's stack as pip resolves it (arch 8 no longer takes rliable's `random_state`; arch 7.2 fails to import
with pandas 3). The statistics follow rliable's definitions above: on the committed results rliable 1.2.0
(with arch 8, its `random_state` passed on as `seed`) gives the same point estimates, probabilities of
improvement and profiles, and intervals within the bootstrap's Monte Carlo noise (+-0.006). tests/test_evaluate.py
checks them on hand-computed samples and the bootstrap's coverage on synthetic data.

Output (to --out, by default `evaluation/` in the directory the runs share: RUN_DIR/evaluation for one run, never
the working directory unasked): evaluation.json (every number, with the runs read and the scores),
evaluation.md (the tables, printed too) and performance_profile.png.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import re
import sys
import zlib
from pathlib import Path

import numpy as np

from maxatar import files
from maxatar.machine import machine_now
from maxatar.registry import MINATAR_GAMES as GAMES
from maxatar_agents.experiments.published import MINATAR_DQN
from maxatar_agents.run import checkpoint
from maxatar_agents.run.configs import Parser

# --- configuration ---

RANDOM_SCORES = Path(__file__).parent.parent / "random_scores.json"  # shipped with the package, at its top
OUT = "evaluation"  # the directory --out names by default, in the runs' shared directory (`default_out`)
SCORES = ("recent_return", "final_eval")  # the last 100 training episodes (MinAtar's) or the final evaluation
CONFIDENCE = 0.95
BOOTSTRAP = 10_000  # bootstrap samples per interval (rliable: 50,000 for aggregates, 2,000 for profiles)
SEED = 0  # each interval's generator is seeded by (SEED, the names it is about): same inputs, same intervals
PROFILE_POINTS = 201  # taus of the performance profile
METRICS = ("mean", "median", "iqm", "optimality_gap")
# The random policy's measurement (--measure-random): episodes per game, played in parallel; an episode still
# running after MAX_STEPS counts with its return so far (random play ends far sooner; the count is recorded).
RANDOM_EPISODES = 1000
RANDOM_MAX_STEPS = 10_000
MINATAR_SETTING = "MinAtar's: sticky actions 0.1, difficulty ramping, full action set"
MAX_EPISODES = 65_536  # --measure-random's episodes per game, all in parallel
MAX_BOOTSTRAP = 1_000_000  # samples per interval: each holds a float per run, in several arrays at once


class EvaluateError(SystemExit):
    """A run, file or option evaluate cannot use; the command line reports it as one `error:` line (exit 2).
    (A SystemExit, as these errors were before they had a class: a caller that catches those still does.)"""


# --- reading finished runs ---


def run_dirs(root: Path) -> list[Path]:
    """The run directories at or below `root`: those holding a summary.json, not looking below one."""
    if (root / "summary.json").is_file():
        return [root]
    if not root.is_dir():
        raise EvaluateError(f"{root}: not a directory")
    return [run for sub in sorted(p for p in root.iterdir() if p.is_dir()) for run in run_dirs(sub)]


def seed_scores(run: Path, summary: dict, score: str) -> list[float]:
    """One score per seed of summary["seeds"], in that order."""
    seeds = [int(s) for s in summary["seeds"]]
    if score == "final_eval":
        if "final_eval_return_per_seed" not in summary:
            raise EvaluateError(f"{run}/summary.json has no final_eval_return_per_seed (use --score recent_return)")
        values = summary["final_eval_return_per_seed"]
        if not isinstance(values, list) or not all(is_number(v) for v in values):
            raise EvaluateError(f"{run}/summary.json: final_eval_return_per_seed {values!r} is not a list of numbers")
        values = [float(v) for v in values]
    else:
        last: dict[int, tuple[int, float]] = {}  # seed -> (frames, recent_return) of its latest row
        try:
            with io.TextIOWrapper(files.open_regular(run / "metrics.csv"), newline="") as f:
                for row in csv.DictReader(f):
                    seed, frames = int(row["seed"]), int(float(row["frames"]))
                    if seed not in last or frames >= last[seed][0]:
                        last[seed] = (frames, float(row["recent_return"]))
        except OSError as error:
            raise EvaluateError(f"{run}/metrics.csv: cannot read it: {error.strerror or error}") from None
        except (KeyError, ValueError, TypeError, csv.Error) as error:
            what = f"it has no {error} column" if isinstance(error, KeyError) else f"a row is not numbers ({error})"
            raise EvaluateError(f"{run}/metrics.csv: {what}") from None
        missing = [s for s in seeds if s not in last]
        if missing:
            raise EvaluateError(f"{run}/metrics.csv has no row for seed(s) {missing}")
        values = [last[s][1] for s in seeds]
    if len(values) != len(seeds) or not all(math.isfinite(v) for v in values):
        raise EvaluateError(f"{run}: {score} scores {values} for seeds {seeds}: not one finite score per seed")
    return values


def is_number(value) -> bool:
    """A JSON number: not text such as "1", not true or null."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def run_spec(spec: str) -> tuple[str | None, Path]:
    """A RUN_DIR or LABEL=RUN_DIR argument as (label or None, directory); a directory whose name holds `=` is
    a directory."""
    if not Path(spec).exists() and "=" in spec:
        label, _, root = spec.partition("=")
        return label, Path(root)
    return None, Path(spec)


def default_out(specs: list[str]) -> Path:
    """Where the output goes without --out: `OUT` in the deepest directory holding every run given (the run's own
    directory for one run), so that an evaluation stays with what it evaluates."""
    roots = [str(run_spec(spec)[1].absolute()) for spec in specs]
    return Path(os.path.commonpath(roots)) / OUT


def read_runs(specs: list[str], score: str, games: list[str] | None) -> dict[str, dict[str, dict]]:
    """{agent: {game: {"seeds": [...], "scores": [...], "runs": [dirs]}}} from RUN_DIR / LABEL=RUN_DIR."""
    agents: dict[str, dict[str, dict]] = {}
    seen: set[Path] = set()
    for spec in specs:
        label, root = run_spec(spec)
        for run in run_dirs(root):
            if run.resolve() in seen:
                continue
            seen.add(run.resolve())
            summary = read_summary(run)
            game = summary["env_id"].split("/")[-1]
            if games and game not in games:
                continue
            if game not in MINATAR_DQN:
                raise EvaluateError(f"{run}: {summary['env_id']} has no published MinAtar DQN score to normalise by")
            warn_setting(run, summary.get("config") or {})
            agent = label or f"{summary['algorithm']}-{summary.get('preset')}"
            entry = agents.setdefault(agent, {}).setdefault(game, {"seeds": [], "scores": [], "runs": []})
            clash = set(entry["seeds"]) & {int(s) for s in summary["seeds"]}
            if clash:
                raise EvaluateError(
                    f"{run}: seeds {sorted(clash)} of {agent} on {game} were read already from {entry['runs']}; "
                    "give the runs different labels (LABEL=RUN_DIR)"
                )
            entry["seeds"] += [int(s) for s in summary["seeds"]]
            entry["scores"] += seed_scores(run, summary, score)
            entry["runs"].append(str(run))
    if not agents:
        raise EvaluateError(f"no finished run (summary.json) of a MinAtar game under {' '.join(specs)}")
    order = {game: i for i, game in enumerate(GAMES)}
    return {a: dict(sorted(agents[a].items(), key=lambda kv: order[kv[0]])) for a in sorted(agents)}


def read_summary(run: Path) -> dict:
    """A run's summary.json, checked to hold what evaluate reads from it."""
    path = run / "summary.json"
    try:
        summary = files.read_json(path)
    except OSError as error:
        raise EvaluateError(f"{path}: cannot read it: {error.strerror or error}") from None
    except files.JSONError as error:  # its message names the file
        raise EvaluateError(str(error)) from None
    if not isinstance(summary, dict):
        raise EvaluateError(f"{path} holds a {type(summary).__name__}, not a run's summary (a JSON object)")
    missing = [key for key in ("env_id", "algorithm", "seeds") if key not in summary]
    if missing:
        raise EvaluateError(f"{path} is not a finished run's summary: it has no {', '.join(missing)}")
    seeds = summary["seeds"]
    if not isinstance(summary["env_id"], str) or not (isinstance(seeds, list) and seeds):
        raise EvaluateError(f"{path}: env_id must be a string and seeds a non-empty list")
    if not all(isinstance(seed, int) and not isinstance(seed, bool) for seed in seeds):
        raise EvaluateError(f"{path}: seeds {seeds!r} are not whole numbers")
    return summary


def warn_setting(run: Path, config: dict) -> None:
    """The normalisation's references were measured in MinAtar's setting; say so when a run was not."""
    sticky, ramping = config.get("sticky_action_prob"), config.get("difficulty_ramping")
    if sticky not in (None, 0.1) or ramping not in (None, True):
        print(
            f"warning: {run}: sticky_action_prob={sticky}, difficulty_ramping={ramping}: not MinAtar's setting, "
            "which the normalisation's references are",
            file=sys.stderr,
        )


# --- normalisation ---


def read_random_scores(path: Path = RANDOM_SCORES) -> dict[str, float]:
    """The random policy's mean return per game, as `--measure-random` wrote it."""
    try:
        means = {game: v["mean"] for game, v in files.read_json(path)["scores"].items()}
        if not all(is_number(mean) for mean in means.values()):
            raise ValueError(f"a mean that is not a number in {means}")
        return {game: float(mean) for game, mean in means.items()}
    except FileNotFoundError:
        raise EvaluateError(
            f"{path} is missing: python -m maxatar_agents.evaluate --measure-random --random-scores PATH"
        ) from None
    except OSError as error:
        raise EvaluateError(f"--random-scores {path}: cannot read it: {error.strerror or error}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise EvaluateError(
            f"--random-scores {path}: not a --measure-random file ({type(error).__name__}: {error})"
        ) from None


def normalise(score, game: str, random: dict[str, float]) -> np.ndarray:
    """(score - random) / (MinAtar DQN - random): 0 the random policy, 1 MinAtar's published DQN."""
    low, high = random[game], MINATAR_DQN[game]
    if not high > low:
        raise ValueError(f"{game}: MinAtar DQN's {high} is not above the random policy's {low}")
    return (np.asarray(score, float) - low) / (high - low)


# --- statistics (each takes arrays whose last axis is runs; leading axes are bootstrap samples) ---


def iqm(x: np.ndarray) -> np.ndarray:
    """Interquartile mean along the last axis: int(n / 4) values cut at each end (scipy's trim_mean(x, 0.25))."""
    n = x.shape[-1]
    cut = int(0.25 * n)
    return np.sort(x, axis=-1)[..., cut : n - cut].mean(-1)


def optimality_gap(x: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """Mean shortfall below `gamma` along the last axis: mean(max(gamma - x, 0))."""
    return gamma - np.minimum(x, gamma).mean(-1)


def aggregate(per_game: list[np.ndarray]) -> dict[str, np.ndarray]:
    """rliable's four aggregates of per-game score arrays (..., runs of that game)."""
    means = np.stack([x.mean(-1) for x in per_game], -1)  # (..., games)
    pooled = np.concatenate(per_game, -1)
    median = np.median(per_game[0], -1) if len(per_game) == 1 else np.median(means, -1)
    return {"mean": means.mean(-1), "median": median, "iqm": iqm(pooled), "optimality_gap": optimality_gap(pooled)}


def profile(per_game: list[np.ndarray], taus: np.ndarray) -> np.ndarray:
    """Score distribution: fraction of runs above each tau, averaged over games: (..., taus)."""
    return np.mean([(x[..., None, :] > taus[:, None]).mean(-1) for x in per_game], 0)


def probability_of_improvement(xs: list[np.ndarray], ys: list[np.ndarray]) -> np.ndarray:
    """P(X > Y) averaged over games: per game, the fraction of (x run, y run) pairs with x above y, ties half."""
    per_game = []
    for x, y in zip(xs, ys, strict=True):
        x, y = x[..., :, None], y[..., None, :]
        per_game.append(((x > y) + 0.5 * (x == y)).mean((-2, -1)))
    return np.mean(per_game, 0)


def resample(per_game: list[np.ndarray], samples: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The stratified bootstrap: each game's runs drawn with replacement, independently of the other games':
    (samples, runs of that game) per game."""
    return [x[rng.integers(0, x.size, (samples, x.size))] for x in per_game]


def interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """Percentile interval along the first axis: (2, ...) lower and upper bounds."""
    tail = 100 * (1 - confidence) / 2
    return np.percentile(samples, [tail, 100 - tail], axis=0)


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator of its own for each interval, so one agent's intervals do not depend on which others run."""
    return np.random.default_rng([seed, *(zlib.crc32(name.encode()) for name in names)])


# --- the evaluation ---


def estimate(point, samples) -> dict:
    low, high = interval(samples)
    return {"estimate": float(point), "ci": [float(low), float(high)]}


def evaluate(agents: dict[str, dict[str, dict]], random: dict[str, float], samples: int, seed: int) -> dict:
    """Every statistic of every agent (aggregate and per game), the pairwise probabilities of improvement and
    the performance profiles, as JSON-ready values."""
    scores = {a: {g: normalise(r["scores"], g, random) for g, r in runs.items()} for a, runs in agents.items()}
    result: dict = {"agents": {}, "probability_of_improvement": []}
    for agent, per_game in scores.items():
        games = list(per_game)
        point = aggregate(list(per_game.values()))
        boot = aggregate(resample(list(per_game.values()), samples, rng_for(seed, agent)))
        entry = {
            "games": games,
            "runs": sum(len(x) for x in per_game.values()),
            "aggregate": {m: estimate(point[m], boot[m]) for m in METRICS},
            "per_game": {},
        }
        for game, x in per_game.items():
            point = aggregate([x])
            boot = aggregate(resample([x], samples, rng_for(seed, agent, game)))
            entry["per_game"][game] = {
                "runs": agents[agent][game]["runs"],
                "seeds": agents[agent][game]["seeds"],
                "scores": agents[agent][game]["scores"],
                "normalised": x.tolist(),
                **{m: estimate(point[m], boot[m]) for m in METRICS},
            }
        result["agents"][agent] = entry
    for x_name in scores:
        for y_name in scores:
            common = [g for g in scores[x_name] if g in scores[y_name]]
            if x_name == y_name or not common:
                continue
            xs, ys = [scores[x_name][g] for g in common], [scores[y_name][g] for g in common]
            rng = rng_for(seed, x_name, y_name)
            boot = probability_of_improvement(resample(xs, samples, rng), resample(ys, samples, rng))
            result["probability_of_improvement"].append(
                {"x": x_name, "y": y_name, "games": common, **estimate(probability_of_improvement(xs, ys), boot)}
            )
    pooled = np.concatenate([x for per_game in scores.values() for x in per_game.values()])
    taus = np.linspace(min(0.0, pooled.min()), max(1.0, pooled.max()) * 1.05, PROFILE_POINTS)
    result["performance_profile"] = {"taus": taus.round(4).tolist(), "agents": {}}
    for agent, per_game in scores.items():
        boot = profile(resample(list(per_game.values()), samples, rng_for(seed, agent, "profile")), taus)
        low, high = interval(boot)
        result["performance_profile"]["agents"][agent] = {
            "fraction": profile(list(per_game.values()), taus).round(4).tolist(),
            "ci_low": low.round(4).tolist(),
            "ci_high": high.round(4).tolist(),
        }
    return result


# --- output ---


def fmt(value: dict) -> str:
    return f"{value['estimate']:.2f} [{value['ci'][0]:.2f}, {value['ci'][1]:.2f}]"


def markdown(result: dict, header: dict) -> str:
    agents = result["agents"]
    every = [g for g in GAMES if any(g in a["games"] for a in agents.values())]
    partial = [name for name, a in agents.items() if len(a["games"]) < len(every)]
    score = "the mean return of the last 100 training episodes at the end of each seed's run"
    if header["score"] == "final_eval":
        score = "each seed's final evaluation return (greedy policy)"
    lines = [
        "# Evaluation: normalised scores with stratified-bootstrap confidence intervals",
        "",
        f"<!-- Generated by `{header['command']}`; rliable's statistics (Agarwal et al. 2021), "
        "see maxatar_agents/evaluate.py. -->",
        "",
        f"Score per seed: {score}. Normalised: (score - random) / (MinAtar DQN - random), 0 = uniform random "
        "policy (measured here, maxatar_agents/random_scores.json), 1 = MinAtar's published DQN after "
        "5M frames. IQM: interquartile mean of all runs; optimality gap: mean shortfall "
        f"below 1 (lower is better). Brackets: {CONFIDENCE:.0%} stratified-bootstrap intervals "
        f"({header['bootstrap_samples']:,} samples, seeds resampled within each game).",
        "",
        "## Aggregate over games",
        "",
        "| agent | games | runs | mean | median | IQM | optimality gap |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, a in agents.items():
        cells = " | ".join(fmt(a["aggregate"][m]) for m in METRICS)
        lines.append(f"| {name} | {len(a['games'])} | {a['runs']} | {cells} |")
    if partial:
        its = "its" if len(partial) == 1 else "their"
        lines += [
            "",
            f"{', '.join(partial)}: fewer games than the others, {its} aggregate over {its} own games; the "
            "probabilities of improvement below compare agents on the games both played.",
        ]
    lines += [
        "",
        "## Per game",
        "",
        "Normalised scores of each game's seeds (the median is over seeds; with 4 seeds or fewer no run is cut "
        "from the IQM, which is then the mean).",
        "",
        "| game | agent | seeds | score (mean over seeds) | mean | median | IQM | optimality gap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for game in every:
        for name, a in agents.items():
            if game in a["per_game"]:
                g = a["per_game"][game]
                cells = " | ".join(fmt(g[m]) for m in METRICS)
                lines.append(
                    f"| {game.split('-')[0]} | {name} | {len(g['seeds'])} | {np.mean(g['scores']):.2f} | {cells} |"
                )
    names = list(agents)
    pairs = {(p["x"], p["y"]): p for p in result["probability_of_improvement"]}
    lines += [
        "",
        "## Probability of improvement P(row > column)",
        "",
        "Averaged over the games both agents played (their number after the interval where it is not all).",
        "",
        "| P(X > Y) | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for x in names:
        cells = []
        for y in names:
            p = pairs.get((x, y))
            note = "" if p is None or len(p["games"]) == len(every) else f" ({len(p['games'])} games)"
            cells.append("-" if p is None else fmt(p) + note)
        lines.append(f"| {x} | " + " | ".join(cells) + " |")
    lines += ["", "## Performance profile", "", f"![performance profile]({header['figure']})", ""]
    return "\n".join(lines)


def plot_profiles(result: dict, path: Path | io.BytesIO) -> None:
    """Fraction of runs above each normalised score tau, with the bootstrap band (rliable's profile figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = result["performance_profile"]
    taus = np.asarray(profiles["taus"])
    every = {g for a in result["agents"].values() for g in a["games"]}
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for i, (name, p) in enumerate(profiles["agents"].items()):
        games = len(result["agents"][name]["games"])
        label = name + ("" if games == len(every) else f" ({games} games)")
        ax.fill_between(taus, p["ci_low"], p["ci_high"], color=f"C{i}", alpha=0.18, linewidth=0, step="post")
        ax.step(taus, p["fraction"], where="post", color=f"C{i}", linewidth=1.8, label=label)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="MinAtar DQN (published)")
    ax.set_xlabel("normalised score τ ((score - random) / (MinAtar DQN - random))")
    ax.set_ylabel("fraction of runs with score > τ")
    ax.set_title(f"Performance profiles, {CONFIDENCE:.0%} stratified-bootstrap bands", fontsize=10)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def make_out(out: Path) -> None:
    """Create --out (once every input is read), or say in one line why it cannot be."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise EvaluateError(f"cannot create --out {str(out)!r}: {error.strerror or error}") from None
    if not os.access(out, os.W_OK):
        raise EvaluateError(f"cannot write to --out {str(out)!r}")


def write_outputs(result: dict, header: dict, out: Path) -> str:
    make_out(out)
    header = {**header, "figure": "performance_profile.png"}
    table = markdown(result, header)
    text = re.sub(r"\[[-0-9.,eE+\s]+\]", lambda m: " ".join(m[0].split()), files.json_text({**header, **result}))
    figure = io.BytesIO()
    plot_profiles(result, figure)
    contents = {
        out / "evaluation.json": (text + "\n").encode(),
        out / "evaluation.md": table.encode(),
        out / header["figure"]: figure.getvalue(),
    }
    try:  # all three or none: a full disk leaves no part of one and no evaluation without its figure
        files.write_together(contents)
    except OSError as error:
        raise EvaluateError(f"cannot write to --out {str(out)!r}: {error.strerror or error}") from None
    return table


# --- the random policy's scores ---


def random_returns(env_id: str, episodes: int, max_steps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns and lengths of `episodes` episodes of the uniform random policy over the full action set, in
    MinAtar's setting (`maxatar.make`'s defaults), played in parallel by `evaluation.play_episodes` (one
    episode per environment, no auto-reset) with a fresh key for the actions at every step."""
    import jax

    import maxatar
    from maxatar_agents.algorithms.evaluation import play_episodes

    env, params = maxatar.make(env_id)  # sticky actions 0.1, difficulty ramping, full action set

    def uniform_action(obs, key):
        return jax.random.randint(key, (episodes,), 0, env.num_actions)

    play = jax.jit(lambda key: play_episodes(env, params, uniform_action, key, episodes, max_steps, True))
    returns, lengths = play(jax.random.key(seed))
    return np.asarray(returns, float), np.asarray(lengths)


def measure_random(args) -> None:
    """maxatar_agents/random_scores.json: the random policy's returns on every game, with the command
    and the machine that measured them."""
    import time

    start, scores = time.time(), {}
    for game in GAMES:
        returns, lengths = random_returns(f"maxatar/{game}", args.episodes, args.max_steps, args.seed)
        scores[game] = {
            "mean": float(returns.mean()),
            "std": float(returns.std()),
            "sem": float(returns.std(ddof=1) / np.sqrt(returns.size)),
            "episodes": int(returns.size),
            "mean_length": float(lengths.mean()),
            "max_length": int(lengths.max()),
            "capped": int((lengths >= args.max_steps).sum()),
        }
        print(
            f"{game:18} random return {returns.mean():7.3f} ± {scores[game]['sem']:.3f} (s.e.), "
            f"mean length {lengths.mean():7.1f}, longest {lengths.max()}"
        )
    record = {
        "what": "mean return of the uniform random policy over the full action set, one episode per environment",
        "setting": MINATAR_SETTING,
        "command": f"python -m maxatar_agents.evaluate --measure-random --random-scores {args.random_scores}"
        + f" --episodes {args.episodes} --max-steps {args.max_steps} --seed {args.seed}",
        "machine": machine_now(),
        "wall_seconds": round(time.time() - start, 1),
        "max_steps": args.max_steps,
        "seed": args.seed,
        "scores": scores,
    }
    try:
        files.write_json(args.random_scores, record)
    except OSError as error:
        raise EvaluateError(f"cannot write --random-scores {args.random_scores}: {error.strerror or error}") from None
    print(f"wrote {args.random_scores}")


# --- command line ---


def main(argv: list[str] | None = None) -> None:
    """The command line: a bad option, run or file is one `error:` line and exit status 2."""
    parser = Parser(
        prog="python -m maxatar_agents.evaluate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="*", metavar="RUN_DIR", help="finished runs, or LABEL=RUN_DIR to name them")
    parser.add_argument(
        "--out", help=f"where the JSON, Markdown and PNG go (default: {OUT}/ in the directory the runs share)"
    )
    parser.add_argument("--score", choices=SCORES, default=SCORES[0], help="the score of a seed")
    parser.add_argument("--games", nargs="+", choices=GAMES, help="only these games")
    parser.add_argument("--bootstrap", type=int, default=BOOTSTRAP, help="bootstrap samples per interval")
    parser.add_argument("--seed", type=int, default=SEED, help="the bootstrap's (or --measure-random's) seed")
    parser.add_argument(
        "--random-scores",
        type=Path,
        help="the random policy's scores (default: the package's); with --measure-random, the file to write",
    )
    parser.add_argument("--measure-random", action="store_true", help="measure the random policy's scores")
    parser.add_argument(
        "--episodes", type=int, default=RANDOM_EPISODES, help=f"--measure-random: per game (1-{MAX_EPISODES:,})"
    )
    parser.add_argument("--max-steps", type=int, default=RANDOM_MAX_STEPS, help="--measure-random: step cap")
    args = parser.parse_args(argv)
    try:
        run_command(parser, args, argv)
    except EvaluateError as error:
        parser.error(str(error.code))


@checkpoint.releases_run_locks
def run_command(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None) -> None:
    if args.measure_random:
        if args.random_scores is None:  # never the package's own file, unless named
            parser.error("--measure-random writes its scores to --random-scores PATH: name the file")
        if not 2 <= args.episodes <= MAX_EPISODES or args.max_steps < 1:  # a standard error needs two episodes
            parser.error(f"--episodes must be in [2, {MAX_EPISODES:,}] and --max-steps >= 1")
        target = args.random_scores
        unwritable = target.exists() and not target.is_file()  # a directory, a FIFO, a link to /dev/zero
        if unwritable or not target.parent.is_dir() or not os.access(target.parent, os.W_OK):
            parser.error(f"cannot write --random-scores {str(args.random_scores)!r}")
        measure_random(args)
        if not args.runs:
            return
    if not args.runs:
        parser.error("give at least one RUN_DIR (or --measure-random)")
    if not 1 <= args.bootstrap <= MAX_BOOTSTRAP:
        parser.error(f"--bootstrap must be in [1, {MAX_BOOTSTRAP:,}], got {args.bootstrap:,}{bootstrap_memory(args)}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    args.out = default_out(args.runs) if args.out is None else args.out
    try:
        files.check_out(args.out)
    except ValueError as error:
        parser.error(str(error))
    args.out = Path(args.out)
    random = read_random_scores(args.random_scores or RANDOM_SCORES)
    agents = read_runs(args.runs, args.score, args.games)  # every input read before --out is made
    make_out(args.out)
    if checkpoint.exists(args.out):  # a run's directory: held as its run holds it, never while that one trains
        try:
            checkpoint.lock_run(args.out)
        except checkpoint.CheckpointError as error:
            parser.error(f"--out: {error}")
    result = evaluate(agents, random, args.bootstrap, args.seed)
    command = "python -m maxatar_agents.evaluate " + " ".join(argv if argv is not None else sys.argv[1:])
    header = {"command": command.strip(), "score": args.score, "confidence": CONFIDENCE, "seed": args.seed}
    header |= {"bootstrap_samples": args.bootstrap, "random_scores": random, "minatar_dqn": MINATAR_DQN}
    header |= {"setting": MINATAR_SETTING}
    print(write_outputs(result, header, args.out))
    print(f"wrote {args.out}/evaluation.json, evaluation.md, performance_profile.png")


def bootstrap_memory(args: argparse.Namespace) -> str:
    """What --bootstrap N would need: 8 bytes per sample and run in each of the arrays a statistic holds at once."""
    if args.bootstrap < 1:
        return ""
    need = args.bootstrap * 8 * 4 * 100  # four arrays, for (about) 100 runs: five games of 20 seeds
    return f" (about {need / 2**30:,.1f} GiB for 100 runs)"
