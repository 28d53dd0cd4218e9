"""`python -m maxatar_agents.sac`: the sac agent's command line (`commands.agent`). The algorithm is
`maxatar_agents.algorithms.sac`; its names read from here are deprecated aliases (`maxatar_agents._compat`)."""

from maxatar_agents import _compat

__getattr__ = _compat.moved_attribute(__spec__.name)

if __name__ == "__main__":
    from maxatar_agents.commands import agent

    agent("sac")
