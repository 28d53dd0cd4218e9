"""Steps/s of the multi-game environment (`maxatar.continual`) against the single games, in the same run.

* In a sequence (every environment plays the current task, `params.task` traced, so the step is one jitted program
  for every game): the union playing game k against game k's own environment, at N environments. Target: at most
  1.15x the single game's time per step.
* One task's game alone with the union's observation (`MultiGame.task_game(k)`, what the agents step for a whole
  logging interval, switching games outside their loop) against the single game: the cost of the union's
  observation without a per-step switch.
* A mixed batch (`MixedBatch`: N environments in contiguous groups, one per game) against the sum of its groups'
  times, each group timed as its single game with that many environments. Target: at most 1.25x.

Each case is `--steps` auto-resetting steps (`AutoReset.step_from_uniforms`, one uniform block per step as the
agents draw it) inside one jitted scan; the cases are measured in turn, once per repeat (interleaved).

    python -m benchmarks.continual                      # N = 4096, 3 repeats
    python -m benchmarks.continual --n 1024 --steps 50 --repeats 2 --out /tmp/continual.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp

from benchmarks.measure import Run, Spread, command, interleaved, publish, timed
from maxatar.prng import uniform

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "continual.md"


def rollout(step_batch, num_uniforms: int, n: int, steps: int):
    """A jitted `run(key, state, params) -> state` of `steps` batched steps."""

    def run(key, state, params):
        def body(carry, t):
            state, key = carry
            key, sub = jax.random.split(key)
            uniforms = uniform(sub, (n, num_uniforms))  # the agents' draw: MaxAtar's fused threefry
            actions = (jnp.arange(n, dtype=jnp.int32) + t) % 6
            state = step_batch(uniforms, state, actions, params)[1]
            return (state, key), None

        return jax.lax.scan(body, (state, key), jnp.arange(steps))[0][0]

    return jax.jit(run)


def case(env, params, n: int, steps: int, batch=None):
    """A timed call (seconds per call, the call made once to compile) of `steps` steps of `n` environments."""
    from maxatar.episode import AutoReset

    auto = AutoReset(env)
    if batch is None:
        step = jax.vmap(auto.step_from_uniforms, (0, 0, 0, None))
        reset = jax.vmap(env.reset, (0, None))
        state = reset(jax.random.split(jax.random.key(0), n), params)[1]
    else:
        step = batch.step_from_uniforms
        state = batch.reset_from_uniforms(jax.random.uniform(jax.random.key(0), (n, env.num_reset_uniforms)), params)[1]
    run = rollout(step, env.num_auto_reset_uniforms, n, steps)
    jax.block_until_ready(run(jax.random.key(1), state, params))  # compile

    def call(repeat):
        return timed(lambda: jax.block_until_ready(run(jax.random.key(repeat), state, params)))[1]

    return call


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="environments (default 4096)")
    parser.add_argument("--steps", type=int, default=100, help="steps per timed call (default 100)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument("--out", type=Path, default=None, help=f"also write the tables here (e.g. {OUT})")
    args = parser.parse_args(argv)
    run = Run(command("benchmarks.continual", argv), args.repeats)

    import maxatar
    from maxatar.continual import MixedBatch

    union, params = maxatar.make("MinAtar-MultiTask-v0")
    n, steps = args.n, args.steps
    singles = {k: maxatar.make(f"{type(game).__name__}-v0") for k, game in enumerate(union.game_envs)}
    calls = {}
    for k, (single, single_params) in singles.items():
        calls[("single", k)] = case(single, single_params, n, steps)
        calls[("union", k)] = case(union, params.replace(task=jnp.int32(k)), n, steps)
        task_game = union.task_game(k)
        calls[("task", k)] = case(task_game, task_game.game_params(params), n, steps)
    batch = MixedBatch(union, n)
    calls[("mixed", None)] = case(union, params, n, steps, batch)
    for k, start, stop in union.groups(n):
        calls[("group", k)] = case(*singles[k], stop - start, steps)
    times = interleaved(args.repeats, calls)

    def rate(key, envs=n):
        return Spread.of(envs * steps / t for t in times[key])

    rows = [
        "| game | single (steps/s) | union in a sequence (steps/s) | union / single time | task game (steps/s) "
        "| task game / single time |",
        "|---|---|---|---|---|---|",
    ]
    for k, game in enumerate(union.games):
        ratio, task_ratio = (
            Spread.of(u / s for u, s in zip(times[(kind, k)], times[("single", k)], strict=True))
            for kind in ("union", "task")
        )
        rows.append(
            f"| {game} | {rate(('single', k)).format()} | {rate(('union', k)).format()} | {ratio.format('{:.2f}')} "
            f"| {rate(('task', k)).format()} | {task_ratio.format('{:.2f}')} |"
        )
    groups = [times[("group", k)] for k, _, _ in union.groups(n)]
    sums = [sum(ts) for ts in zip(*groups, strict=True)]
    mixed_ratio = Spread.of(m / s for m, s in zip(times[("mixed", None)], sums, strict=True))
    mixed = [
        "| mixed batch | sum of its groups, as single games (steps/s) | mixed batch (steps/s) | mixed / sum time |",
        "|---|---|---|---|",
        f"| {', '.join(f'{union.games[k]} x{b - a}' for k, a, b in union.groups(n))} | "
        f"{Spread.of(n * steps / s for s in sums).format()} | {rate(('mixed', None)).format()} | "
        f"{mixed_ratio.format('{:.2f}')} |",
    ]
    detail = f"N = {n} environments, {steps} auto-resetting steps per timed call (one jitted scan)"
    return publish(run, ["\n".join(rows), "\n".join(mixed)], args.out).replace("Run:", detail + ". Run:", 0)


if __name__ == "__main__":
    main()
