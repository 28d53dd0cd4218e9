"""Where a MaxAtar environment's step time goes: per-phase timings through the benchmark harness.

    python -m benchmarks.profile_envs --envs Breakout-v0 Freeway-v0 --n 4096 --repeats 5
    python -m benchmarks.profile_envs --envs Seaquest-v0 --trace /tmp/trace --hlo /tmp/hlo --out /tmp/profile.md

Each phase is the same jitted scan as `benchmarks.run`, with part of the work taken away, so differences
between phases are the cost of that part (medians of interleaved repeats, in ns per environment step):

  full        AutoReset.step_from_uniforms, observation carried (what benchmarks.run measures)
  no_obs      the same, observation not used (XLA drops its computation)
  no_reset    Environment.transition with draws_from_uniforms only: no reset draws, no reset, no select
  game_step   only the game's step_draws + game_step on the game state (no sticky action, no freeze, no obs)
  game+obs    game_step plus game_observation of the new state (minus game_step: the observation's cost)
  uniforms    only the batched uniform draw of AutoReset.num_uniforms per environment
  full_jaxrng `full` with the uniforms from `jax.random.uniform` (the same bits as `maxatar.prng.uniform`,
              which every phase above uses, through JAX's own rolled-loop threefry lowering)
  full_plain  `full` with `maxatar.prng.materialize` a no-op: what that CPU fusion barrier costs or saves on
              this platform
  gymnax      gymnax's own step of the same environment through the same harness (one key per environment),
              where gymnax is installed and has it
  ceiling     the do-nothing environment (no keys, same observation)

With `--trace DIR` it runs the full step's rollout (and gymnax's) a few times under `jax.profiler.trace` and prints
the events (XLA thunks on a CPU, kernels on a GPU) that took most of the time: self time (minus the events nested in
them), summed by name, and the events per environment step of the batch (on a GPU: kernel launches per step).
With `--hlo DIR` it also writes the optimized HLO of the full step (and gymnax's) and counts its expensive ops (sort,
gather, scatter, while, custom-call, fusion) so that a costly construct can be traced to source.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

import maxatar
from benchmarks import options
from benchmarks.harness import JaxRunner, make_rollout, rates
from benchmarks.impls import JaxImpl, ceiling_impl, gymnax_impl, short_id
from benchmarks.measure import Run, Spread, command, publish
from maxatar import prng
from maxatar.episode import AutoReset
from maxatar.prng import uniform


@contextlib.contextmanager
def unmaterialized():
    """`maxatar.prng.materialize` as the identity, in every module that holds it, while a step is traced."""
    original = prng.materialize
    holders = [m for m in list(sys.modules.values()) if getattr(m, "materialize", None) is original]
    for module in holders:
        module.materialize = lambda x: x
    try:
        yield
    finally:
        for module in holders:
            module.materialize = original


def phase_impls(env_id: str) -> list[JaxImpl]:
    env, params = maxatar.make(env_id)
    auto = AutoReset(env)
    n_actions = env.num_actions
    zeros_obs = lambda n: jnp.zeros((n, *env.obs_shape), env.obs_dtype)

    def reset(key, n, params):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)
        return state, obs

    def uniforms(key, n, count):
        return uniform(key, (n, count))

    def full(key, state, actions, params):
        u = uniforms(key, actions.shape[0], auto.num_uniforms)
        obs, state, reward, term, trunc, _ = jax.vmap(auto.step_from_uniforms, in_axes=(0, 0, 0, None))(
            u, state, actions, params
        )
        return state, obs, reward, term | trunc

    def full_jaxrng(key, state, actions, params):
        u = jax.random.uniform(key, (actions.shape[0], auto.num_uniforms))  # the same bits, JAX's lowering
        obs, state, reward, term, trunc, _ = jax.vmap(auto.step_from_uniforms, in_axes=(0, 0, 0, None))(
            u, state, actions, params
        )
        return state, obs, reward, term | trunc

    def full_plain(key, state, actions, params):
        with unmaterialized():  # the step is traced once, inside this call
            return full(key, state, actions, params)

    def no_obs(key, state, actions, params):
        state, _, reward, done = full(key, state, actions, params)
        return state, zeros_obs(actions.shape[0]), reward, done

    def no_reset(key, state, actions, params):
        u = uniforms(key, actions.shape[0], env.num_draws)
        draws = jax.vmap(env.draws_from_uniforms, in_axes=(0, 0, None))(u, state, params)
        obs, state, reward, term, trunc, _ = jax.vmap(env.transition, in_axes=(0, 0, 0, None))(
            state, actions, draws, params
        )
        return state, obs, reward, term | trunc

    def game_step(key, state, actions, params):
        u = uniforms(key, actions.shape[0], env.num_step_uniforms)

        def one(u, game, action):
            return env.game_step(game, action, env.step_draws(u, game, params), params)

        game, reward, terminal = jax.vmap(one)(u, state.game, actions)
        return dataclasses.replace(state, game=game), zeros_obs(actions.shape[0]), reward, terminal

    def game_step_obs(key, state, actions, params):
        # game_step plus the observation of the new state; the difference is the observation's cost.
        state, _, reward, terminal = game_step(key, state, actions, params)
        return state, jax.vmap(env.observation)(state), reward, terminal

    def draws_only(key, state, actions, params):
        u = uniforms(key, actions.shape[0], auto.num_uniforms)
        state = dataclasses.replace(state, time=state.time + (u.sum(axis=1) > 1).astype(jnp.int32) + actions)
        return state, zeros_obs(actions.shape[0]), jnp.zeros(actions.shape[0]), jnp.zeros(actions.shape[0], bool)

    phases = {
        "full": full,
        "no_obs": no_obs,
        "no_reset": no_reset,
        "game_step": game_step,
        "game+obs": game_step_obs,
        "uniforms": draws_only,
        "full_jaxrng": full_jaxrng,
        "full_plain": full_plain,
    }
    impls = [JaxImpl(name, "maxatar", n_actions, False, reset, step, params=params) for name, step in phases.items()]
    ceiling = ceiling_impl(env.obs_shape, env.obs_dtype, False, n_actions)
    impls.append(dataclasses.replace(ceiling, name="ceiling"))
    try:
        impls.append(dataclasses.replace(gymnax_impl(env_id), name="gymnax"))
    except (ImportError, LookupError):  # gymnax not installed, or without this environment
        pass
    return impls


HLO_OPS = ("sort", "gather", "scatter", "while", "custom-call", "fusion", "dynamic-slice", "dynamic-update-slice")


def dump_hlo(impl: JaxImpl, n: int, steps: int, out: Path, env: str) -> dict[str, int]:
    key = jax.random.PRNGKey(0)
    state, obs = impl.reset(key, n, impl.params)
    rollout = make_rollout(impl, n, steps)
    carry = (key, state, obs, jnp.float32(0))
    text = jax.jit(lambda carry: rollout(carry, impl.params)).lower(carry).compile().as_text()
    path = out / f"{env}_{impl.name}_n{n}.hlo.txt"
    path.write_text(text)
    return {op: len(re.findall(rf"= [^=]*? {re.escape(op)}\(", text)) for op in HLO_OPS}


def self_times(events: list[dict]) -> dict[str, list[float]]:
    """{name: [self time in us, count]} of complete trace events: each event's duration minus that of the events
    nested in it on the same thread, so containers (the executable, a while loop) count only their own work."""
    totals: dict[str, list[float]] = {}
    by_thread: dict[tuple, list[dict]] = {}
    for event in events:
        if event.get("ph") == "X" and "dur" in event:
            by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(event)
    for thread in by_thread.values():
        thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[list] = []  # [end, name, self time]

        def close(entry):
            total = totals.setdefault(entry[1], [0.0, 0])
            total[0] += entry[2]
            total[1] += 1

        for event in thread:
            while stack and stack[-1][0] <= event["ts"]:
                close(stack.pop())
            if stack:
                stack[-1][2] -= event["dur"]
            stack.append([event["ts"] + event["dur"], event["name"], float(event["dur"])])
        while stack:
            close(stack.pop())
    return totals


def device_events(events: list[dict]) -> list[dict]:
    """The complete events of the trace's device processes (`/device:GPU:0`: a GPU's kernels); where there is none
    (a CPU), every complete event (XLA thunks on host threads)."""
    names = {e.get("pid"): e.get("args", {}).get("name", "") for e in events if e.get("name") == "process_name"}
    devices = {pid for pid, name in names.items() if "/device:" in name}
    return [e for e in events if e.get("ph") == "X" and (not devices or e.get("pid") in devices)]


def trace_top_ops(runner: JaxRunner, out: Path, calls: int = 5, top: int = 12) -> tuple[list, float]:
    """[(name, share of the traced self time, count)] of the `top` costliest events of `calls` rollout calls, and
    the device's events (`device_events`) per step of the batch."""
    import gzip
    import json

    with jax.profiler.trace(str(out), create_perfetto_trace=True):
        for _ in range(calls):
            runner.carry = jax.block_until_ready(runner.rollout(runner.carry))
    events = []
    for path in out.rglob("*.trace.json.gz"):
        events += json.loads(gzip.decompress(path.read_bytes())).get("traceEvents", [])
    # Python's frames ("$file:line name") and the host waiting for the device are not the program's work.
    totals = {k: v for k, v in self_times(events).items() if not k.startswith("$") and "wait for" not in k}
    whole = sum(v[0] for v in totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][0])[:top]
    per_step = len(device_events(events)) / (calls * runner.steps)
    return [(name, dur / whole, count) for name, (dur, count) in ranked], per_step


def main(argv=None) -> None:
    parser = options.parser(__doc__)
    options.add_envs(parser, default=["CartPole-v1", "Doors-v0", "Breakout-v0"])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=64)
    options.add_measurement(parser, repeats=5, min_time=0.3)
    parser.add_argument("--traced-params", action="store_true", help="params as a jit argument, not constants")
    parser.add_argument("--hlo", type=Path, help="write optimized HLO of the full step here and count ops")
    parser.add_argument("--trace", type=Path, help="write a jax.profiler trace of the full step; print its top ops")
    options.add_out(parser)
    args = parser.parse_args(argv)

    run = Run(command(__spec__.name, argv), args.repeats)
    parts = []
    for env_id in args.envs:
        try:
            impls = phase_impls(env_id)
        except Exception as error:  # noqa: BLE001
            parts.append(f"{env_id}: skipped ({type(error).__name__}: {error})")
            continue
        runners = {impl.name: JaxRunner(impl, args.n, args.steps, args.traced_params) for impl in impls}
        runs = rates(runners, args.repeats, args.min_time)
        lines = [
            f"## {short_id(env_id)} at N={args.n}\n",
            "| phase | ns per environment step, median (min-max) |",
            "|---|---|",
        ]
        lines += [
            f"| {name} | {Spread.of(1e9 / r for r in values).format('{:.1f}')} |" for name, values in runs.items()
        ]
        for name in ("full", "gymnax") if args.trace else ():
            if name not in runners:
                continue
            out = args.trace / short_id(env_id) / name
            ranked, per_step = trace_top_ops(runners[name], out)
            lines.append(
                f"\nCostliest events of the {name} step's rollout (share of traced self time, count; "
                f"{per_step:.1f} events per batched step; trace in {out}):\n"
            )
            lines += [f"- {share:6.1%}  {count:6d}  {event[:100]}" for event, share, count in ranked]
        for runner in runners.values():
            runner.close()
        if args.hlo:
            args.hlo.mkdir(parents=True, exist_ok=True)
            for impl in [i for i in impls if i.name in ("full", "gymnax")]:
                counts = dump_hlo(impl, args.n, args.steps, args.hlo, short_id(env_id))
                lines.append(
                    f"\nOptimized HLO of the {impl.name} rollout: " + ", ".join(f"{k} {v}" for k, v in counts.items())
                )
        parts.append("\n".join(lines))
        print(f"measured {short_id(env_id)}", file=sys.stderr, flush=True)
    publish(run, parts, args.out)


if __name__ == "__main__":
    main()
