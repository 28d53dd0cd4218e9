"""Rendering throughput: a rollout rendered to frames inside one jitted scan, then written as a GIF.

    python -m benchmarks.render_bench                                   # seven ids, 1000 frames, 3 repeats
    python -m benchmarks.render_bench --envs Breakout-v0 --steps 200 --repeats 5 --out /tmp/render.md

For each environment: the first call's time (trace + compile + run), the time of a warm `--steps`-frame rollout
with frames (random policy, score/step overlay on) and its frames per second, medians with their range over
`--repeats` runs interleaved across the environments, and the time and size of writing those frames as a GIF
with imageio.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import jax

import maxatar
from benchmarks import options
from benchmarks.measure import Run, Spread, command, interleaved, publish, timed
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


def renderer(env_id: str, steps: int):
    """`render(seed) -> frames`: one rollout of `steps` rendered frames, waited for."""
    env, params = maxatar.make(env_id)
    policy = random_policy(env)
    return lambda seed: jax.block_until_ready(render_rollout(env, params, policy, jax.random.key(seed), steps)[0])


def gif(frames, path: Path) -> tuple[float, float]:
    """(seconds, KiB) of writing `frames` as a GIF at `path`."""
    _, seconds = timed(lambda: write_gif(path, frames))
    return seconds, path.stat().st_size / 1024


def main(argv=None) -> None:
    parser = options.parser(__doc__)
    options.add_envs(parser, default=DEFAULT_IDS)
    parser.add_argument("--steps", type=int, default=1000, help="frames per rollout")
    options.add_measurement(parser, repeats=3)
    options.add_out(parser)
    args = parser.parse_args(argv)
    run = Run(command(__spec__.name, argv), args.repeats)

    renders, first, written, notes = {}, {}, {}, []
    with tempfile.TemporaryDirectory() as directory:
        for env_id in args.envs:
            try:
                render = renderer(env_id, args.steps)
                frames, first[env_id] = timed(lambda render=render: render(0))
            except ModuleNotFoundError as error:
                notes.append(f"{env_id}: skipped ({error})")
                continue
            renders[env_id] = render
            # The GIF now, from the first rollout: a rollout's frames are tens of MB, so none is kept for later.
            frames = jax.device_get(frames)
            written[env_id] = (f"{frames.shape[2]}x{frames.shape[1]}", *gif(frames, Path(directory) / "play.gif"))
    calls = {env_id: lambda repeat, r=render: timed(lambda: r(repeat + 1))[1] for env_id, render in renders.items()}
    runs = interleaved(args.repeats, calls)

    lines = [
        "| env | frame | first call s | render ms, median (min-max) | frames/s, median (min-max) | gif write s | "
        "gif KiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for env_id, seconds in runs.items():
        frame, gif_seconds, kib = written[env_id]
        cells = [
            frame,
            f"{first[env_id]:.2f}",
            Spread.of(1000 * s for s in seconds).format("{:.1f}"),
            Spread.of(args.steps / s for s in seconds).format(),
            f"{gif_seconds:.2f}",
            f"{kib:.0f}",
        ]
        lines.append(f"| {env_id} | " + " | ".join(cells) + " |")
    setting = f"{args.steps}-frame rollouts (random policy, overlay on), on {jax.devices()[0]}."
    publish(run, [setting, "\n".join(lines), *notes], args.out)


if __name__ == "__main__":
    main()
