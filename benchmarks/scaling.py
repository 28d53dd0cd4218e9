"""Steps/s against the number of devices, with the batch split over a 1-D mesh (`maxatar.sharding`).

Each device count runs in its own Python process with `XLA_FLAGS=--xla_force_host_platform_device_count=K`,
so on a machine without accelerators the "devices" are virtual CPU devices sharing the same cores. Each
virtual device runs its slice on its own thread, so the split can at most put the idle physical cores to work
(on 2 cores: up to about 2x, nothing beyond 2 devices), and on a loaded machine not even that. What this
exercises is the code path: the sharded jitted step, partitioned by XLA, timed the same way at every device
count. On
several GPUs or a TPU slice run it with `--real` (no forced CPU devices) and `--devices 1 2 4 8`.

    python -m benchmarks.scaling                                    # 1, 2, 4 forced CPU devices, N = 4096
    python -m benchmarks.scaling --envs CartPole-v1 --devices 1 2 --n 1024 --repeats 5 --out /tmp/scaling.md

XLA fixes a process's device count when JAX starts, so each device count's repeats run back to back in its own
process; they cannot be interleaved with the other counts'.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks import options
from benchmarks.measure import Run, Spread, command, publish, timed

ROOT = Path(__file__).resolve().parent.parent


def measure(env_id: str, n: int, devices: int, steps: int, repeats: int) -> dict:
    """In this process: `steps` auto-resetting steps of `n` environments split over `devices` devices, inside
    one jitted scan (the pure sharded path), `repeats` times; steps/s of each repeat."""
    import jax
    import jax.numpy as jnp

    import maxatar
    from maxatar import sharding

    env, params = maxatar.make(env_id)
    mesh = sharding.make_mesh(devices)
    params = sharding.replicate(params, mesh)
    stepper = maxatar.AutoReset(env)

    @jax.jit
    def rollout(keys, state, params):
        def body(state, t):
            step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, t)
            actions = jax.vmap(lambda k: jax.random.randint(k, (), 0, env.num_actions))(step_keys)
            _, state, reward, *_ = jax.vmap(stepper.step, in_axes=(0, 0, 0, None))(step_keys, state, actions, params)
            return state, reward.sum()

        return jax.lax.scan(body, state, jnp.arange(steps))

    keys = sharding.shard_batch(jax.random.split(jax.random.key(0), n), mesh)
    _, state = sharding.reset(env, keys, params)
    _, compile_s = timed(lambda: jax.block_until_ready(rollout(keys, state, params)))
    runs = []
    for _ in range(repeats):
        (state, _), seconds = timed(lambda state=state: jax.block_until_ready(rollout(keys, state, params)))
        runs.append(n * steps / seconds)
    shards = {shard.data.shape[0] for shard in jax.tree.leaves(state)[0].addressable_shards}
    return {
        "env": env_id,
        "n": n,
        "devices": devices,
        "per_device": sorted(shards),
        "runs": runs,
        "compile_s": compile_s,
    }


def child(env_id: str, n: int, devices: int, steps: int, repeats: int, real: bool) -> dict:
    env = dict(os.environ)
    if not real:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
        env["JAX_PLATFORMS"] = "cpu"
    code = (
        "import json, benchmarks.scaling as s; "
        f"print(json.dumps(s.measure({env_id!r}, {n}, {devices}, {steps}, {repeats})))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{env_id} on {devices} device(s) failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = options.parser(__doc__)
    options.add_envs(parser, default=["CartPole-v1", "Breakout-v0"])
    parser.add_argument("--devices", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--n", type=int, default=4096, help="environments (a multiple of every device count)")
    parser.add_argument("--steps", type=int, default=200, help="steps per timed scan")
    options.add_measurement(parser, repeats=5)
    parser.add_argument("--real", action="store_true", help="use the real devices instead of forced CPU devices")
    options.add_out(parser)
    args = parser.parse_args(argv)
    for count in args.devices:
        if count < 1 or args.n % count:
            parser.error(f"--n {args.n} must split evenly over every device count (got {count})")
    run = Run(command(__spec__.name, argv), args.repeats, order="back-to-back")

    kind = "real devices" if args.real else "virtual CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count)"
    parts = [f"Scaling over devices: N = {args.n}, {args.steps} steps per scan, on {kind}."]
    lines = [
        "| env | devices | envs per device | steps/s, median (min-max) | x 1 device | compile s |",
        "|---|---|---|---|---|---|",
    ]
    for env_id in args.envs:
        base = None
        for count in args.devices:
            row = child(env_id, args.n, count, args.steps, args.repeats, args.real)
            spread = Spread.of(row["runs"])
            base = spread.median if base is None else base
            lines.append(
                f"| {env_id} | {count} | {row['per_device'][0]} | {spread.format(millions)} | "
                f"{spread.median / base:.2f}x | {row['compile_s']:.1f} |"
            )
            print(f"measured {env_id} on {count} device(s)", file=sys.stderr, flush=True)
    parts.append("\n".join(lines))
    if not args.real:
        parts.append(
            f"Note: forced CPU devices share this machine's {os.cpu_count()} physical cores (one thread per "
            "virtual device): splitting can at best occupy idle cores, never add compute, and other jobs' load "
            "changes the picture between runs. The table checks the sharded path, it is not a GPU/TPU speed-up."
        )
    publish(run, parts, args.out)


def millions(rate: float) -> str:
    return f"{rate / 1e6:.3f}M"


if __name__ == "__main__":
    main()
