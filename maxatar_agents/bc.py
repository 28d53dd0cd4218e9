"""`python -m maxatar_agents.bc`: the bc agent's command line (`commands.agent`). The algorithm is
`maxatar_agents.algorithms.bc`."""

if __name__ == "__main__":
    from maxatar_agents.commands import agent

    agent("bc")
