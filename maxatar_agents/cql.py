"""`python -m maxatar_agents.cql`: the cql agent's command line (`commands.agent`). The algorithm is
`maxatar_agents.algorithms.cql`."""

if __name__ == "__main__":
    from maxatar_agents.commands import agent

    agent("cql")
