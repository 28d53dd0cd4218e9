"""The command line the benchmarks share, so that every script is called the same way and one flag means one thing
in all of them: `--envs` (MaxAtar ids, the `maxatar/` prefix optional), `--repeats` (interleaved measurements;
tables quote medians), `--min-time` (seconds per measurement) and `--out` (where the results go)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import maxatar


def parser(doc: str) -> argparse.ArgumentParser:
    """A benchmark's parser, with its module docstring (commands, what is measured) as the help, laid out as
    written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


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


def add_out(parser: argparse.ArgumentParser) -> None:
    """--out FILE, for a script that prints one Markdown text (the run line, then its tables)."""
    parser.add_argument("--out", type=Path, help="also write the printed text (Markdown: the run line, the tables)")
