"""The agents the tests parametrize over, read from the registry (`maxatar_agents.algorithms.registry`), so that a
registered agent is in every such test with no edit here or in them (tests/test_new_agent.py proves it)."""

from __future__ import annotations

from types import ModuleType

from maxatar_agents.algorithms.registry import AGENT_MODULES, agent_module


def agents() -> list[str]:
    """Every registered agent."""
    return sorted(AGENT_MODULES)


def cartpole_agents() -> list[str]:
    """The agents with a `cartpole` preset (the neural ones: CartPole has no tabular view), which the tests train."""
    return [name for name in agents() if "cartpole" in agent_module(name).PRESETS]


def cartpole_modules() -> list[ModuleType]:
    return [agent_module(name) for name in cartpole_agents()]
