"""Published figures the agents are measured against, with their sources: the package's evaluation
(`maxatar_agents.evaluate`) normalises by them and the benchmarks set results beside them."""

from __future__ import annotations

GAMES = ["Breakout-v0", "Asterix-v0", "Freeway-v0", "Seaquest-v0", "SpaceInvaders-v0"]
# MinAtar's published DQN returns (Young & Tian, 2019: mean of the last 100 training episodes after 5M
# frames; sticky actions 0.1, difficulty ramping, full action set).
MINATAR_DQN = {"Breakout-v0": 10, "Asterix-v0": 17, "Freeway-v0": 50, "Seaquest-v0": 20, "SpaceInvaders-v0": 43}
