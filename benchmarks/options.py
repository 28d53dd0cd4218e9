"""The command-line options the benchmarks share, so that one flag means one thing in every script: `--envs`
(MaxAtar ids, the `maxatar/` prefix optional), `--repeats` (interleaved measurements; tables quote medians) and
`--min-time` (seconds per measurement)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import maxatar


def env_id(name: str) -> str:
    """A MaxAtar id from a name given with or without its `maxatar/` prefix."""
    return name if name.startswith("maxatar/") else f"maxatar/{name}"


def add_envs(parser: argparse.ArgumentParser, default: Sequence[str] | None = None) -> None:
    """--envs: MaxAtar ids, parsed to full ids (every registered id when `default` is None)."""
    shown = "every registered id" if default is None else " ".join(default)
    parser.add_argument(
        "--envs",
        nargs="+",
        type=env_id,
        default=None if default is None else [env_id(e) for e in default],
        help=f"MaxAtar ids (the maxatar/ prefix may be left out; default: {shown})",
    )


def env_ids(args: argparse.Namespace) -> list[str]:
    """The full ids `--envs` named (a default set in code, e.g. by `set_defaults`, is not parsed by argparse), or
    every registered id."""
    return [env_id(name) for name in args.envs or maxatar.registered_ids()]


def add_measurement(parser: argparse.ArgumentParser, repeats: int, min_time: float | None = None) -> None:
    """--repeats and, where the script times calls until a duration has passed, --min-time."""
    parser.add_argument("--repeats", type=int, default=repeats, help="measurements per case; medians reported")
    if min_time is not None:
        parser.add_argument("--min-time", type=float, default=min_time, help="seconds per measurement")
