"""The command lines, assembled from the three layers: each agent's (`run.cli`, with `--track` from
`experiments.tracking` hung on the run as its hooks), the Optuna sweep, the evaluation statistics and the export.

    python -m maxatar_agents ALGO ...        # an agent's run: dqn, sac, ppo, pqn, q_learning, or a registered one
    python -m maxatar_agents sweep ...       # also: evaluate, export

`python -m maxatar_agents.ppo ...` (and `.sweep`, `.evaluate`, `.export`) are the same commands, one module each.
"""

from __future__ import annotations

import sys

from maxatar_agents.algorithms.registry import AGENT_MODULES
from maxatar_agents.experiments import statistics, sweep, tracking
from maxatar_agents.run import cli, export

TOOLS = {"sweep": sweep.command_line, "evaluate": statistics.main, "export": export.main}


def run(algorithm: str, argv: list[str] | None = None, **kwargs) -> dict:
    """`cli.run` with the command line's hooks (`--track`): train, write the artefacts, return the summary."""
    return cli.run(algorithm, argv, extension=tracking.COMMAND_LINE, **kwargs)


def agent(algorithm: str, argv: list[str] | None = None) -> None:
    """`python -m maxatar_agents.<algorithm>`: `cli.main` with the command line's hooks (`--track`)."""
    cli.main(algorithm, argv, extension=tracking.COMMAND_LINE)


def main(argv: list[str] | None = None) -> None:
    """`python -m maxatar_agents ALGO|TOOL ...`."""
    argv = sys.argv[1:] if argv is None else argv
    names = [*AGENT_MODULES, *TOOLS]
    if not argv or argv[0] not in names:
        given = f"got {argv[0]!r}" if argv else "got nothing"
        print(f"usage: python -m maxatar_agents {{{','.join(names)}}} ...: {given}", file=sys.stderr)
        raise SystemExit(2)
    name, rest = argv[0], argv[1:]
    if name in TOOLS:
        TOOLS[name](rest)
    else:
        agent(name, rest)
