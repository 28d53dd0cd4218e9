"""The command lines, assembled from the three layers: each agent's (`run.cli`, with `--track` from
`experiments.tracking` hung on the run as its hooks), the Optuna sweep, the evaluation statistics and the export.

    python -m maxatar_agents ALGO ...        # an agent: dqn, sac, ppo, pqn, q_learning, bc, cql, or a registered one
    python -m maxatar_agents sweep ...       # also: evaluate, export, datasets

`python -m maxatar_agents.ppo ...` (and `.sweep`, `.evaluate`, `.export`, `.datasets`) are the same commands, one module
each.
Every command first checks the extras it needs (`agents`, and the sweep's `sweep`; `--track` its `track` as the
options are read) and, where one is missing, prints one `error:` line naming it, before any of the layers (which
import flax and optax) is imported.
"""

from __future__ import annotations

import contextlib
import importlib
import sys

from maxatar.extras import MissingExtra, require
from maxatar_agents import require_agents
from maxatar_agents.algorithms.registry import AGENT_MODULES

# Each tool's function ("module:name"), imported once the extras are there, and the extra it needs besides `agents`.
TOOLS = {
    "sweep": ("maxatar_agents.experiments.sweep:command_line", ("sweep", "optuna")),
    "evaluate": ("maxatar_agents.experiments.statistics:main", None),
    "export": ("maxatar_agents.run.export:main", None),
    "datasets": ("maxatar_agents.run.datasets:main", ("offline", "minari", "h5py")),
}


@contextlib.contextmanager
def extras_checked(command: str, extra: tuple[str, ...] | None = None):
    """Inside, the command runs with its extras installed: a missing one (checked first, or raised later by
    `--track`) ends it with one line, `python -m maxatar_agents.<command>: error: ... not installed: pip
    install "maxatar[EXTRA]"`, and exit status 2."""
    try:
        require_agents()
        if extra is not None:
            require(*extra)
        yield
    except MissingExtra as error:
        print(f"python -m maxatar_agents.{command}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def run(algorithm: str, argv: list[str] | None = None, **kwargs) -> dict:
    """`cli.run` with the command line's hooks (`--track`): train, write the artefacts, return the summary."""
    from maxatar_agents.experiments import tracking
    from maxatar_agents.run import cli

    return cli.run(algorithm, argv, extension=tracking.COMMAND_LINE, **kwargs)


def agent(algorithm: str, argv: list[str] | None = None) -> None:
    """`python -m maxatar_agents.<algorithm>`: `cli.main` with the command line's hooks (`--track`)."""
    with extras_checked(algorithm):
        from maxatar_agents.experiments import tracking
        from maxatar_agents.run import cli

        cli.main(algorithm, argv, extension=tracking.COMMAND_LINE)


def tool(name: str, argv: list[str] | None = None) -> None:
    """`python -m maxatar_agents.<name>` for a tool (`TOOLS`): sweep, evaluate, export, datasets."""
    function, extra = TOOLS[name]
    with extras_checked(name, extra):
        module, attribute = function.split(":")
        getattr(importlib.import_module(module), attribute)(argv)


def main(argv: list[str] | None = None) -> None:
    """`python -m maxatar_agents ALGO|TOOL ...`."""
    argv = sys.argv[1:] if argv is None else argv
    names = [*AGENT_MODULES, *TOOLS]
    if not argv or argv[0] not in names:
        from maxatar_agents.run.configs import did_you_mean

        given = f"got {argv[0]!r}{did_you_mean(argv[0], names)}" if argv else "got nothing"
        print(f"usage: python -m maxatar_agents {{{','.join(names)}}} ...: {given}", file=sys.stderr)
        raise SystemExit(2)
    name, rest = argv[0], argv[1:]
    if name in TOOLS:
        tool(name, rest)
    else:
        agent(name, rest)
