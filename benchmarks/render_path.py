"""Step and render: `env.step` then `env.render()` in rgb_array mode, as Gymnasium's `RecordVideo` and CleanRL's
`--capture-video` call them, against MinAtar's own Gymnasium environment, in one run.

    python -m benchmarks.render_path                   # the five games, 3 interleaved repeats of 1 s
    python -m benchmarks.render_path --envs Seaquest-v0 --repeats 5 --out benchmarks/results/render_path.md

Each repeat times every implementation for `--min-time` seconds (random actions, a reset when an episode ends),
one after the other, so load from other jobs hits all alike; the table quotes medians with their range and the
ratio of the medians to MinAtar's.
"""

from __future__ import annotations

import sys

import gymnasium
import numpy as np

from benchmarks import options
from benchmarks.client_ids import REFERENCE_IDS, register_reference
from benchmarks.measure import Run, Spread, command, interleaved, publish, rate_for
from maxatar.registry import MINATAR_GAMES


def steps_rendered_per_second(env: gymnasium.Env, seconds: float, seed: int = 0) -> float:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)

    def step_and_render() -> None:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        env.render()
        if terminated or truncated:
            env.reset()

    return rate_for(step_and_render, seconds)


def main(argv=None) -> None:
    parser = options.parser(__doc__)
    options.add_envs(parser, default=MINATAR_GAMES)
    options.add_measurement(parser, repeats=3, min_time=1.0)
    options.add_out(parser)
    args = parser.parse_args(argv)
    register_reference()
    run = Run(command(__spec__.name, argv), args.repeats)
    lines = [
        "| env | maxatar python backend | maxatar jax backend | minatar 1.0.15 | python / minatar | jax / minatar |",
        "|---|---|---|---|---|---|",
    ]
    for short in (e.removeprefix("maxatar/") for e in args.envs):
        envs = {
            "python": gymnasium.make(f"maxatar/{short}", backend="python", render_mode="rgb_array"),
            "jax": gymnasium.make(f"maxatar/{short}", backend="jax", render_mode="rgb_array"),
            "minatar": gymnasium.make(REFERENCE_IDS[short], render_mode="rgb_array"),
        }
        for env in envs.values():  # the first call compiles (JAX) or sets up the figure (MinAtar)
            steps_rendered_per_second(env, 0.05)
        runs = interleaved(
            args.repeats,
            {name: lambda _, e=env: steps_rendered_per_second(e, args.min_time) for name, env in envs.items()},
        )
        s = {name: Spread.of(values) for name, values in runs.items()}
        cells = [s["python"].format(), s["jax"].format(), s["minatar"].format()]
        cells += [f"{s['python'].median / s['minatar'].median:.2f}x", f"{s['jax'].median / s['minatar'].median:.2f}x"]
        lines.append(f"| {short} | " + " | ".join(cells) + " |")
        print(f"measured {short}", file=sys.stderr, flush=True)
    publish(run, ["Steps with render per second, median (min-max over the repeats):", "\n".join(lines)], args.out)


if __name__ == "__main__":
    main()
