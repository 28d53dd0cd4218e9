"""`python -m maxatar_agents ALGO ...` (`commands.main`)."""

from maxatar_agents.commands import main

main()
