"""The agents this package knows, by the name a checkpoint records. A fixed table, so a checkpoint file can
only pick among these modules: loading one never imports a module the file names."""

from __future__ import annotations

import importlib
from types import ModuleType

AGENT_MODULES = {
    "dqn": "maxatar_agents.dqn",
    "sac": "maxatar_agents.sac",
    "ppo": "maxatar_agents.ppo",
    "pqn": "maxatar_agents.pqn",
    "q_learning": "maxatar_agents.q_learning",
}


def agent_module(algorithm: str) -> ModuleType:
    """The module of `algorithm` (its `Config`, `PRESETS`, `DEFAULT_PRESET`, `make_program`), imported only
    when asked for, so that loading a DQN checkpoint does not import SAC."""
    if algorithm not in AGENT_MODULES:
        raise ValueError(f"unknown algorithm {algorithm!r}; known: {sorted(AGENT_MODULES)}")
    return importlib.import_module(AGENT_MODULES[algorithm])
