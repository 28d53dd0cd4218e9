"""How often CartPole's two Gymnasium backends part under a policy that reads the observation.

    python -m lab.cartpole_backends [--seeds 2048]

The JAX backend integrates in float32, the Python twin in float64 as Gymnasium's reference does
(`maxatar/games/cartpole/twin.py`), so their observations differ by float32 rounding. A policy whose decision
depends on the observation's low bits then picks another action on one backend, and the two episodes part.
This plays a balancing controller (push toward where the pole falls, `3 theta + theta_dot > 0`, which keeps
most episodes to the 500-step limit) on both backends from the same seeds, one vector env of 32 per backend
per seed block, and counts the first episodes whose action sequences differ, and those whose lengths (returns)
differ. The figures are quoted in CartPole's module docstring, and so on its docs page.
"""

from __future__ import annotations

import argparse

import gymnasium
import numpy as np

import maxatar.gym  # noqa: F401  (registers the ids)

NUM_ENVS = 32  # the Python backend's most environments
HORIZON = 500  # CartPole's time limit: every first episode has ended by then


def policy(obs: np.ndarray) -> np.ndarray:
    return (3 * obs[:, 2] + obs[:, 3] > 0).astype(np.int64)


def first_episodes(backend: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each sub-environment's first episode: its actions (-1 after it ended) and its length."""
    env = gymnasium.make_vec("maxatar/CartPole-v1", NUM_ENVS, backend=backend)
    obs, _ = env.reset(seed=seed)
    actions = np.full((HORIZON, NUM_ENVS), -1)
    length = np.zeros(NUM_ENVS, int)
    running = np.ones(NUM_ENVS, bool)
    for t in range(HORIZON):
        action = policy(obs)
        actions[t, running] = action[running]
        obs, _, terminated, truncated, _ = env.step(action)
        length += running
        running &= ~(terminated | truncated)
    env.close()
    return actions, length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=2048, help="episodes per backend (a multiple of 32)")
    args = parser.parse_args()
    parted, lengths_differ, steps, lengths = 0, 0, [], []
    for block in range(args.seeds // NUM_ENVS):
        jax_actions, jax_length = first_episodes("jax", block)
        python_actions, python_length = first_episodes("python", block)
        differ = jax_actions != python_actions
        parted += int(differ.any(axis=0).sum())
        lengths_differ += int((jax_length != python_length).sum())
        steps += [int(np.argmax(column)) for column in differ.T if column.any()]
        lengths += [*jax_length, *python_length]
    episodes = args.seeds // NUM_ENVS * NUM_ENVS
    print(f"{episodes} first episodes per backend, mean length {np.mean(lengths):.1f} steps")
    print(f"parted: {parted} of {episodes} ({100 * parted / episodes:.1f}%); other lengths: {lengths_differ}")
    if steps:
        print(f"first differing action: median step {np.median(steps):.0f}, earliest {min(steps)}")


if __name__ == "__main__":
    main()
