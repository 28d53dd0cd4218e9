"""Published figures the agents are measured against, with their sources: MinAtar's DQN, by which the package's
evaluation (`maxatar_agents.experiments.statistics`) normalises, and pgx's PPO, which the agents' benchmark sets
results beside. The figures only the project's reports use are in `lab/published.py`, which is not installed."""

from __future__ import annotations

# MinAtar's published DQN returns (Young & Tian, 2019: mean of the last 100 training episodes after 5M
# frames; sticky actions 0.1, difficulty ramping, full action set).
MINATAR_DQN = {"Breakout-v0": 10, "Asterix-v0": 17, "Freeway-v0": 50, "Seaquest-v0": 20, "SpaceInvaders-v0": 43}

# pgx's MinAtar PPO example (examples/minatar-ppo): 20M frames on one GPU in 30-75 s (sticky 0.1, minimal action
# set), its final returns.
PGX_PPO = {"Breakout-v0": 50, "Asterix-v0": 22, "Freeway-v0": 63, "Seaquest-v0": 54, "SpaceInvaders-v0": 145}
