"""Rendering throughput: a rollout rendered to frames inside one jitted scan, then written as a GIF.

For each environment: the first call's time (trace + compile + run), the best warm time of a `--steps`-frame
rollout with frames (random policy, score/step overlay on), frames per second, and the time and size of
writing those frames as a GIF with imageio. Usage: python benchmarks/render_bench.py [--steps 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import jax

import maxatar
from benchmarks import options
from renderers.gif import write_gif
from renderers.rollout import random_policy, render_rollout

DEFAULT_IDS = (
    "maxatar/Breakout-v0",
    "maxatar/Asterix-v0",
    "maxatar/Freeway-v0",
    "maxatar/Seaquest-v0",
    "maxatar/SpaceInvaders-v0",
    "maxatar/CartPole-v1",
    "maxatar/Doors-v0",
)


def timed(fn):
    start = time.perf_counter()
    result = jax.block_until_ready(fn())
    return result, time.perf_counter() - start


def bench(env_id: str, steps: int, repeats: int, directory: Path) -> dict:
    env, params = maxatar.make(env_id)
    policy = random_policy(env)
    _, first = timed(lambda: render_rollout(env, params, policy, jax.random.key(0), steps))
    warm = []
    for seed in range(1, repeats + 1):
        (frames, _), seconds = timed(lambda seed=seed: render_rollout(env, params, policy, jax.random.key(seed), steps))
        warm.append(seconds)
    frames = jax.device_get(frames)
    path = directory / f"{env_id.split('/')[-1]}.gif"
    start = time.perf_counter()
    write_gif(path, frames)
    gif_seconds = time.perf_counter() - start
    return {
        "env": env_id,
        "frame": f"{frames.shape[2]}x{frames.shape[1]}",
        "first call s": f"{first:.2f}",
        "render ms": f"{1000 * min(warm):.1f}",
        "frames/s": f"{steps / min(warm):,.0f}",
        "gif write s": f"{gif_seconds:.2f}",
        "gif KiB": f"{path.stat().st_size / 1024:.0f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=1000, help="frames per rollout")
    parser.add_argument("--repeats", type=int, default=3, help="warm runs; the best is reported")
    options.add_envs(parser, default=DEFAULT_IDS)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for env_id in args.envs:
            try:
                rows.append(bench(env_id, args.steps, args.repeats, Path(directory)))
            except ModuleNotFoundError as error:
                print(f"skipping {env_id}: {error}")
    if not rows:
        return
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(row[c]) for row in rows)) for c in columns}
    print(f"{args.steps}-frame rollouts (random policy, overlay on), jax {jax.__version__} on {jax.devices()[0]}")
    print("  ".join(c.ljust(widths[c]) if c == "env" else c.rjust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(row[c].ljust(widths[c]) if c == "env" else row[c].rjust(widths[c]) for c in columns))


if __name__ == "__main__":
    main()
