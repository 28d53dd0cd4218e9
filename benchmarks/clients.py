"""MaxAtar in the clients users run it in, against the reference in the same run, interleaved.

    python -m benchmarks.clients --quick --out /tmp/clients          # smoke check of every client, a few minutes
    python -m benchmarks.clients --cleanrl /tmp/cleanrl --readme docs/performance/clients.md
    python -m benchmarks.clients --only single make_vec --repeats 5
    python -m benchmarks.clients --from-results --readme docs/performance/clients.md   # rebuild, measure nothing

A user who swaps MinAtar (or Gymnasium's CartPole) for MaxAtar in client code must get at least the
reference's speed. Each client below is run as its users run it, MaxAtar and the reference measured
alternately (A B A B ...) `--repeats` times, so that load from other processes hits both alike; the tables
quote medians, with a Target column saying met or missed:

  single                 `gymnasium.make(id)` stepped in a plain Python loop, one environment
  gymnasium_performance  Gymnasium's own `gymnasium.utils.performance` benchmark_step / _init / _render
  sb3_dqn                Stable-Baselines3 `DQN("MlpPolicy", env).learn(N)` on Breakout
  cleanrl_dqn            CleanRL's `cleanrl/dqn.py`, unchanged, as a subprocess (needs `--cleanrl DIR`)
  cleanrl_dqn_jax        CleanRL's `cleanrl/dqn_jax.py`, likewise
  sb3_ppo                SB3 PPO rollout collection: `make_sb3_vec_env` against `DummyVecEnv` of reference envs
  make_vec               `gymnasium.make_vec(id, 1024)` (numpy) against the pure jitted scan (benchmarks.run's
                         Gymnasium path)

Results go to `--out` (default benchmarks/results/clients): `results.md`, one `<client>.csv` per client and
`meta.json` (per client: command, start, machine and load at start and end, settings). A run with `--only`
replaces only the clients it measured; the others keep their earlier results, and each table says which run
produced it. See benchmarks/README.md, section "Clients".
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import gymnasium
import numpy as np

from benchmarks import options, report, run
from benchmarks.client_ids import FLAT_IDS, REFERENCE_IDS
from benchmarks.measure import PACKAGES, Run, Spread, call_times, command, interleaved, machine, timed
from benchmarks.pages import replace_section

REPO = Path(__file__).resolve().parents[1]
README_START, README_END = "<!-- clients:start -->", "<!-- clients:end -->"

# Targets. "At least the reference's speed" everywhere a reference exists, plus:
SINGLE_STEP_US = 20.0  # single: median env.step (reset included when an episode ends) at most 20 us
INIT_TARGET = 1.0  # gymnasium_performance: benchmark_init at least the reference's inits/s, and
RENDER_TARGET = 1.5  # benchmark_render at least 1.5x its renders/s (benchmark_step: at least 1x, as everywhere)
TRAINING_TARGET = 0.95  # sb3_dqn, cleanrl_*: frames/s at least 0.95x the reference's (the target)
PPO_TARGET = 1.5  # sb3_ppo: rollout frames/s at least 1.5x DummyVecEnv's at 16 envs, and more than that at 64
GYM_TARGET = 0.5  # make_vec: numpy make_vec at least 0.5x the pure jitted scan

DQN_ENV = "Breakout-v0"  # sb3_dqn, cleanrl_* and sb3_ppo run on Breakout, the full action set on both sides
CLEANRL_TRAIN_FREQUENCY = 10  # CleanRL's default `--train-frequency` (not passed), used to read its SPS lines
QUICK_ENVS = ["CartPole-v1", "Doors-v0", "Breakout-v0"]
QUICK = {
    "repeats": 1,
    "steps": 300,
    "duration": 0.1,
    "dqn_timesteps": 2000,
    "cleanrl_timesteps": 2000,
    "ppo_steps": 16,
    "ppo_rollouts": 2,
    "min_time": 0.05,
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = options.parser(__doc__)
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"clients to run, of: {' '.join(CLIENTS)}")
    parser.add_argument("--quick", action="store_true", help=f"tiny counts: {QUICK}, envs {QUICK_ENVS}")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/clients"), help="output directory")
    parser.add_argument("--readme", type=Path, help=f"rewrite this file's text between {README_START} and the end")
    parser.add_argument("--from-results", action="store_true", help="measure nothing: rebuild from --out's files")
    parser.add_argument("--cleanrl", type=Path, help="a checkout of github.com/vwxyzjn/cleanrl (for cleanrl_*)")
    options.add_measurement(parser, repeats=3, min_time=0.3)
    options.add_envs(parser)
    parser.add_argument("--steps", type=int, default=5000, help="single: env steps per measurement")
    parser.add_argument("--duration", type=float, default=1.0, help="gymnasium_performance: target_duration, s")
    parser.add_argument("--dqn-timesteps", type=int, default=20000, help="sb3_dqn: total_timesteps of learn()")
    parser.add_argument(
        "--cleanrl-timesteps", type=int, default=20000, help="cleanrl_*: --total-timesteps (learning starts at half)"
    )
    parser.add_argument("--ppo-envs", nargs="+", type=int, default=[16, 64], help="sb3_ppo: numbers of envs K")
    parser.add_argument("--ppo-steps", type=int, default=128, help="sb3_ppo: n_steps per env per rollout")
    parser.add_argument("--ppo-rollouts", type=int, default=4, help="sb3_ppo: rollouts per learn() (first = warm-up)")
    parser.add_argument("--vec-size", type=int, default=1024, help="make_vec: num_envs")
    parser.add_argument(
        "--torch-threads", type=int, default=1, help="torch.set_num_threads here, OMP_NUM_THREADS for CleanRL"
    )
    args = parser.parse_args(argv)
    if args.quick:  # quick values replace the defaults; flags given explicitly still win
        parser.set_defaults(**QUICK, envs=QUICK_ENVS)
        args = parser.parse_args(argv)
    args.envs = [e.removeprefix("maxatar/") for e in options.env_ids(args)]  # single, gymnasium_performance, make_vec
    unknown = set(args.only or []) - set(CLIENTS)
    if unknown:
        parser.error(f"unknown client(s) {sorted(unknown)}; known: {' '.join(CLIENTS)}")
    return args


log = run.log


def sides(short: str) -> list[tuple[str, str]]:
    """[(side, Gymnasium id)]: MaxAtar's id and, where one exists, the reference's (registered by client_ids)."""
    pairs = [("maxatar", f"maxatar/{short}")]
    if short in REFERENCE_IDS:
        pairs.append(("reference", REFERENCE_IDS[short]))
    return pairs


def result_row(client: str, env: str, side: str, impl: str, runs: list[float], *, n: int = 1, variant="", **extra):
    """One side of one measurement: `runs` are rates per repeat (steps/s, frames/s, ...), median quoted."""
    row = {"client": client, "env": env, "variant": variant, "n": n, "side": side, "impl": impl, "runs": runs}
    return report.summarize({**row, **extra})


def medians(runs: list[dict], *keys: str) -> dict[str, float]:
    """The median over the repeats of each of `keys` (extra columns beside the quoted rate)."""
    return {key: Spread.of(result[key] for result in runs).median for key in keys}


# --- Rows and table cells, shared by the clients -------------------------------------------------------------


def paired(rows: list[dict]) -> dict[tuple, dict[str, dict]]:
    """(env, n, variant) -> {side: row}, in the rows' order."""
    pairs: dict[tuple, dict[str, dict]] = {}
    for row in rows:
        pairs.setdefault((row["env"], row["n"], row["variant"]), {})[row["side"]] = row
    return pairs


def ratio_of(ours: dict, ref: dict | None) -> float:
    return ours["steps_per_s"] / ref["steps_per_s"] if ref else math.nan


def verdicts(checks: list[tuple[str, bool]]) -> tuple[str, list[str]]:
    """The Target cell ("<target>: met; <target>: missed") and the missed targets."""
    return "; ".join(f"{name}: {'met' if ok else 'missed'}" for name, ok in checks), [n for n, ok in checks if not ok]


def rate(value) -> str:
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "-"
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def rate_cell(row: dict | None) -> str:
    return "-" if row is None else report.spread(row).format(rate)


def fmt_x(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}x"


def both(ours: dict, ref: dict | None, column: str, fmt: Callable) -> str:
    return " / ".join(fmt(row[column]) if row else "-" for row in (ours, ref))


# --- 1. single: a plain env.step loop -----------------------------------------------------------------------


class SingleEnv:
    """`gymnasium.make(env_id)` with its random actions drawn in advance; `measure` times every step."""

    def __init__(self, env_id: str, steps: int, seed: int = 0):
        # make + reset + first step (MaxAtar compiles here)
        self.env, self.first_step_s = timed(lambda: self._first_step(env_id, steps, seed))
        self.step_s: list[float] = []
        call_times(self._step, self.actions[:50])  # warm-up

    def _first_step(self, env_id: str, steps: int, seed: int) -> gymnasium.Env:
        env = gymnasium.make(env_id)
        env.reset(seed=seed)
        self.actions = np.random.default_rng(seed).integers(0, env.action_space.n, steps).tolist()
        env.step(self.actions[0])
        return env

    def _step(self, action: int) -> None:
        _, _, terminated, truncated, _ = self.env.step(action)
        if terminated or truncated:
            self.env.reset()

    def measure(self, _repeat) -> float:
        step_s, seconds = timed(lambda: call_times(self._step, self.actions))
        self.step_s += step_s
        return len(self.actions) / seconds


def measure_single(args, notes: list[str]) -> list[dict]:
    rows = []
    for short in args.envs:
        envs = {}
        for side, env_id in sides(short):
            try:
                envs[(side, env_id)] = SingleEnv(env_id, args.steps)
            except Exception as error:  # noqa: BLE001  (an id being rewritten is a note, not a crash)
                notes.append(f"single {short} {side}: {type(error).__name__}: {error}")
        runs = interleaved(args.repeats, {key: env.measure for key, env in envs.items()})
        for (side, env_id), env in envs.items():
            median_us = Spread.of(env.step_s).median * 1e6
            row = result_row("single", short, side, env_id, runs[(side, env_id)], median_step_us=median_us)
            row.update(mean_step_us=1e6 / row["steps_per_s"], first_step_s=env.first_step_s)
            rows.append(row)
            env.env.close()
        log("  " + ", ".join(f"{r['env']} {r['side']} {r['median_step_us']:.1f} us" for r in rows[-len(envs) :]))
    return rows


def table_single(rows: list[dict]) -> tuple[str, list[str]]:
    lines = [
        "| env | MaxAtar median step us | MaxAtar steps/s (min-max) | reference | reference median step us | "
        "reference steps/s (min-max) | x reference | first step s (MaxAtar / ref) | target |",
        "|" + "---|" * 9,
    ]
    missed = []
    for (env, _, _), pair in paired(rows).items():
        ours, ref = pair.get("maxatar"), pair.get("reference")
        if ours is None:
            continue
        ratio = ratio_of(ours, ref)
        checks = [(f"median step <= {SINGLE_STEP_US:g} us", ours["median_step_us"] <= SINGLE_STEP_US)]
        if ref is not None:
            checks.append((">= 1x reference", ratio >= 1.0))
        target, failed = verdicts(checks)
        missed += [f"single {env}: {c} (median step {ours['median_step_us']:.1f} us, {fmt_x(ratio)})" for c in failed]
        first = f"{ours['first_step_s']:.2f} / " + (f"{ref['first_step_s']:.3f}" if ref else "-")
        lines.append(
            f"| {env} | {ours['median_step_us']:.1f} | {rate_cell(ours)} | {ref['impl'] if ref else 'none'} | "
            + (f"{ref['median_step_us']:.1f} | {rate_cell(ref)}" if ref else "- | -")
            + f" | {fmt_x(ratio)} | {first} | {target} |"
        )
    return "\n".join(lines), missed


# --- 2. gymnasium_performance: Gymnasium's own benchmark functions ------------------------------------------

PERF_FUNCTIONS = {"benchmark_step": "steps/s", "benchmark_init": "inits/s", "benchmark_render": "renders/s"}
PERF_TARGETS = {"benchmark_step": 1.0, "benchmark_init": INIT_TARGET, "benchmark_render": RENDER_TARGET}


def performance_calls(env_id: str, duration: float) -> tuple[dict[str, Callable[[int], float]], list[str]]:
    """Function name -> `call(seed) -> rate` for one id, and the reasons for any function left out.

    benchmark_step gets an environment that has already stepped once (so a compile is not timed);
    benchmark_render one made with render_mode="rgb_array" and reset; benchmark_init makes its own."""
    from gymnasium.utils import performance

    calls, failed = {}, []
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    calls["benchmark_step"] = lambda seed: performance.benchmark_step(env, duration, seed=seed)
    calls["benchmark_init"] = lambda seed: performance.benchmark_init(lambda: gymnasium.make(env_id), duration, seed)
    try:
        render_env = gymnasium.make(env_id, render_mode="rgb_array")
        render_env.reset(seed=0)
        render_env.render()
        calls["benchmark_render"] = lambda seed: performance.benchmark_render(render_env, duration)
    except Exception as error:  # noqa: BLE001
        failed.append(f"benchmark_render: {type(error).__name__}: {error}")
    return calls, failed


def measure_gymnasium_performance(args, notes: list[str]) -> list[dict]:
    rows = []
    for short in args.envs:
        calls = {}
        for side, env_id in sides(short):
            try:
                side_calls, failed = performance_calls(env_id, args.duration)
            except Exception as error:  # noqa: BLE001
                notes.append(f"gymnasium_performance {short} {side}: {type(error).__name__}: {error}")
                continue
            notes += [f"gymnasium_performance {short} {side}: {reason}" for reason in failed]
            calls.update({(function, side, env_id): call for function, call in side_calls.items()})
        calls = dict(sorted(calls.items(), key=lambda item: list(PERF_FUNCTIONS).index(item[0][0])))
        runs = interleaved(args.repeats, calls)
        for function, side, env_id in calls:
            row_runs = runs[(function, side, env_id)]
            rows.append(result_row("gymnasium_performance", short, side, env_id, row_runs, variant=function))
        log("  " + ", ".join(f"{r['variant']} {r['side']} {rate(r['steps_per_s'])}" for r in rows[-len(calls) :]))
    return rows


def table_gymnasium_performance(rows: list[dict]) -> tuple[str, list[str]]:
    lines = [
        "| env | function | MaxAtar per s (min-max) | reference per s (min-max) | x reference | target |",
        "|" + "---|" * 6,
    ]
    missed = []
    for (env, _, function), pair in paired(rows).items():
        ours, ref = pair.get("maxatar"), pair.get("reference")
        if ours is None:
            continue
        ratio = ratio_of(ours, ref)
        if ref is None:
            target = "- (no reference)"
        else:
            at_least = PERF_TARGETS.get(function, 1.0)
            target, failed = verdicts([(f">= {at_least:g}x reference", ratio >= at_least)])
            missed += [f"gymnasium_performance {env} {function}: {c} ({fmt_x(ratio)})" for c in failed]
        unit = PERF_FUNCTIONS.get(function, "")
        lines.append(
            f"| {env} | {function} ({unit}) | {rate_cell(ours)} | {rate_cell(ref)} | {fmt_x(ratio)} | {target} |"
        )
    return "\n".join(lines), missed


# --- 3. sb3_dqn: DQN("MlpPolicy", env).learn(N) -------------------------------------------------------------


def measure_sb3_dqn(args, notes: list[str]) -> list[dict]:
    """SB3 wraps the env in its Monitor and a DummyVecEnv itself and flattens the bool Box observation in
    MlpPolicy's FlattenExtractor (cast to float in preprocess_obs), so no wrapper is needed on either side.
    frames/s = total_timesteps / wall time of `learn()` (model construction excluded; compile included)."""
    from stable_baselines3 import DQN

    def learn(env_id: str) -> Callable[[int], float]:
        def call(seed: int) -> float:
            env = gymnasium.make(env_id)
            model = DQN("MlpPolicy", env, seed=seed)
            _, elapsed = timed(lambda: model.learn(total_timesteps=args.dqn_timesteps))
            env.close()
            return args.dqn_timesteps / elapsed

        return call

    runs = interleaved(args.repeats, {(side, env_id): learn(env_id) for side, env_id in sides(DQN_ENV)})
    variant = f"{args.dqn_timesteps} timesteps"
    rows = [result_row("sb3_dqn", DQN_ENV, side, env_id, r, variant=variant) for (side, env_id), r in runs.items()]
    log("  " + ", ".join(f"{r['side']} {rate(r['steps_per_s'])} frames/s" for r in rows))
    return rows


def table_training(rows: list[dict], client: str, unit: str) -> tuple[str, list[str]]:
    """sb3_dqn and cleanrl_*: one line per (env, variant), target at least the reference's rate."""
    cleanrl = client.startswith("cleanrl")
    head = f"| env | run | MaxAtar {unit} (min-max) | reference {unit} (min-max) | x reference |"
    if cleanrl:
        head += " learning-phase SPS (MaxAtar / ref) | process wall s (MaxAtar / ref) |"
    lines = [head + " target |", "|" + "---|" * head.count("|")]  # one more column than head's: target
    missed = []
    for (env, _, variant), pair in paired(rows).items():
        ours, ref = pair.get("maxatar"), pair.get("reference")
        if ours is None:
            continue
        ratio = ratio_of(ours, ref)
        target, failed = verdicts([(f">= {TRAINING_TARGET}x reference", ratio >= TRAINING_TARGET)])
        missed += [f"{client} {env}: {c} ({fmt_x(ratio)})" for c in failed]
        line = f"| {env} | {variant} | {rate_cell(ours)} | {rate_cell(ref)} | {fmt_x(ratio)} |"
        if cleanrl:
            line += f" {both(ours, ref, 'learning_sps', rate)} | {both(ours, ref, 'wall_s', '{:.1f}'.format)} |"
        lines.append(line + f" {target} |")
    return "\n".join(lines), missed


# --- 4. cleanrl_dqn, cleanrl_dqn_jax: CleanRL's scripts, unchanged, as subprocesses -------------------------


def learning_phase_sps(sps: list[int], learning_starts: int, train_frequency: int = CLEANRL_TRAIN_FREQUENCY):
    """Steps per second between CleanRL's first and last `SPS:` print (compile and random phase left out).

    CleanRL prints `SPS: int(global_step / elapsed)` at every global_step > learning_starts that is a multiple
    of both 100 and train_frequency, so the k-th print is at a known step and its elapsed time follows."""
    if len(sps) < 2:
        return math.nan
    period = math.lcm(100, train_frequency)
    steps = [(learning_starts // period + 1 + k) * period for k in range(len(sps))]
    elapsed = [step / max(value, 1) for step, value in zip(steps, sps, strict=True)]
    return (steps[-1] - steps[0]) / (elapsed[-1] - elapsed[0]) if elapsed[-1] > elapsed[0] else math.nan


def run_cleanrl(script: Path, env_id: str, args, seed: int) -> dict:
    """`python <script> --env-id benchmarks.client_ids:<flat id> ...` in a scratch directory (its `runs/`
    TensorBoard logs go there), with `benchmarks` and `cleanrl_utils` importable; the script is unchanged."""
    learning_starts = args.cleanrl_timesteps // 2
    flags = f"--env-id benchmarks.client_ids:{env_id} --seed {seed} --total-timesteps {args.cleanrl_timesteps} "
    command = [sys.executable, str(script), *(flags + f"--learning-starts {learning_starts}").split()]
    paths = [str(REPO), str(args.cleanrl.resolve()), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    env["OMP_NUM_THREADS"] = str(args.torch_threads)  # torch's intra-op threads; the script is not edited
    with tempfile.TemporaryDirectory(prefix="cleanrl-") as cwd:
        done, wall_s = timed(
            lambda: subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
        )
    sps = [int(value) for value in re.findall(r"^SPS: (\d+)\s*$", done.stdout, re.MULTILINE)]
    if done.returncode or not sps:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"`{' '.join(command)}` exited {done.returncode}, {len(sps)} SPS lines: {tail}")
    return {"sps": sps[-1], "learning_sps": learning_phase_sps(sps, learning_starts), "wall_s": wall_s}


def cleanrl_client(script_name: str, modules: tuple[str, ...]):
    client = "cleanrl_" + script_name.removesuffix(".py")

    def measure(args, notes: list[str]) -> list[dict]:
        script = args.cleanrl / "cleanrl" / script_name if args.cleanrl else None
        if script is None or not script.exists():
            notes.append(
                f"{client}: skipped, no CleanRL checkout (pass --cleanrl DIR, a checkout of "
                f"github.com/vwxyzjn/cleanrl with cleanrl/{script_name}; got {args.cleanrl})"
            )
            return []
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if missing:
            notes.append(f"{client}: skipped, {script_name} needs {' '.join(missing)} (pip install them)")
            return []
        ours, theirs = FLAT_IDS[DQN_ENV]  # bench/MaxAtar-Breakout-flat-v0, bench/MinAtar-Breakout-flat-v0
        calls = {
            ("maxatar", ours): lambda seed: run_cleanrl(script, ours, args, seed),
            ("reference", theirs): lambda seed: run_cleanrl(script, theirs, args, seed),
        }
        results = interleaved(args.repeats, calls)
        variant = f"{script_name} {args.cleanrl_timesteps} steps"
        rows = []
        for (side, env_id), runs in results.items():
            extra = medians(runs, "learning_sps", "wall_s")
            rows.append(result_row(client, DQN_ENV, side, env_id, [r["sps"] for r in runs], variant=variant, **extra))
        log("  " + ", ".join(f"{r['side']} SPS {rate(r['steps_per_s'])}" for r in rows))
        return rows

    return measure


# --- 5. sb3_ppo: rollout collection, make_sb3_vec_env against DummyVecEnv ----------------------------------


def measure_sb3_ppo(args, notes: list[str]) -> list[dict]:
    """`PPO("MlpPolicy", venv, n_steps, batch_size=K*n_steps/4, n_epochs=1).learn(K*n_steps*rollouts)`, with
    a callback timing each `collect_rollouts` (on_rollout_start to on_rollout_end: env steps, policy forward,
    buffer, GAE). The quoted rate is rollout frames/s over the rollouts after the first (the first includes
    MaxAtar's compile; its time is reported apart); learn frames/s covers everything."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecEnvWrapper

    from maxatar.sb3 import make_sb3_vec_env

    class StepTimer(VecEnvWrapper):
        """Seconds spent inside the VecEnv's step (both sides do their work in `step_wait`)."""

        def __init__(self, venv):
            super().__init__(venv)
            self.seconds = 0.0

        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            out, seconds = timed(self.venv.step_wait)
            self.seconds += seconds
            return out

    class RolloutTimer(BaseCallback):
        """Seconds of each rollout: SB3 calls into it at the start and at the end, so it keeps its own clock."""

        def __init__(self, steps: StepTimer):
            super().__init__()
            self.steps = steps
            self.durations: list[float] = []
            self.env_seconds: list[float] = []

        def _on_rollout_start(self) -> None:
            self._start, self._env_start = time.perf_counter(), self.steps.seconds

        def _on_rollout_end(self) -> None:
            self.durations.append(time.perf_counter() - self._start)
            self.env_seconds.append(self.steps.seconds - self._env_start)

        def _on_step(self) -> bool:
            return True

    makers = {  # as users build them: SB3's Monitor on each reference env; the adapter reports episodes itself
        "maxatar": lambda k, seed: make_sb3_vec_env(f"maxatar/{DQN_ENV}", num_envs=k, seed=seed),
        "reference": lambda k, seed: make_vec_env(REFERENCE_IDS[DQN_ENV], n_envs=k, seed=seed),
    }

    def learn(side: str, k: int) -> Callable[[int], dict]:
        def call(seed: int) -> dict:
            venv = StepTimer(makers[side](k, seed))
            n = args.ppo_steps
            model = PPO("MlpPolicy", venv, n_steps=n, batch_size=max(1, k * n // 4), n_epochs=1, seed=seed)
            timer = RolloutTimer(venv)
            _, learn_s = timed(lambda: model.learn(total_timesteps=k * n * args.ppo_rollouts, callback=timer))
            venv.close()
            steady = slice(1, None) if len(timer.durations) > 1 else slice(None)
            frames = k * n * len(timer.durations[steady])
            return {
                "rollout": frames / sum(timer.durations[steady]),
                "env_fps": frames / sum(timer.env_seconds[steady]),
                "env_share": sum(timer.env_seconds[steady]) / sum(timer.durations[steady]),
                "learn_fps": model.num_timesteps / learn_s,
                "first_rollout_s": timer.durations[0],
            }

        return call

    rows = []
    for k in args.ppo_envs:
        results = interleaved(args.repeats, {side: learn(side, k) for side in makers})
        for side, runs in results.items():
            impl = "make_sb3_vec_env" if side == "maxatar" else "DummyVecEnv of Monitor(MinAtar env)"
            extra = medians(runs, "learn_fps", "first_rollout_s", "env_fps", "env_share")
            rollout = [r["rollout"] for r in runs]
            rows.append(result_row("sb3_ppo", DQN_ENV, side, impl, rollout, n=k, variant=f"{k} envs", **extra))
        log(f"  K={k}: " + ", ".join(f"{r['side']} {rate(r['steps_per_s'])} frames/s" for r in rows[-2:]))
    return rows


def table_sb3_ppo(rows: list[dict]) -> tuple[str, list[str]]:
    lines = [
        "| env | K envs | rollout frames/s MaxAtar (min-max) | rollout frames/s reference (min-max) | x reference | "
        "env step frames/s (MaxAtar / ref) | env share of rollout (MaxAtar / ref) | "
        "learn frames/s (MaxAtar / ref) | first rollout s (MaxAtar / ref) | target |",
        "|" + "---|" * 10,
    ]
    missed, ratios = [], {}
    for (env, k, _), pair in sorted(paired(rows).items(), key=lambda item: item[0][1]):
        ours, ref = pair.get("maxatar"), pair.get("reference")
        if ours is None or ref is None:
            continue
        ratio = ratios[k] = ratio_of(ours, ref)
        smaller = [ratios[j] for j in ratios if j < k]
        checks = [(f">= {PPO_TARGET:g}x reference", ratio >= PPO_TARGET)]
        if smaller:
            checks.append((f"more than at K={max(j for j in ratios if j < k)}", ratio > smaller[-1]))
        target, failed = verdicts(checks)
        missed += [f"sb3_ppo {env} K={k}: {c} ({fmt_x(ratio)})" for c in failed]
        lines.append(
            f"| {env} | {k} | {rate_cell(ours)} | {rate_cell(ref)} | {fmt_x(ratio)} | "
            f"{both(ours, ref, 'env_fps', rate)} | {both(ours, ref, 'env_share', '{:.0%}'.format)} | "
            f"{both(ours, ref, 'learn_fps', rate)} | {both(ours, ref, 'first_rollout_s', '{:.2f}'.format)} | "
            f"{target} |"
        )
    return "\n".join(lines), missed


# --- 6. make_vec: benchmarks.run's Gymnasium path ----------------------------------------------------------


def measure_make_vec(args, notes: list[str]) -> list[dict]:
    """`run.measure_gym` at N = --vec-size against the faster of MaxAtar's two pure stepping modes at that N
    (as benchmarks.run keeps the faster one), params baked in as there by default."""
    from benchmarks.harness import JaxRunner
    from benchmarks.impls import ceiling_impl, maxatar_impls

    options = SimpleNamespace(
        gym_size=args.vec_size,
        repeats=args.repeats,
        min_time=args.min_time,
        steps=128,
        call_budget=65536,
        traced_params=False,
    )
    JaxRunner(ceiling_impl((4,), "float32", True, 2), 2, 4).close()  # one-time compile costs, as in run.main
    rows = []
    for short in args.envs:
        env_id = f"maxatar/{short}"
        try:
            impls = maxatar_impls(env_id)
            speeds = []
            for impl in impls:
                runner = JaxRunner(impl, args.vec_size, run.scan_length(args.vec_size, options), options.traced_params)
                speeds.append(runner.measure(args.min_time))
                runner.close()
            env_rows = run.measure_gym(env_id, impls[int(np.argmax(speeds))], options)
        except Exception as error:  # noqa: BLE001
            notes.append(f"make_vec {short}: {type(error).__name__}: {error}")
            continue
        for row in env_rows:
            row["client"] = "make_vec"
        rows += env_rows
        log("  " + ", ".join(f"{r['path']} {rate(r['steps_per_s'])}" for r in env_rows))
    return rows


def table_make_vec(rows: list[dict]) -> tuple[str, list[str]]:
    """benchmarks.run's Gymnasium table, with a target column: numpy make_vec at least GYM_TARGET x the pure scan."""
    lines, missed = report.gym_summary(rows).splitlines(), []
    for i, line in enumerate(lines):
        if i < 2:
            lines[i] = line + (" target |" if i == 0 else "---|")
            continue
        env, ratio = line.split(" | ")[0].strip("| "), float(line.split(" | ")[4].removesuffix("x"))
        cell, failed = verdicts([(f">= {GYM_TARGET}x pure", ratio >= GYM_TARGET)])
        lines[i] = f"{line} {cell} |"
        missed += [f"make_vec {env}: {c} ({ratio:.2f}x)" for c in failed]
    return "\n".join(lines), missed


# --- The clients ----------------------------------------------------------------------------------------

COLUMNS = ["client", "env", "variant", "n", "side", "impl", "steps_per_s", "min_steps_per_s", "max_steps_per_s"]


@dataclasses.dataclass
class Client:
    title: str  # what is measured, one line
    measure: Callable[[argparse.Namespace, list[str]], list[dict]]
    table: Callable[[list[dict]], tuple[str, list[str]]]
    columns: list[str]


CLIENTS = {
    "single": Client(
        "`gymnasium.make(id)` stepped in a plain Python loop (one env, random actions drawn in advance, reset "
        "when an episode ends; each step timed, the reset inside its step); MinAtar's own Gymnasium env and "
        "Gymnasium's CartPole-v1 as references",
        measure_single,
        table_single,
        COLUMNS + ["median_step_us", "mean_step_us", "first_step_s", "runs"],
    ),
    "gymnasium_performance": Client(
        "`gymnasium.utils.performance.benchmark_step(env, target_duration, seed)`, `benchmark_init(lambda: "
        "gymnasium.make(id), ...)` and `benchmark_render(env, ...)` (render_mode='rgb_array'), as other projects "
        "quote them; the stepped env has stepped once before",
        measure_gymnasium_performance,
        table_gymnasium_performance,
        COLUMNS + ["runs"],
    ),
    "sb3_dqn": Client(
        "Stable-Baselines3 `DQN('MlpPolicy', gymnasium.make(id), seed=repeat).learn(N)` (SB3's defaults; no "
        "observation wrapper on either side: MlpPolicy flattens the bool Box itself); frames/s = N / learn() wall "
        "time, MaxAtar's compile included",
        measure_sb3_dqn,
        lambda rows: table_training(rows, "sb3_dqn", "frames/s"),
        COLUMNS + ["runs"],
    ),
    "cleanrl_dqn": Client(
        "CleanRL's `cleanrl/dqn.py`, unchanged, run as `python cleanrl/dqn.py --env-id "
        "benchmarks.client_ids:bench/<side>-Breakout-flat-v0 --total-timesteps N --learning-starts N/2 --seed "
        "repeat` (flat float32 observations on both sides, see benchmarks/client_ids.py); the SPS is CleanRL's own "
        "last `SPS:` line (global_step / time since start, compile included)",
        cleanrl_client("dqn.py", ("tyro", "tensorboard")),
        lambda rows: table_training(rows, "cleanrl_dqn", "SPS"),
        COLUMNS + ["learning_sps", "wall_s", "runs"],
    ),
    "cleanrl_dqn_jax": Client(
        "CleanRL's `cleanrl/dqn_jax.py`, unchanged, with the same flags and ids as cleanrl_dqn",
        cleanrl_client("dqn_jax.py", ("tyro", "tensorboard", "flax", "optax")),
        lambda rows: table_training(rows, "cleanrl_dqn_jax", "SPS"),
        COLUMNS + ["learning_sps", "wall_s", "runs"],
    ),
    "sb3_ppo": Client(
        "SB3 `PPO('MlpPolicy', venv, n_steps, batch_size=K*n_steps/4, n_epochs=1)`: frames/s of "
        "`collect_rollouts` (timed by a callback, the first rollout left out) with `VecMonitor(maxatar.sb3."
        "make_sb3_vec_env('maxatar/Breakout-v0', num_envs=K))` against `make_vec_env('MinAtar/Breakout-v0', "
        "n_envs=K)` (SB3's DummyVecEnv of Monitor-wrapped envs)",
        measure_sb3_ppo,
        table_sb3_ppo,
        COLUMNS + ["learn_fps", "env_fps", "env_share", "first_rollout_s", "runs"],
    ),
    "make_vec": Client(
        "`gymnasium.make_vec('maxatar/<id>', num_envs=N)` with numpy outputs stepped from Python, against the "
        "pure jitted `lax.scan` of the same env at the same N (benchmarks.run's Gymnasium path, its functions)",
        measure_make_vec,
        table_make_vec,
        ["client"] + report.GYM_COLUMNS,
    ),
}


# --- Machine, files, README --------------------------------------------------------------------------------

# The software of the clients, named in their run lines beside benchmarks.measure.PACKAGES.
CLIENT_PACKAGES = ("torch", "stable_baselines3", "tyro", "tensorboard", "flax", "optax")


def cleanrl_commit(path: Path | None) -> str:
    if path is None:
        return "no CleanRL checkout"
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return f"CleanRL {done.stdout.strip()[:12]}" if done.returncode == 0 else f"CleanRL at {path} (not a git checkout)"


def set_torch_threads(count: int) -> str:
    if importlib.util.find_spec("torch") is None:
        return "torch not installed"
    import torch

    torch.set_num_threads(count)
    return (
        f"torch threads {torch.get_num_threads()} (torch.set_num_threads in this process; OMP_NUM_THREADS={count} "
        "for the CleanRL subprocesses); JAX's CPU thread pool left at its default"
    )


def load_meta(out: Path) -> dict:
    path = out / "meta.json"
    return json.loads(path.read_text()) if path.exists() else {"clients": {}}


def save_meta(out: Path, meta: dict) -> None:
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def load_rows(out: Path, name: str) -> list[dict] | None:
    path = out / f"{name}.csv"
    return report.read_csv(path) if path.exists() else None


def without_target(table: str) -> str:
    """A client's table for the docs page: what was measured, without the last column (the target and whether
    the run met it, which results.md keeps)."""
    lines = table.splitlines()
    return "\n".join(line[: line.rstrip(" |").rindex("|") + 1] if line.startswith("|") else line for line in lines)


def client_markdown(name: str, rows: list[dict], meta: dict, readme: bool = False) -> tuple[str, list[str]]:
    """The client's title, the run that measured it, its table and skip notes; and the targets it missed. For the
    docs page (`readme`) the table leaves the targets out."""
    client = CLIENTS[name]
    table, missed = client.table(rows) if rows else ("No results.", [])
    table = without_target(table) if readme else table
    title = f"**`{name}`**: {client.title}." if readme else f"## {name}\n\n{client.title}."
    setup = [meta["torch"]]
    if name.startswith("cleanrl"):
        setup.append(meta.get("cleanrl", "CleanRL commit not recorded"))
    parts = [title, Run.from_record(meta).line(*setup), table]
    if meta.get("notes"):
        parts.append("Skipped or failed:\n\n" + "\n".join(f"- {note}" for note in meta["notes"]))
    if later := meta.get("skipped_since"):
        why = "; ".join(later["notes"]) or "no reason given"
        parts.append(
            f"A later run (`{later['command']}`, started {later['started']}) measured nothing, so these results "
            f"are kept: {why}."
        )
    return "\n\n".join(parts), missed


def write_outputs(args) -> None:
    """results.md (and the --readme section) from every client's CSV and meta.json in --out."""
    meta = load_meta(args.out)["clients"]
    names = [n for n in CLIENTS if n in meta and (not args.only or n in args.only or not args.from_results)]
    sections, readme_parts, missed = [], [], []
    for name in names:
        rows = load_rows(args.out, name) or []
        text, client_missed = client_markdown(name, rows, meta[name])
        sections.append(text)
        readme_parts.append(client_markdown(name, rows, meta[name], readme=True)[0])
        missed += client_missed
    header = [
        "# MaxAtar in real clients",
        "Generated by `python -m benchmarks.clients` (see benchmarks/README.md, section Clients). MaxAtar and the "
        "reference are measured alternately in the same run; ratios are MaxAtar over the reference. Each client's "
        "run line names the machine and the software it was measured with.",
    ]
    missed_text = "Targets missed: " + ("none." if not missed else "\n\n" + "\n".join(f"- {m}" for m in missed))
    (args.out / "results.md").write_text("\n\n".join(header + sections + [missed_text]) + "\n")
    log(f"wrote {args.out / 'results.md'}")
    if args.readme:
        section = "\n\n".join(
            [
                README_START,
                "<!-- Generated by `python -m benchmarks.clients ... --readme docs/performance/clients.md`; "
                "edit benchmarks/clients.py, "
                "not this. -->",
                "MaxAtar against the reference in the clients users run it in, measured alternately in the same run "
                "(ratios: MaxAtar over the reference); each client's run line names its machine. Full tables and CSV: "
                f"`{args.out}/`.",
                *readme_parts,
                README_END,
            ]
        )
        replace_section(args.readme, section, README_START, README_END)
        log(f"rewrote the clients section of {args.readme}")


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.from_results:
        write_outputs(args)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    torch_note = set_torch_threads(args.torch_threads)
    where = machine(PACKAGES, CLIENT_PACKAGES)
    cleanrl = cleanrl_commit(args.cleanrl)
    log(f"{where}; {cleanrl}\n{torch_note}")
    for name in args.only or CLIENTS:
        run = Run(command(__spec__.name, argv), args.repeats, where)
        log(f"{name} (load {run.load_start}):")
        notes: list[str] = []
        try:
            rows = CLIENTS[name].measure(args, notes)
        except Exception as error:  # noqa: BLE001  (one broken client must not lose the others' results)
            rows = []
            notes.append(f"{name}: failed: {type(error).__name__}: {error}")
        for note in notes:
            log(f"  {note}")
        if not rows and load_rows(args.out, name):  # a missing dependency must not erase what was measured
            log(f"  {name}: nothing measured; its previous results in {args.out} are kept")
            meta = load_meta(args.out)  # ... but the tables say that a later attempt measured nothing, and why
            meta["clients"][name]["skipped_since"] = {"command": run.command, "started": run.started, "notes": notes}
            save_meta(args.out, meta)
            continue
        report.write_csv(args.out / f"{name}.csv", rows, CLIENTS[name].columns)
        meta = load_meta(args.out)
        meta["clients"][name] = {
            **run.finish().record(),
            "torch": torch_note,
            "cleanrl": cleanrl,
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "notes": notes,
        }
        save_meta(args.out, meta)
        log(client_markdown(name, load_rows(args.out, name) or [], meta["clients"][name])[0] + "\n")
    write_outputs(args)


if __name__ == "__main__":
    main()
