"""What pixel observations cost per step, against the environment's own observation, in the same run.

For each id and obs_type (the own observation, "rgb", "grayscale"), at the default picture size:
* `gymnasium.make(id, obs_type=...)` (the Python backend: the twin's step, the picture drawn in numpy) stepped
  in a plain Python loop with random actions: median microseconds per step;
* the pure JAX path: `num_envs` environments under `AutoReset`, vmapped, stepped inside one jitted `lax.scan`
  (the observations summed so that XLA cannot drop them): nanoseconds per environment step.

An id's six measurements are taken once per repeat, one after the other; the table quotes medians over the
repeats with their range.

    python -m benchmarks.pixels --gym-steps 1000 --scan-steps 100
    python -m benchmarks.pixels --envs Breakout-v0 --num-envs 64 --repeats 5 --out /tmp/pixels.md
"""

from __future__ import annotations

import sys

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

import maxatar
from benchmarks import options
from benchmarks.measure import Run, Spread, call_times, command, interleaved, publish, timed

DEFAULT_IDS = maxatar.registered_ids()
OBS_TYPES = (None, "rgb", "grayscale")


def gym_step_us(env_id: str, obs_type: str | None, steps: int):
    """`measure(repeat)`: the median microseconds of one `env.step` over `steps` steps (a reset after an
    episode's end counts inside its step)."""
    env = gymnasium.make(env_id, obs_type=obs_type)
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, env.action_space.n, steps).tolist()

    def step(action: int) -> None:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()

    return lambda _repeat: 1e6 * Spread.of(call_times(step, actions)).median


def pure_step_ns(env_id: str, obs_type: str | None, num_envs: int, steps: int):
    """(`measure(repeat)`: ns per environment step of a jitted, vmapped AutoReset scan, first call's seconds)."""
    env, params = maxatar.make(env_id, obs_type=obs_type)
    auto = maxatar.AutoReset(env)

    @jax.jit
    def run(key):
        keys = jax.random.split(key, num_envs)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

        def body(carry, key):
            state, total = carry
            step_keys = jax.random.split(key, num_envs)
            actions = jax.random.randint(key, (num_envs,), 0, env.num_actions)
            obs, state, *_ = jax.vmap(auto.step, in_axes=(0, 0, 0, None))(step_keys, state, actions, params)
            return (state, total + jnp.sum(obs, dtype=jnp.int32)), None

        return jax.lax.scan(body, (state, jnp.int32(0)), jax.random.split(key, steps))[0][1]

    _, first = timed(lambda: jax.block_until_ready(run(jax.random.key(0))))

    def measure(repeat: int) -> float:
        _, seconds = timed(lambda: jax.block_until_ready(run(jax.random.key(repeat + 1))))
        return 1e9 * seconds / (num_envs * steps)

    return measure, first


def main(argv=None) -> None:
    parser = options.parser(__doc__)
    options.add_envs(parser, default=DEFAULT_IDS)
    parser.add_argument("--num-envs", type=int, default=256, help="environments of the pure JAX scan")
    parser.add_argument("--scan-steps", type=int, default=200, help="steps of the pure JAX scan")
    parser.add_argument("--gym-steps", type=int, default=2000, help="timed steps of the gymnasium.make loop")
    options.add_measurement(parser, repeats=3)
    options.add_out(parser)
    args = parser.parse_args(argv)
    run = Run(command(__spec__.name, argv), args.repeats)

    header = ["env", "obs_type", "obs shape", "gymnasium.make us/step", "x own", "pure ns/env-step", "x own"]
    header.append("compile s")
    rows = []
    for env_id in args.envs:
        calls, first = {}, {}
        for obs_type in OBS_TYPES:
            calls[obs_type, "gym"] = gym_step_us(env_id, obs_type, args.gym_steps)
            calls[obs_type, "pure"], first[obs_type] = pure_step_ns(env_id, obs_type, args.num_envs, args.scan_steps)
        spread = {key: Spread.of(values) for key, values in interleaved(args.repeats, calls).items()}
        own_gym, own_pure = spread[None, "gym"].median, spread[None, "pure"].median
        for obs_type in OBS_TYPES:
            shape = maxatar.make(env_id, obs_type=obs_type)[0].obs_shape
            gym, pure = spread[obs_type, "gym"], spread[obs_type, "pure"]
            rows.append(
                [
                    env_id.split("/")[-1],
                    obs_type or "own",
                    "x".join(map(str, shape)),
                    gym.format("{:.1f}"),
                    f"{gym.median / own_gym:.1f}x",
                    pure.format(),
                    f"{pure.median / own_pure:.1f}x",
                    f"{first[obs_type]:.1f}",
                ]
            )
        print(f"measured {env_id}", file=sys.stderr, flush=True)
    setting = (
        "MinAtar's setting (sticky 0.1, all actions, no limit; CartPole and Doors their defaults); pure path: "
        f"N = {args.num_envs}, {args.scan_steps}-step scan. Times: median (min-max) over the repeats; `x own`: "
        "median over the own observation's."
    )
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(row) + " |" for row in rows]
    publish(run, [setting, "\n".join(table)], args.out)


if __name__ == "__main__":
    main()
