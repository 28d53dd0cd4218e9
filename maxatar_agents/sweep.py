"""`python -m maxatar_agents.sweep` (`maxatar_agents.experiments.sweep`); its names read from here are deprecated
aliases (`maxatar_agents._compat`)."""

from maxatar_agents import _compat

__getattr__ = _compat.moved_attribute(__spec__.name)

if __name__ == "__main__":
    from maxatar_agents.commands import tool

    tool("sweep")
