"""PureJaxRL-style rollout throughput: `maxatar.gymnax` against gymnax itself, same code, same run.

    python -m benchmarks.gymnax_facade                          # N=1024, 128 steps per call, median of 5
    python -m benchmarks.gymnax_facade --n 64 --steps 16 --repeats 3 --envs Breakout-MinAtar CartPole-v1 --out /tmp/g.md
    python -m benchmarks.gymnax_facade --statistics --n 4096    # maxatar.EpisodeStatistics beside AutoReset
    python -m benchmarks.gymnax_facade --from-results --readme docs/guides/gymnax.md   # the guide's table, from RESULTS

Both libraries go through one rollout function, written as PureJaxRL writes it: `jax.vmap(env.reset)`, then a
`lax.scan` whose body draws actions with `jax.vmap(env.action_space(params).sample)` over per-environment keys and
calls `jax.vmap(env.step)` (which auto-resets), with `env_params` closed over as PureJaxRL's `make_train` does.
Only the `make` differs: the facade in its default mode (gymnax 1.x's API), the facade with
`legacy_step_api=True` (0.0.x's) and gymnax. Each repeat calls the compiled rollout of `--steps` steps of `--n`
environments until `--min-time` seconds have passed; the repeats are interleaved, so load from other jobs hits
all alike; the table shows the medians with their range. `--statistics` times instead the same rollout through
the pure API, `maxatar.AutoReset` against `maxatar.EpisodeStatistics` around it (the episode bookkeeping's cost).

`--setting gymnax` (default) compares like with like: MaxAtar is made with gymnax's defaults
(`maxatar.gymnax.GYMNAX_SETTINGS`: minimal action set, no sticky actions, gymnax's time limits). `--setting
minatar` runs MaxAtar with its own defaults (MinAtar's: sticky 0.1, full action set, no limit) and gymnax with the
full action set (gymnax has no sticky actions and keeps its time limit). gymnax is optional: without it the table
has MaxAtar's column only and says "gymnax not installed". gymnax >= 1.0 returns six values from `step`, 0.0.x
five; the rollout reads the first three, which both agree on.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

import maxatar
from benchmarks import options
from benchmarks.measure import Run, Spread, command, interleaved, publish, rate_for, timed
from benchmarks.pages import replace_section
from maxatar import gymnax as facade

ENV_IDS = list(facade.GYMNAX_IDS)  # the five MinAtar games and CartPole-v1, by gymnax's names
RESULTS = Path("benchmarks/results/gymnax_facade.md")  # the committed run the gymnax guide's table comes from
README_START, README_END = "<!-- gymnax-facade:start -->", "<!-- gymnax-facade:end -->"
HEADER = (
    "| env | maxatar.gymnax steps/s, median (min-max) | legacy_step_api=True | gymnax | ratio to gymnax "
    "(default / legacy) | compile s (default / legacy / gymnax) |"
)


def make_rollout(env, params, n: int, steps: int, sample):
    """`rollout(carry) -> carry`, PureJaxRL's shape: `steps` vmapped steps of `n` environments in a scan. The
    carry keeps the observation and a reward sum, so XLA cannot drop any of the work."""

    def rollout(carry):
        def body(carry, key):
            obs, state, total = carry
            k_act, k_step = jax.random.split(key)
            action = jax.vmap(sample)(jax.random.split(k_act, n))
            out = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(k_step, n), state, action, params)
            obs, state, reward = out[0], out[1], out[2]
            return (obs, state, total + reward.sum()), None

        key, (obs, state, total) = carry
        key, scan_key = jax.random.split(key)
        (obs, state, total), _ = jax.lax.scan(body, (obs, state, total), jax.random.split(scan_key, steps))
        return key, (obs, state, total)

    return rollout


class Runner:
    """One library on one environment: reset, compile (timed), warm up, then timed calls. `sample` draws an
    action from a key (default: `env.action_space(params).sample`, as PureJaxRL does)."""

    def __init__(self, env, params, n: int, steps: int, seed: int = 0, sample=None):
        self.work = n * steps
        sample = env.action_space(params).sample if sample is None else sample
        key, reset_key = jax.random.split(jax.random.key(seed))
        obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(reset_key, n), params)
        carry = (key, (obs, state, jnp.float32(0.0)))
        rollout = jax.jit(make_rollout(env, params, n, steps, sample), donate_argnums=0)
        self.rollout, self.compile_s = timed(lambda: rollout.lower(carry).compile())
        self.carry = jax.block_until_ready(self.rollout(carry))

    def _call(self) -> None:
        self.carry = jax.block_until_ready(self.rollout(self.carry))

    def measure(self, min_time: float) -> float:
        """Steps/s over compiled calls until `min_time` seconds have passed (one repeat)."""
        return self.work * rate_for(self._call, min_time)


def make_envs(env_id: str, setting: str, gymnax_module) -> dict:
    """{"ours": the facade, "legacy": the facade with `legacy_step_api`, "gymnax": gymnax's where installed},
    each (env, params), for one id under one setting."""
    minatar = env_id.endswith("-MinAtar")
    if setting == "gymnax":
        ours, theirs_kwargs = facade.GYMNAX_SETTINGS[env_id], {}
    else:
        ours, theirs_kwargs = {}, ({"use_minimal_action_set": False} if minatar else {})
    envs = {"ours": facade.make(env_id, **ours), "legacy": facade.make(env_id, legacy_step_api=True, **ours)}
    if gymnax_module is not None:
        envs["gymnax"] = gymnax_module.make(env_id, **theirs_kwargs)
    return envs


def rate(x: float) -> str:
    """Steps/s as the repository's other tables print them (3.142M, 512.0k)."""
    return f"{x / 1e6:.3f}M" if x >= 1e6 else f"{x / 1e3:.1f}k"


def measured(runners: dict, args) -> dict:
    """{name: Spread of steps/s} of the runners' interleaved repeats."""
    runs = interleaved(args.repeats, {k: lambda _, r=r: r.measure(args.min_time) for k, r in runners.items()})
    return {k: Spread.of(v) for k, v in runs.items()}


def statistics_row(env_id: str, env, params, args) -> str:
    """The pure API's rollout through `AutoReset` and through `EpisodeStatistics` around it: the ratio is what
    the episode statistics cost."""
    auto = maxatar.AutoReset(env.env)
    sample = facade.Discrete(env.num_actions).sample
    runners = {
        "bare": Runner(auto, params, args.n, args.steps, sample=sample),
        "stats": Runner(maxatar.EpisodeStatistics(auto), params, args.n, args.steps, sample=sample),
    }
    rates = measured(runners, args)
    cells = [
        rates["bare"].format(rate),
        rates["stats"].format(rate),
        f"{rates['stats'].median / rates['bare'].median:.2f}x",
    ]
    return f"| {env_id} | " + " | ".join(cells) + " |"


def guide_section(results: str) -> str:
    """The gymnax guide's speed table, from the text a run wrote with `--out` (its run line, its settings line and
    its table of `HEADER`): the medians, the ratios and the compile times."""
    lines = results.strip().splitlines()
    if HEADER not in lines:
        raise ValueError(f"{RESULTS} holds no table of the facade against gymnax (a --statistics run?)")
    run, setting = lines[0].removeprefix("Run: "), next(line for line in lines if line.startswith("N="))
    median = lambda cell: cell.split(" (")[0]  # "1.795M (1.766M-1.947M)": the median
    table = [
        "| env | facade, gymnax 1.x API (steps/s) | facade, `legacy_step_api=True` | gymnax | facade / gymnax "
        "(1.x / legacy) | compile s (1.x / legacy / gymnax) |",
        "|---|---|---|---|---|---|",
    ]
    for row in lines[lines.index(HEADER) + 2 :]:
        if not row.startswith("| "):
            break
        env, ours, legacy, theirs, ratio, compile_s = (cell.strip() for cell in row.strip("| ").split(" | "))
        table.append(f"| {env} | {median(ours)} | {median(legacy)} | {median(theirs)} | {ratio} | {compile_s} |")
    return "\n\n".join(
        [
            README_START,
            "<!-- Generated by `python -m benchmarks.gymnax_facade --from-results --readme docs/guides/gymnax.md` "
            f"from {RESULTS}; edit benchmarks/gymnax_facade.py, not this. -->",
            f"{setting} Run: {run}",
            "\n".join(table),
            README_END,
        ]
    )


def main(argv=None) -> None:
    """Parse the flags, build the facade in both modes and gymnax per id, time them interleaved and print the
    markdown tables (or, with --from-results, write the guide's table from the committed ones)."""
    parser = options.parser(__doc__)
    parser.add_argument("--envs", nargs="+", default=ENV_IDS, help="gymnax ids (default: the five games, CartPole)")
    parser.add_argument("--n", type=int, default=1024, help="environments (vmapped)")
    parser.add_argument("--steps", type=int, default=128, help="scan steps per compiled call")
    options.add_measurement(parser, repeats=5, min_time=0.3)
    parser.add_argument("--setting", choices=["gymnax", "minatar"], default="gymnax")
    parser.add_argument(
        "--statistics", action="store_true", help="time maxatar.EpisodeStatistics against the bare AutoReset instead"
    )
    options.add_out(parser)
    parser.add_argument("--from-results", action="store_true", help=f"measure nothing: --readme from {RESULTS}")
    parser.add_argument("--readme", type=Path, help="rewrite the page's gymnax-facade section (docs/guides/gymnax.md)")
    args = parser.parse_args(argv)
    if args.from_results:
        if args.readme is None:
            parser.error("--from-results writes --readme PAGE")
        replace_section(args.readme, guide_section(RESULTS.read_text()), README_START, README_END)
        print(f"rewrote the gymnax-facade section of {args.readme}")
        return

    try:
        import gymnax as gymnax_module
    except ImportError:
        gymnax_module = None
    run = Run(command(__spec__.name, argv), args.repeats)  # its line names gymnax's version
    lines = [HEADER, "|---|---|---|---|---|---|"]
    statistics = [
        "| env | AutoReset steps/s, median (min-max) | EpisodeStatistics(AutoReset) | ratio |",
        "|---|---|---|---|",
    ]
    for env_id in args.envs:
        envs = make_envs(env_id, args.setting, gymnax_module)
        if args.statistics:
            statistics.append(statistics_row(env_id, *envs["ours"], args))
            print(f"measured {env_id}", file=sys.stderr, flush=True)
            continue
        runners = {k: Runner(*envs[k], args.n, args.steps) for k in ("ours", "legacy")}
        reason = "gymnax not installed"
        if "gymnax" in envs:
            try:
                runners["gymnax"] = Runner(*envs["gymnax"], args.n, args.steps)
            except Exception as error:  # a peer's failure is a table cell, not a crash
                reason = f"gymnax failed: {type(error).__name__}: {str(error).splitlines()[0][:80]}"
        rates = measured(runners, args)
        compile_s = " / ".join(
            f"{runners[k].compile_s:.2f}" if k in runners else "-" for k in ("ours", "legacy", "gymnax")
        )
        if "gymnax" not in rates:
            ratio = "-"
        else:
            ratio = " / ".join(f"{rates[k].median / rates['gymnax'].median:.2f}x" for k in ("ours", "legacy"))
        theirs = rates["gymnax"].format(rate) if "gymnax" in rates else reason
        row = [rates["ours"].format(rate), rates["legacy"].format(rate), theirs, ratio, compile_s]
        lines.append(f"| {env_id} | " + " | ".join(row) + " |")
        print(f"measured {env_id}", file=sys.stderr, flush=True)
    setting = f"N={args.n}, {args.steps} steps per call, {args.min_time} s per measurement; setting {args.setting}."
    publish(run, [setting, "\n".join(statistics if args.statistics else lines)], args.out)


if __name__ == "__main__":
    main()
