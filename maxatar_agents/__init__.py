"""Baseline agents for MaxAtar: DQN (`maxatar_agents.dqn`) and discrete SAC (`maxatar_agents.sac`).

Each agent is one file, readable top to bottom, with a config dataclass, presets and `make_train(config)
-> train(key)`, a pure function that runs a whole training run as one jitted program and can be vmapped
over seeds. The shared modules hold only what both use: `networks`, `evaluation`, `common` (the program
shape and config plumbing), `checkpoint` (safe save/load, `load_policy`) and `cli` (the command line).

    python -m maxatar_agents.dqn --env maxatar/Breakout-v0 --preset minatar --seeds 4 --out runs/breakout
"""
