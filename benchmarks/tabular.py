"""Throughput of the tabular agents (`algorithms.q_learning`): environment steps with a TD update per second,
summed over 30 agents trained at once on Doors, against the 1.8M steps/s reported for 30 tabular Q-learning
agents on a vectorised gridworld on a CPU (target: 10x, 18M steps/s).

Each row times one logging interval of the compiled program, vmapped over the agents as the command line runs
it (`make_program(config).interval`), after a warm-up call that compiles it; steps/s is the median of the
repeats (with their range), the programs with and without updates measured in turn. Rows: the model (`table`:
dynamics as gathers from the tables enumerated from the environment; `env`: `env.transition` itself), the TD
target, environments per agent, and `learn=no`, the same program acting and stepping without updating its tables
(what the updates cost).

    python -m benchmarks.tabular --repeats 5
    python -m benchmarks.tabular --num-envs 64 256 --models table --methods q_learning --out /tmp/tabular.md
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp

from benchmarks import options
from benchmarks.measure import Run, Spread, command, interleaved, publish, timed
from maxatar_agents.algorithms import q_learning

REFERENCE = 1.8e6  # steps/s of the source's 30 tabular Q-learning agents on a vectorised gridworld, CPU


def compiled_interval(config: q_learning.Config, agents: int, learn: bool):
    """(`measure(repeat)`: steps/s over all agents of one logging interval, compile seconds)."""
    program = q_learning.tabular_program(config, learn)
    keys = jnp.stack([jax.random.PRNGKey(i) for i in range(agents)])
    state = jax.jit(jax.vmap(program.init))(keys)
    interval, compile_s = timed(
        lambda: jax.jit(jax.vmap(program.interval, in_axes=(0, None))).lower(state, jnp.int32(0)).compile()
    )
    jax.block_until_ready(interval(state, jnp.int32(0)))  # warm-up
    frames = agents * program.schedule.frames_per_interval

    def measure(_repeat) -> float:
        _, seconds = timed(lambda: jax.block_until_ready(interval(state, jnp.int32(0))))
        return frames / seconds

    return measure, compile_s


def millions(rate: float) -> str:
    return f"{rate / 1e6:.2f}M"


def main(argv: list[str] | None = None) -> None:
    parser = options.parser(__doc__)
    parser.add_argument("--agents", type=int, default=30)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 256], help="environments per agent")
    parser.add_argument("--models", nargs="+", default=list(q_learning.MODELS), choices=q_learning.MODELS)
    parser.add_argument("--methods", nargs="+", default=list(q_learning.METHODS), choices=q_learning.METHODS)
    parser.add_argument("--steps", type=int, default=4_000_000, help="steps per interval over all agents")
    options.add_measurement(parser, repeats=5)
    options.add_out(parser)
    args = parser.parse_args(argv)
    run = Run(command(__spec__.name, argv), args.repeats)

    lines = [
        "| model | method | envs per agent | learn | steps/s, median (min-max) | x 1.8M | compile s |",
        "|---|---|---|---|---|---|---|",
    ]
    for model in args.models:
        for method in args.methods:
            for num_envs in args.num_envs:
                frames = max(1, args.steps // (args.agents * num_envs)) * num_envs
                config = q_learning.Config(
                    method=method, model=model, num_envs=num_envs, total_steps=frames, log_points=1
                )
                # With and without the updates, measured in turn: what the updates cost.
                learns = (True, False) if method == args.methods[0] else (True,)
                compiled = {learn: compiled_interval(config, args.agents, learn) for learn in learns}
                runs = interleaved(args.repeats, {learn: measure for learn, (measure, _) in compiled.items()})
                for learn, (_, compile_s) in compiled.items():
                    spread = Spread.of(runs[learn])
                    lines.append(
                        f"| {model} | {method} | {num_envs} | {'yes' if learn else 'no'} | {spread.format(millions)} | "
                        f"{spread.median / REFERENCE:.1f}x | {compile_s:.2f} |"
                    )
                print(f"measured {model} {method} {num_envs}", file=sys.stderr, flush=True)
    setting = f"{args.agents} agents on Doors; ratio of the median against {REFERENCE / 1e6:.1f}M steps/s."
    publish(run, [setting, "\n".join(lines)], args.out)


if __name__ == "__main__":
    main()
