"""Gymnasium vector path: `make_vec("maxatar/CartPole-v1", 1024)` with numpy outputs against Gymnasium's own
`make_vec("phys2d/CartPole-v1", 1024)`, stepped from Python the way a training loop does.

    python -m benchmarks.cartpole_vs_phys2d
    python -m benchmarks.cartpole_vs_phys2d --num-envs 256 --repeats 5 --out /tmp/cartpole.md

Each repeat steps each vector env for `--min-time` seconds, the two one after the other; the table quotes medians
with their range (target: MaxAtar at least 20x phys2d).
"""

from __future__ import annotations

import gymnasium
import jax
import numpy as np

import maxatar  # noqa: F401  (registers the maxatar ids)
from benchmarks import options
from benchmarks.measure import Run, Spread, command, interleaved, publish, rate_for

TARGET = 20.0


def steps_per_second(venv, min_time: float):
    """`measure(repeat)`: steps/s of `venv` over `min_time` seconds of batched steps with fixed actions, after a
    reset and a few steps that compile and warm up. phys2d returns JAX arrays, so the clock stops only when its
    last step is done."""
    venv.reset(seed=0)
    actions = np.zeros(venv.num_envs, np.int64)
    for _ in range(5):
        venv.step(actions)
    return lambda _repeat: venv.num_envs * rate_for(lambda: venv.step(actions), min_time, wait=jax.block_until_ready)


def main(argv=None) -> None:
    parser = options.parser(__doc__)
    parser.add_argument("--num-envs", type=int, default=1024, help="environments of each vector env")
    options.add_measurement(parser, repeats=3, min_time=0.3)
    options.add_out(parser)
    args = parser.parse_args(argv)
    run = Run(command(__spec__.name, argv), args.repeats)
    n = args.num_envs
    ours = gymnasium.make_vec("maxatar/CartPole-v1", num_envs=n)
    theirs = gymnasium.make_vec("phys2d/CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
    measures = {
        "maxatar/CartPole-v1 (numpy outputs)": steps_per_second(ours, args.min_time),
        "phys2d/CartPole-v1 (Gymnasium FunctionalJaxVectorEnv)": steps_per_second(theirs, args.min_time),
    }
    spreads = [Spread.of(runs) for runs in interleaved(args.repeats, measures).values()]
    lines = [f"| implementation ({n} envs) | steps/s, median (min-max) |", "|---|---|"]
    lines += [f"| {name} | {spread.format()} |" for name, spread in zip(measures, spreads, strict=True)]
    ratio = f"Ratio of the medians: {spreads[0].median / spreads[1].median:,.1f}x (target: at least {TARGET:g}x)."
    publish(run, ["\n".join(lines), ratio], args.out)


if __name__ == "__main__":
    main()
