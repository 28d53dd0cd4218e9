"""The Exactness page's figures: the parity harness at scale, and the policy-transfer certificate (each shipped
policy scores the same in MinAtar itself as in MaxAtar).

    python -m lab.exactness parity                               # the harness on every game (8 CPU-minutes)
    python -m lab.exactness run                                  # plays every game (40 minutes on 2 busy cores)
    python -m lab.exactness report --readme docs/exactness.md    # the page's sections from the committed files

`parity` plays `--episodes` seeded episodes per game through the parity suites' own harness (`tests/parity/`, so
it runs from a checkout with the dev extra): MinAtar 1.0.15 with the scripted random generator side by side with
MaxAtar's `transition`, compared by `harness.check_parity` after the start and after every step. Even seeds are
played by the suite's policy that reads the reference's state (long episodes), odd ones by uniform random actions;
sticky actions 0.1, difficulty ramping off on every fifth seed. A game stops at its first mismatch, which the file
records. The counts go to `benchmarks/results/parity.json`.

`run` plays each shipped policy (`maxatar_agents/pretrained/<game>/`, greedy) for `--episodes` episodes in three
implementations, each with its own random numbers: MinAtar 1.0.15's own `Environment` (its numpy game and its
`RandomState`, one seeded environment per episode, sticky actions 0.1 with difficulty ramping, the setting the
policies were trained in), MaxAtar's JAX environment (`play_episodes`, as the agents evaluate) and its Python
twin (the Gymnasium vector env's Python backend). Every episode stops at `MAX_STEPS`, the agents' evaluation
limit. The returns go to `benchmarks/results/exactness.json`.

`report` tests, per game, that MaxAtar's mean return equals MinAtar's within a margin, `MARGIN` of MinAtar's
mean: two one-sided Welch t-tests (TOST, scipy.stats), equivalent where both reject at 5%, which is the 90%
confidence interval of the difference lying inside the margin. `tests/test_exactness.py` checks that the page
holds what `report` renders from the committed files.
"""

from __future__ import annotations

import argparse
import json
import logging
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
PARITY = Path("benchmarks/results/parity.json")
PARITY_STEPS = 3_000  # an episode's cap: the parity suites' longest (Seaquest's and Space Invaders')
PARITY_STICKY = 0.1  # MinAtar's default
PARITY_START, PARITY_END = "<!-- parity:start -->", "<!-- parity:end -->"
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


# --- the parity harness at scale ----------------------------------------------------------------------------


def parity_suites() -> dict:
    """Per game, the parity suite's adapter and its long-episode policy for a seed: the harness's own, so that
    the counts are of what the tests compare."""
    from tests.parity import test_asterix, test_breakout, test_freeway, test_seaquest, test_space_invaders
    from tests.parity.harness import from_list

    rng = np.random.default_rng
    return {
        "Asterix": (test_asterix.ASTERIX, lambda seed: test_asterix.dodging(rng(seed), noise=0.0)),
        "Breakout": (test_breakout.BREAKOUT, lambda seed: test_breakout.tracker(rng(seed), lead=0.2)),
        # Freeway's suite has no policy that reads the state: its recipe that crosses the road again and again
        "Freeway": (test_freeway.FREEWAY, lambda seed: from_list(test_freeway.expand(test_freeway.MOSTLY_UP, seed))),
        "Seaquest": (test_seaquest.SEAQUEST, lambda seed: test_seaquest.late_game(rng(seed), noise=0.0)),
        "SpaceInvaders": (
            test_space_invaders.SPACE_INVADERS,
            lambda seed: test_space_invaders.scripted_policy(seed, 0.02),
        ),
    }


def parity_setting(seed: int) -> tuple[bool, bool]:
    """(by the suite's policy, difficulty ramping) of episode `seed`."""
    return seed % 2 == 0, seed % 5 != 4


def parity_game(adapter, policy_for, episodes: int) -> dict:
    """Play seeds 0 .. episodes - 1 of one game in both and compare them with the harness; stop at the first
    mismatch. The reference's draws and the actions come from two streams of the seed."""
    from tests.parity import harness
    from tests.parity.scripted_random import SeededSource

    counts = dict(episodes=0, by_policy=0, ramping_off=0, steps=0, states=0, longest=0, fields=None, mismatch=None)
    start = time.process_time()
    for seed in range(episodes):
        by_policy, ramping = parity_setting(seed)
        draws, actions = np.random.SeedSequence(seed).spawn(2)
        if by_policy:
            policy = policy_for(actions)
        else:
            choose = np.random.default_rng(actions)
            policy = lambda t, game, choose=choose: int(choose.integers(adapter.env.num_actions))
        episode = harness.play(
            adapter, SeededSource(draws), PARITY_STICKY, ramping, policy, PARITY_STEPS, after_terminal=2
        )
        try:
            port = harness.check_parity(adapter, episode, filler_seed=seed)
        except AssertionError as error:
            counts["mismatch"] = {"seed": seed, "report": str(error)}
            break
        counts["episodes"] += 1
        counts["by_policy"] += by_policy
        counts["ramping_off"] += not ramping
        counts["steps"] += episode.n
        counts["states"] += episode.n + 1
        counts["longest"] = max(counts["longest"], episode.n)
        counts["fields"] = list(harness.sides(episode, port)[1])
    counts["cpu_seconds"] = round(time.process_time() - start, 1)
    return counts


def parity(args: argparse.Namespace) -> None:
    from importlib.metadata import version

    from maxatar.machine import machine_now

    logging.getLogger().setLevel(logging.ERROR)  # minatar warns about matplotlib when an environment is built
    suites = parity_suites()
    results = dict(
        minatar=version("minatar"),
        sticky_action_prob=PARITY_STICKY,
        max_steps=PARITY_STEPS,
        episodes=args.episodes,
        machine=machine_now(),
        games={},
    )
    for game in args.games:
        row = results["games"][game] = parity_game(*suites[game], args.episodes)
        verdict = "no mismatch" if row["mismatch"] is None else f"MISMATCH at seed {row['mismatch']['seed']}"
        print(f"{game}: {row['episodes']} episodes, {row['states']:,} states, {verdict} in {row['cpu_seconds']} CPU-s")
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


def render_parity(results: dict) -> str:
    """The page's parity section: per game, the episodes played side by side, the states compared, the fields
    compared at each and the mismatches."""
    n = results["episodes"]
    lines = [
        PARITY_START,
        "",
        f"<!-- Generated by `{COMMAND}` from {PARITY}; edit lab/exactness.py, not this. -->",
        "",
        f"MinAtar {results['minatar']} against MaxAtar's `transition`: seeds 0 .. {n - 1} of each game, sticky "
        f"actions {results['sticky_action_prob']}; even seeds played by the suite's policy that reads the "
        "reference's state, odd ones by uniform random actions; difficulty ramping off on every fifth seed "
        f"(seed % 5 = 4), on elsewhere. An episode stops two steps after its end or at {results['max_steps']:,} "
        "steps. A state is the start or the state after a step; each field (the observation, reward, terminal "
        "flag, executed action and every internal field of the game) is compared at every state. Played on "
        f"{results['machine']}.",
        "",
        "| game | episodes | of them by policy | ramping off | states compared | longest episode | fields "
        "per state | mismatches |",
        "|---" * 8 + "|",
    ]
    for game, row in results["games"].items():
        cells = [row["episodes"], row["by_policy"], row["ramping_off"], f"{row['states']:,}"]
        fields = len(row["fields"]) if row["fields"] else "-"  # none where the first episode differs
        cells += [f"{row['longest']:,} steps", fields, 0 if row["mismatch"] is None else 1]
        lines.append(f"| {game} | " + " | ".join(map(str, cells)) + " |")
    for game, row in results["games"].items():
        if row["mismatch"] is not None:
            report = row["mismatch"]["report"].replace("\n", " ")
            lines += ["", f"{game}, seed {row['mismatch']['seed']}: {report}"]
    lines += ["", PARITY_END]
    return "\n".join(lines)


def report(args: argparse.Namespace) -> None:
    sections = [
        (render_parity(json.loads(args.parity.read_text())), PARITY_START, PARITY_END),
        (render(json.loads(args.results.read_text())), START, END),
    ]
    for section, start, end in sections:
        if args.readme:
            replace_section(args.readme, section, start, end)
        else:
            print(section, end="\n\n")
    if args.readme:
        print(f"wrote {args.readme}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    side = commands.add_parser("parity", help="the parity harness on every game, counted")
    side.add_argument("--episodes", type=int, default=300)
    side.add_argument("--games", nargs="+", default=GAMES, choices=GAMES)
    side.add_argument("--out", type=Path, default=PARITY)
    play = commands.add_parser("run", help="play every game in the three implementations")
    play.add_argument("--episodes", type=int, default=500)
    play.add_argument("--games", nargs="+", default=GAMES, choices=GAMES)
    play.add_argument("--out", type=Path, default=RESULTS)
    show = commands.add_parser("report", help="the page's sections from the results files")
    show.add_argument("--results", type=Path, default=RESULTS)
    show.add_argument("--parity", type=Path, default=PARITY)
    show.add_argument("--readme", type=Path, help="rewrite this page's sections")
    args = parser.parse_args()
    {"parity": parity, "run": run, "report": report}[args.command](args)


if __name__ == "__main__":
    main()
