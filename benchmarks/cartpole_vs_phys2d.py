"""Gymnasium vector path: `make_vec("maxatar/CartPole-v1", 1024)` with numpy outputs against Gymnasium's own
`make_vec("phys2d/CartPole-v1", 1024)`, stepped from Python the way a training loop does. Prints medians.

    python -m benchmarks.cartpole_vs_phys2d
"""

import statistics
import time

import gymnasium
import numpy as np

import maxatar  # noqa: F401  (registers the maxatar ids)


def steps_per_second(venv, steps: int, repeats: int = 3) -> float:
    venv.reset(seed=0)
    actions = np.zeros(venv.num_envs, np.int64)
    for _ in range(5):  # compile and warm up
        venv.step(actions)
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            venv.step(actions)
        rates.append(venv.num_envs * steps / (time.perf_counter() - start))
    return statistics.median(rates)


def main(num_envs: int = 1024) -> None:
    ours = steps_per_second(gymnasium.make_vec("maxatar/CartPole-v1", num_envs=num_envs), steps=200)
    phys2d = gymnasium.make_vec("phys2d/CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")
    theirs = steps_per_second(phys2d, steps=20)
    print(f"| implementation ({num_envs} envs, numpy outputs) | steps/s (median of 3) |")
    print("|---|---|")
    print(f"| maxatar/CartPole-v1 | {ours:,.0f} |")
    print(f"| phys2d/CartPole-v1 (Gymnasium FunctionalJaxVectorEnv) | {theirs:,.0f} |")
    print(f"\nratio: {ours / theirs:,.1f}x (target: at least 20x)")


if __name__ == "__main__":
    main()
