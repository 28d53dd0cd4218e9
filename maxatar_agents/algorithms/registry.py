"""The agents this package knows, by the name a checkpoint records: one line each. A checkpoint file can only
pick among these modules, so loading one never imports a module the file names. An agent from elsewhere (a
user's own, or the tests' toy agent) joins with `register(name, module)`; then the command line, presets, the
sweep's search space, checkpoints, `load_policy` and the docs pages treat it as one of these."""

from __future__ import annotations

import importlib
from types import ModuleType

AGENT_MODULES = {
    "dqn": "maxatar_agents.algorithms.dqn",
    "sac": "maxatar_agents.algorithms.sac",
    "ppo": "maxatar_agents.algorithms.ppo",
    "pqn": "maxatar_agents.algorithms.pqn",
    "q_learning": "maxatar_agents.algorithms.q_learning",
    "bc": "maxatar_agents.algorithms.bc",
    "cql": "maxatar_agents.algorithms.cql",
}


def register(name: str, module: str) -> None:
    """Add the agent `name`, whose module (imported by its dotted path when first asked for) has what every
    agent module has: `ALGORITHM` (= `name`), `Config`, `PRESETS`, `DEFAULT_PRESET`, `SEARCH_SPACE`,
    `make_program` and `make_train`."""
    if not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"name must be a Python identifier such as 'my_dqn', got {name!r}")
    if AGENT_MODULES.get(name, module) != module:
        raise ValueError(f"name {name!r} is already the agent in {AGENT_MODULES[name]}")
    AGENT_MODULES[name] = module


def agent_module(algorithm: str) -> ModuleType:
    """The module of `algorithm` (its `Config`, `PRESETS`, `DEFAULT_PRESET`, `make_program`), imported only
    when asked for, so that loading a DQN checkpoint does not import SAC."""
    if algorithm not in AGENT_MODULES:
        raise ValueError(f"unknown algorithm {algorithm!r}; known: {sorted(AGENT_MODULES)}")
    return importlib.import_module(AGENT_MODULES[algorithm])
