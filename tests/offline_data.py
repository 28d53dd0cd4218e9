"""Small Minari datasets for the offline agents' tests and the offline table's: episodes played by a policy
through `gymnasium.make`, each cut at `max_steps` (a truncation), written with Minari's own
`create_dataset_from_buffers` into the directory `MINARI_DATASETS_PATH` names."""

from __future__ import annotations

import warnings

import gymnasium as gym
import minari
import numpy as np
from minari.data_collector import EpisodeBuffer

import maxatar  # noqa: F401  (registers the ids with Gymnasium)
from maxatar_agents import load_policy


def make_dataset(dataset_id: str, env_id: str, episodes: int, max_steps: int, policy: str | None = None, **metadata):
    """`episodes` episodes of `policy` (a `load_policy` path; None: uniformly random actions) on `env_id`, at
    most `max_steps` steps each, as the local Minari dataset `dataset_id` with Minari's `metadata` keywords
    (`ref_min_score`, ...); returns it."""
    seed = 0
    env = gym.make(env_id)
    act = None if policy is None else load_policy(policy)[1]
    rng = np.random.default_rng(seed)
    buffers = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed * 1000 + episode)
        steps = {"observations": [obs], "actions": [], "rewards": [], "terminations": [], "truncations": []}
        for t in range(max_steps):
            action = int(rng.integers(env.action_space.n)) if act is None else int(act(None, obs))
            obs, reward, terminated, truncated, _ = env.step(action)
            truncated = truncated or (t == max_steps - 1 and not terminated)
            for name, value in zip(steps, (obs, action, reward, terminated, truncated), strict=True):
                steps[name].append(value)
            if terminated or truncated:
                break
        buffers.append(EpisodeBuffer(id=episode, **{k: np.asarray(v) for k, v in steps.items()}))
    with warnings.catch_warnings():  # Minari's advice to name an author, a description, ... for a hosted dataset
        warnings.simplefilter("ignore", UserWarning)
        return minari.create_dataset_from_buffers(
            dataset_id, buffers, env=env_id, algorithm_name=policy or "random", **metadata
        )
