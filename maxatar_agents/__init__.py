"""Baseline agents for MaxAtar: DQN (`maxatar_agents.dqn`), discrete SAC (`maxatar_agents.sac`), PPO
(`maxatar_agents.ppo`), PQN (`maxatar_agents.pqn`), and tabular Q-learning, expected SARSA and double
Q-learning on Doors (`maxatar_agents.q_learning`).

Each agent is one file, readable top to bottom: its `Config`, presets and search space, its losses as plain
functions, its update and acting rule, and `make_train(config) -> train(key)`, a pure function that runs a
whole training run as one jitted program and can be vmapped over seeds. What the agents share lives once:

* `program`: the shape of a run (init, logging intervals, evaluation), `make_train`, the contract an
  algorithm gives a skeleton (`Agent`) and the gradient step every agent takes (`gradient_update`);
* `off_policy`: the off-policy skeleton of DQN and SAC (acting, stepping, replay buffer, update schedule,
  target update);
* `on_policy`: the on-policy skeleton of PPO and PQN (rollouts, per-sample targets, minibatch epochs);
* `networks`, `evaluation`: encoders and heads; returns measured inside JAX;
* `configs`, `registry`, `checkpoint`, `policies`: config <-> text and JSON, presets chosen by environment
  (`make_config`), the agents by name, safe save/load, a run's trained policy (load, export);
* `runner`, `artifacts`, `cli`: one interval at a time with checkpoints, the files a run writes, and the
  command line generated from each `Config`;
* `grid`: sweeps of float hyperparameters trained in the same vmapped program as the seeds;
* `sweep`, `study`, `tracking`, `redaction`: the Optuna driver (`python -m maxatar_agents.sweep`), its study
  storage, MLflow / TensorBoard logging (`--track`), and the passwords of their URLs kept out of what they print
  and write.

    python -m maxatar_agents.pqn --env maxatar/Breakout-v0 --seeds 4 --out runs/breakout

`load_policy(path)` plays a run's trained policy; `load_policy("pretrained:maxatar/Breakout-v0")` the one
shipped with the package for that game (`pretrained/`, made by `python -m lab.results`).
"""

from maxatar_agents.policies import load_policy

__all__ = ["load_policy"]
