"""The policy-transfer certificate: each shipped policy scores the same in MinAtar itself as in MaxAtar.

    python -m lab.exactness run                                  # plays every game (40 minutes on 2 busy cores)
    python -m lab.exactness report --readme docs/exactness.md    # the page's section from the committed file

`run` plays each shipped policy (`maxatar_agents/pretrained/<game>/`, greedy) for `--episodes` episodes in three
implementations, each with its own random numbers: MinAtar 1.0.15's own `Environment` (its numpy game and its
`RandomState`, one seeded environment per episode, sticky actions 0.1 with difficulty ramping, the setting the
policies were trained in), MaxAtar's JAX environment (`play_episodes`, as the agents evaluate) and its Python
twin (the Gymnasium vector env's Python backend). Every episode stops at `MAX_STEPS`, the agents' evaluation
limit. The returns go to `benchmarks/results/exactness.json`.

`report` tests, per game, that MaxAtar's mean return equals MinAtar's within a margin, `MARGIN` of MinAtar's
mean: two one-sided Welch t-tests (TOST, scipy.stats), equivalent where both reject at 5%, which is the 90%
confidence interval of the difference lying inside the margin. `tests/test_exactness.py` checks that the page
holds what `report` renders from the committed file.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import numpy as np
from scipy import stats

from benchmarks.pages import replace_section

RESULTS = Path("benchmarks/results/exactness.json")
GAMES = ["Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders"]
IMPLEMENTATIONS = {"minatar": "MinAtar 1.0.15", "jax": "MaxAtar, JAX", "twin": "MaxAtar, Python twin"}
MAX_STEPS = 10_000  # the agents' evaluation limit (`eval_max_steps`); MinAtar's games have none
MARGIN = 0.15  # of MinAtar's mean return: what 500 episodes resolve where the sd is about the mean (docs/exactness.md)
ALPHA = 0.05
TWIN_ENVS = 25  # sub-environments per vector env on the Python backend (at most 32)
START, END = "<!-- exactness:start -->", "<!-- exactness:end -->"
COMMAND = "python -m lab.exactness report --readme docs/exactness.md"


# --- playing ------------------------------------------------------------------------------------------------


def minatar_returns(name: str, act, episodes: int) -> list[float]:
    """Returns in MinAtar's own `Environment` for game `name`, seeded 0 .. episodes - 1, played in lockstep so
    that the policy sees one batch per step."""
    import minatar

    envs = []
    for seed in range(episodes):
        env = minatar.Environment(name)  # sticky actions 0.1, difficulty ramping: its defaults
        env.seed(seed)
        env.reset()
        envs.append(env)
    obs = np.stack([env.state() for env in envs])
    returns = np.zeros(episodes)
    running = np.ones(episodes, bool)
    for _ in range(MAX_STEPS):
        actions = np.asarray(act(None, obs))
        for i in np.flatnonzero(running):
            reward, terminal = envs[i].act(int(actions[i]))
            returns[i] += reward
            running[i] = not terminal
            obs[i] = envs[i].state()
        if not running.any():
            break
    return returns.tolist()


def jax_returns(env, params, act, episodes: int) -> list[float]:
    """Returns in MaxAtar's JAX environment, as the agents evaluate (`evaluate`, from one key)."""
    import jax

    from maxatar_agents.algorithms.evaluation import evaluate

    play = jax.jit(evaluate, static_argnums=(0, 4, 5))
    policy = jax.tree_util.Partial(act, None)
    return np.asarray(play(env, params, policy, jax.random.key(0), episodes, MAX_STEPS)).tolist()


def twin_returns(env_id: str, kwargs: dict, act, episodes: int) -> list[float]:
    """First-episode returns of the Gymnasium vector env on the Python backend, in blocks of `TWIN_ENVS`
    seeded 0, 1, ..."""
    import gymnasium

    returns = []
    for block in range(-(-episodes // TWIN_ENVS)):
        env = gymnasium.make_vec(env_id, TWIN_ENVS, backend="python", max_steps=MAX_STEPS, **kwargs)
        obs, _ = env.reset(seed=block)
        total = np.zeros(TWIN_ENVS)
        running = np.ones(TWIN_ENVS, bool)
        while running.any():
            obs, reward, terminated, truncated, _ = env.step(np.asarray(act(None, obs)))
            total += reward * running
            running &= ~(terminated | truncated)
        env.close()
        returns += total.tolist()
    return returns[:episodes]


def run(args: argparse.Namespace) -> None:
    from maxatar.machine import machine_now
    from maxatar_agents.algorithms.config import env_from_config
    from maxatar_agents.run.checkpoint import read_meta, resolve
    from maxatar_agents.run.policies import load_policy, policy_env_kwargs
    from maxatar_agents.run.saved import config_for

    results = {"episodes": args.episodes, "max_steps": MAX_STEPS, "machine": machine_now(), "games": {}}
    for game in args.games:
        path = f"pretrained:maxatar/{game}-v0"
        env_id, act = load_policy(path)
        env, params = env_from_config(config_for(read_meta(resolve(path))))
        plays = {
            "minatar": partial(minatar_returns, env.name, act, args.episodes),
            "jax": partial(jax_returns, env, params, act, args.episodes),
            "twin": partial(twin_returns, env_id, policy_env_kwargs(path), act, args.episodes),
        }
        row, seconds = {}, {}
        for name, play in plays.items():
            start = time.perf_counter()
            row[name] = play()
            seconds[name] = round(time.perf_counter() - start, 1)
            print(f"{game} {name}: mean {np.mean(row[name]):.2f} in {seconds[name]} s", flush=True)
        results["games"][game] = {**row, "seconds": seconds}
        args.out.write_text(json.dumps(results, indent=1) + "\n")  # after every game: a stop keeps those done
    print(f"wrote {args.out}")


# --- the report ---------------------------------------------------------------------------------------------


def tost(reference: list[float], other: list[float], margin: float) -> tuple[float, tuple[float, float], float]:
    """The difference of means (other - reference), its 90% Welch confidence interval, and the TOST p-value for
    |difference| < margin (the larger of the two one-sided tests' p-values)."""
    a, b = np.asarray(other), np.asarray(reference)
    below = stats.ttest_ind(a + margin, b, equal_var=False, alternative="greater").pvalue  # H0: diff <= -margin
    above = stats.ttest_ind(a - margin, b, equal_var=False, alternative="less").pvalue  # H0: diff >= margin
    interval = stats.ttest_ind(a, b, equal_var=False).confidence_interval(1 - 2 * ALPHA)
    return float(a.mean() - b.mean()), (float(interval.low), float(interval.high)), float(max(below, above))


def render(results: dict) -> str:
    """The page's section: per game, each implementation's mean return, and each MaxAtar one's TOST against
    MinAtar, with the smallest margin its interval fits in."""
    lines = [
        START,
        "",
        f"<!-- Generated by `{COMMAND}` from {RESULTS}; edit lab/exactness.py, not this. -->",
        "",
        f"{results['episodes']} episodes per game and implementation, each stopped at {results['max_steps']:,} "
        f"steps. Margin: {MARGIN:.0%} of MinAtar's mean return; equivalent where the TOST p-value is below {ALPHA} "
        "(the 90% interval of the difference inside the margin); *within* is the smallest margin, in percent of "
        f"MinAtar's mean, that the interval fits in. Played on {results['machine']}.",
        "",
        "| game | " + " | ".join(f"{label}: mean (sd)" for label in IMPLEMENTATIONS.values()) + " | margin | "
        "JAX - MinAtar (90% CI) | p | within | twin - MinAtar (90% CI) | p | within | equivalent |",
        "|---" * (len(IMPLEMENTATIONS) + 9) + "|",
    ]
    for game, row in results["games"].items():
        reference = float(np.mean(row["minatar"]))
        cells = [f"{np.mean(row[name]):.2f} ({np.std(row[name], ddof=1):.2f})" for name in IMPLEMENTATIONS]
        cells.append(f"{MARGIN * reference:.2f}")
        verdicts = []
        for name in ("jax", "twin"):
            diff, (low, high), p = tost(row["minatar"], row[name], MARGIN * reference)
            within = max(abs(low), abs(high)) / reference
            cells += [f"{diff:+.2f} ({low:+.2f}, {high:+.2f})", f"{p:.3f}", f"{within:.1%}"]
            verdicts.append(p < ALPHA)
        lines.append(f"| {game} | " + " | ".join(cells) + f" | {'yes' if all(verdicts) else 'not shown'} |")
    lines += ["", END]
    return "\n".join(lines)


def report(args: argparse.Namespace) -> None:
    section = render(json.loads(args.results.read_text()))
    if args.readme:
        replace_section(args.readme, section, START, END)
        print(f"wrote {args.readme}")
    else:
        print(section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    play = commands.add_parser("run", help="play every game in the three implementations")
    play.add_argument("--episodes", type=int, default=500)
    play.add_argument("--games", nargs="+", default=GAMES, choices=GAMES)
    play.add_argument("--out", type=Path, default=RESULTS)
    show = commands.add_parser("report", help="the page's section from a results file")
    show.add_argument("--results", type=Path, default=RESULTS)
    show.add_argument("--readme", type=Path, help="rewrite this page's section")
    args = parser.parse_args()
    run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    main()
