"""Step and render: `env.step` then `env.render()` in rgb_array mode, as Gymnasium's `RecordVideo` and CleanRL's
`--capture-video` call them, against MinAtar's own Gymnasium environment, in one run.

    python -m benchmarks.render_path                   # the five games, 3 interleaved repeats of 1 s
    python -m benchmarks.render_path --envs Seaquest-v0 --repeats 5

Each repeat times every implementation for `--seconds` (random actions, a reset when an episode ends), one after
the other, so load from other jobs hits all alike; the table quotes medians and the ratio to MinAtar.
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium
import numpy as np

import maxatar
from benchmarks import options
from benchmarks.client_ids import REFERENCE_IDS, register_reference

GAMES = ["Breakout-v0", "Asterix-v0", "Freeway-v0", "Seaquest-v0", "SpaceInvaders-v0"]


def steps_rendered_per_second(env: gymnasium.Env, seconds: float, seed: int = 0) -> float:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        env.render()
        steps += 1
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_envs(parser, default=GAMES)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved measurements; medians reported")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per measurement")
    args = parser.parse_args(argv)
    register_reference()
    print("| env | maxatar python backend | maxatar jax backend | minatar 1.0.15 | python / minatar | jax / minatar |")
    print("|---|---|---|---|---|---|")
    for short in (e.removeprefix("maxatar/") for e in args.envs):
        envs = {
            "python": gymnasium.make(f"maxatar/{short}", backend="python", render_mode="rgb_array"),
            "jax": gymnasium.make(f"maxatar/{short}", backend="jax", render_mode="rgb_array"),
            "minatar": gymnasium.make(REFERENCE_IDS[short], render_mode="rgb_array"),
        }
        for env in envs.values():  # the first call compiles (JAX) or sets up the figure (MinAtar)
            steps_rendered_per_second(env, 0.05)
        rates = {name: [] for name in envs}
        for _ in range(args.repeats):
            for name, env in envs.items():
                rates[name].append(steps_rendered_per_second(env, args.seconds))
        m = {name: statistics.median(values) for name, values in rates.items()}
        cells = [f"{m['python']:,.0f}", f"{m['jax']:,.0f}", f"{m['minatar']:,.0f}"]
        cells += [f"{m['python'] / m['minatar']:.2f}x", f"{m['jax'] / m['minatar']:.2f}x"]
        print(f"| {short} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nmaxatar {maxatar.__file__}; steps with render per second, medians of {args.repeats}")


if __name__ == "__main__":
    main()
