"""Keep only a finished run's trained policy, as the package ships its pretrained ones.

    python -m maxatar_agents.export runs/dqn-breakout policies/dqn-breakout            # the best seed
    python -m maxatar_agents.export runs/dqn-breakout policies/dqn-breakout --seed-index 2

A run's checkpoint holds all that a resume needs, the replay buffer included (tens of MB for DQN and SAC: 44 MB
after 100k frames of DQN's `minatar` preset); the export is one seed's policy params (a few hundred kB) with the
run's metadata, which `load_policy` and `python -m renderers gif --policy DIR` read as they read the run
(`policies.export_policy`). By default the seed with the best final evaluation.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from maxatar import files
from maxatar_agents.run import checkpoint, policies, saved


def size(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(
        prog="python -m maxatar_agents.export",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=Path, help="a finished run's --out directory")
    parser.add_argument(
        "out", type=Path, help="the directory to write the policy to: a new one, or an earlier export (never a run's)"
    )
    parser.add_argument("--seed-index", type=int, help="which of the run's seeds (default: the best evaluated)")
    args = parser.parse_args(argv)
    if os.path.realpath(args.out) == os.path.realpath(os.getcwd()):  # also `''`, which Path reads as "."
        parser.exit(2, f"{parser.prog}: error: the output directory must be named (not '' or the working directory)\n")
    try:
        files.check_out(args.out, "the output directory")
        meta = checkpoint.read_meta(args.run)
        saved.config_for(meta)  # every field it reads below is there and sane
        per_seed = (meta.get("final_eval") or {}).get("return_per_seed") or []
        index = args.seed_index if args.seed_index is not None else int(np.argmax(per_seed)) if per_seed else 0
        record = {"run": str(args.run)}
        if 0 <= index < len(meta["seeds"]):  # else export_policy says which seeds there are
            record["seed"] = meta["seeds"][index]
            record["greedy_return"] = per_seed[index] if index < len(per_seed) else None
        out = policies.export_policy(args.run, args.out, index, record)
    except ValueError as error:  # a CheckpointError, or an output directory inside the package
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    run = args.run if args.run.is_dir() else args.run.parent
    sizes = f"{size(out) / 1e3:,.0f} kB (the run: {size(run) / 1e6:,.1f} MB)"
    print(f"wrote seed {record['seed']}'s policy to {out}: {sizes}")
    return out
