"""The command line shared by the agents: `python -m maxatar_agents.<algorithm>` with options generated from
the algorithm's `Config` (each field an option, its documentation the help: `fields.knob`), a config from preset and
overrides, then a run of the program one interval at a time (`runner`) with a progress bar, checkpoints
and, at the end, the artefacts (`artifacts`).

`--devices all|N` splits the seed axis over a 1-D mesh of devices (`maxatar.sharding`, `shard_map`): every
device trains its share of the seeds with the program one device runs for that many seeds, so a run on D
devices equals, bit for bit, the one-device runs of each device's group of seeds (and the one-device run of
all seeds up to float rounding: XLA may round a batch of 2 seeds differently from a batch of 1). With
`--distributed`, `jax.distributed.initialize` joins several processes (hosts) first and the mesh spans the
devices of all of them; every process runs the same command and process 0 writes the artefacts.

A float field (or `sticky_action_prob`) given a comma list (`--lr 1e-4,3e-4,1e-3`, or `--set lr=...`) is
swept (`grid`): every seed trains with every combination of the listed values, all in the one program, and
--out receives one directory per combination besides sweep.csv, sweep.json and sweep.png.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import shutil
import sys
import tempfile
import time
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from maxatar import files, memory, sharding
from maxatar.checks import InputError, check_key_seeds
from maxatar_agents.algorithms import grid
from maxatar_agents.algorithms.fields import config_error_text, field_help, field_types
from maxatar_agents.algorithms.offline import OfflineConfig
from maxatar_agents.algorithms.registry import agent_module
from maxatar_agents.run import artifacts, checkpoint, configs, datasets, interrupts, runner, saved
from maxatar_agents.run.configs import (
    Parser,
    canonical_env_id,
    config_diff,
    config_from_dict,
    config_to_dict,
    default_preset,
    parse_value,
)
from maxatar_agents.run.interrupts import stops_like_ctrl_c
from maxatar_agents.run.runner import compiled  # noqa: F401  (the name benchmarks and tests have always used)

EXIT_INTERRUPTED = 130
# Options older than the generated ones that name a config field: --env is --env-id.
# Second spellings of field options: `--frames` is `--total-steps` (frames per seed), as the sweep takes both.
FIELD_ALIASES = {"env_id": ["--env"], "total_steps": ["--frames"]}
# The config fields among the options a first run needs, which `--help` shows first (with --seeds, --out,
# --preset and --resume), and how it names their values.
FIRST_FIELDS = {"env_id": "ID", "total_steps": "N"}


class UsageError(Exception):
    """Bad command-line input; reported as `error: ...` with exit status 2."""


# --- what a run reports to whoever watches it ---


class RunHooks:
    """What a run tells whoever watches it, Brax's `train(..., progress_fn)` as an object: the rows of each
    finished interval, the files of a finished run, and how it ended. The run knows no hooks: a layer above
    hands one in (`Extension`), as `--track` does (`maxatar_agents.experiments.tracking`). These do nothing."""

    def log_metrics(self, step: int, rows: list[dict[str, Any]], labels: Iterable[str] = ("seed",)) -> None:
        """After each interval: `step` frames per seed so far, the interval's metrics rows, their label columns."""

    def log_artifacts(self, paths: Iterable[Path]) -> None:
        """At the end of a finished run: the files it wrote (those that exist)."""

    def finish(self, summary: dict[str, Any] | None = None, status: str = "FINISHED") -> None:
        """Last: the summary of a finished run, or a status (KILLED, FAILED) without one."""


class Extension(typing.NamedTuple):
    """Options a layer above this one adds to every agent's command line (`add_options(group)`, the argparse group
    of the run options after the first ones), and the hooks it makes from them for a run (`hooks(args, plan,
    out, lead) -> RunHooks`, after the plan is made; a ValueError is a usage error)."""

    add_options: Callable[[Any], None]
    hooks: Callable[[argparse.Namespace, runner.Plan, Path, bool], RunHooks]


# --- the parser, generated from the config dataclass ---


def _metavar(kind: Any) -> str:
    """How `--help` shows a field's type: INT, FLOAT, BOOL, INT,INT,... and `|none` when None is allowed."""
    text = str(kind).replace("typing.", "").replace("<class '", "").replace("'>", "")
    text = text.replace("tuple[int, ...]", "INT,INT,...").replace(" | None", "|none")
    return text.upper().replace("|NONE", "|none")


def build_parser(
    algorithm: str, module, extension: Extension | None = None, prog: str | None = None
) -> argparse.ArgumentParser:
    """The options a first run needs (`FIRST_OPTIONS`), then the other run options (and the `extension`'s),
    then one `--field-name VALUE` option per config field, typed and documented from the dataclass, so a new
    field is on the command line without any code here."""
    prog = prog or f"python -m maxatar_agents.{algorithm}"
    fields = ", ".join(f.name for f in dataclasses.fields(module.Config))
    parser = Parser(
        prog=prog,
        usage=f"{prog} --out DIR [--env ID] [--frames N] [--seeds N] [--preset NAME] [--resume] [OPTION ...]",
        description=f"Train {algorithm.upper()} on a MaxAtar environment (all seeds in one jitted program).",
        epilog=f"config fields for --set: {fields}",
    )
    # argparse's first group ("options", with --help): what a first run needs, in the order a newcomer reads it.
    add_field = functools.partial(_add_field_option, helps=field_help(module.Config))
    types = field_types(module.Config)
    for name, metavar in FIRST_FIELDS.items():
        add_field(parser, name, types[name], metavar=metavar)
    parser.add_argument("--seeds", type=int, metavar="N", help="number of seeds trained together (default 1)")
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output directory (metrics, summary, plot, checkpoints)"
    )
    chosen = ", ".join(f"{preset} on {env_id.split('/')[-1]}" for env_id, preset in configs.env_presets(module).items())
    parser.add_argument(
        "--preset",
        metavar="NAME",
        help=f"one of: {', '.join(module.PRESETS)}, or a JSON file of field values such as a sweep's "
        f"best_preset.json (default: chosen from --env: {chosen}, {module.DEFAULT_PRESET} otherwise)",
    )
    parser.add_argument("--resume", action="store_true", help="continue the run whose checkpoint is in --out")

    run = parser.add_argument_group("more run options")
    run.add_argument("--seed", type=int, help="first seed; seed i uses PRNGKey(seed + i) (default 0)")
    run.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="override a config field (repeatable)"
    )
    run.add_argument(
        "--checkpoint-every",
        type=int,
        help="frames between checkpoints, rounded to whole logging intervals (0: after every interval; "
        "default: a tenth of the run)",
    )
    run.add_argument(
        "--stop-at-return",
        type=float,
        metavar="R",
        help="end training once every seed's (and swept value's) mean return over its last 100 training episodes "
        "has reached R (checked after each logging interval), then evaluate and write the files as for a finished "
        "run; --resume continues it to the run's full frames",
    )
    run.add_argument("--gif", action="store_true", help="render the trained policy to OUT/policy.gif")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    if extension is not None:
        extension.add_options(run)
    run.add_argument(
        "--devices",
        default="1",
        metavar="all|N",
        help="split the seeds over this many devices ('all', or N: the first N); --seeds must be a multiple "
        "(default 1)",
    )
    run.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize first (one process per host, all running this command; "
        "arguments auto-detected on Cloud TPU, SLURM and Open MPI, else give the three below); "
        "needs --devices all",
    )
    run.add_argument("--coordinator", metavar="HOST:PORT", help="with --distributed: process 0's address")
    run.add_argument("--num-processes", type=int, help="with --distributed: how many processes")
    run.add_argument("--process-id", type=int, help="with --distributed: this process's index, 0..n-1")

    group = parser.add_argument_group(
        "config fields (default: the preset's value; also --set FIELD=VALUE; a FLOAT field given a comma list, "
        "e.g. --lr 1e-4,3e-4, is swept: every value trains in the same program)"
    )
    for name, kind in types.items():
        if name not in FIRST_FIELDS:
            add_field(group, name, kind)
    return parser


def _add_field_option(container, name: str, kind: Any, helps: dict[str, str], metavar: str | None = None) -> None:
    """The option of config field `name` (and its second spellings, `FIELD_ALIASES`, shown first); its value
    shown as `metavar`, by default its type (`_metavar`)."""
    container.add_argument(
        *FIELD_ALIASES.get(name, []),
        f"--{name.replace('_', '-')}",
        dest=f"field:{name}",
        type=functools.partial(_parse_option, name=name, kind=kind),
        nargs="?" if kind is bool else None,
        const=True if kind is bool else None,
        default=argparse.SUPPRESS,
        metavar=metavar or _metavar(kind),
        help=helps.get(name, "").replace("%", "%%") or None,
    )


def _parse_option(text: str, name: str, kind: Any) -> Any:
    try:
        return _parse_field(text, name, kind)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _parse_field(text: str, name: str, kind: Any) -> Any:
    """A field's value from the command line; a comma list for a field that is not a tuple is a sweep
    (a tuple of floats, or `grid.SweepError` for a field that cannot be swept)."""
    if "," in text and typing.get_origin(kind) is not tuple:
        return grid.parse_values(name, kind, text)
    return parse_value(text, kind)


def _overrides(args: argparse.Namespace, module) -> dict[str, Any]:
    """The field options (--env, --total-steps, ...), then --set, as {field: value}; a swept field's value
    is the tuple of its values."""
    overrides = {dest.partition(":")[2]: v for dest, v in vars(args).items() if dest.startswith("field:")}
    try:
        return {**overrides, **configs.parse_assignments(args.set, module.Config, _parse_field)}
    except ValueError as error:
        raise UsageError(str(error)) from None


def make_sweep(args: argparse.Namespace, module) -> dict[str, tuple[float, ...]]:
    """The swept fields and their values (empty for an ordinary run), unchecked (`grid.check_sweep`)."""
    hints = field_types(module.Config)
    return {k: v for k, v in _overrides(args, module).items() if grid.sweepable_kind(hints[k]) and isinstance(v, tuple)}


def config_from_args(args: argparse.Namespace, module, base: Any | None = None) -> tuple[Any, str | None]:
    """The config and the name of its preset: the preset (--preset, or the one chosen for the environment),
    then the field options (--env, --total-steps, ...) and --set on top, in that order. With `base` (a
    checkpoint's config) and no --preset, the overrides apply to `base` and the preset is None. Swept
    fields (`make_sweep`) keep the preset's (or `base`'s) value."""
    swept = make_sweep(args, module)
    overrides = {k: v for k, v in _overrides(args, module).items() if k not in swept}
    preset = args.preset
    if preset is not None and preset not in module.PRESETS and not configs.is_preset_file(preset):
        raise UsageError(configs.unknown_preset(module, preset))
    try:
        if base is not None and preset is None:
            values = {**config_to_dict(base), **overrides}
            values["env_id"] = canonical_env_id(values["env_id"])
            return config_from_dict(module.Config, values), None
        env_id = overrides.pop("env_id", None)
        if preset is None:
            preset = default_preset(module, env_id or module.Config.env_id)
        return configs.make_config(module, env_id, preset, **overrides), preset
    except (TypeError, ValueError) as error:
        raise UsageError(config_error_text(error)) from None


def prepare_out(out: Path) -> None:
    """Create --out and prove it is writable before any compilation starts."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as error:
        raise UsageError(f"cannot write to --out {str(out)!r}: {error.strerror or error}") from None
    if jax.process_index() == 0:  # the process that writes checkpoints holds --out until `run` ends
        checkpoint.lock_run(out)


def check_run_options(args: argparse.Namespace) -> None:
    """The run's own options that are not config fields (those the config checks), before --out is made."""
    try:
        files.check_out(args.out)
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        check_key_seeds("--seed", args.seed or 0, max(args.seeds or 1, 1))  # seed i uses PRNGKey(seed + i)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.checkpoint_every is not None and args.checkpoint_every < 0:
        every = args.checkpoint_every
        raise UsageError(f"--checkpoint-every must be >= 0 frames (0: a checkpoint after every interval), got {every}")
    if args.stop_at_return is not None and not math.isfinite(args.stop_at_return):
        raise UsageError(f"--stop-at-return must be a finite return, got {args.stop_at_return}")


def check_memory(module, config: Any, num_runs: int, devices: str | int) -> None:
    """Refuse, before --out is made and anything compiles, a run whose training state alone (params, optimiser
    state, replay buffer, environments: `jax.eval_shape` of its init) would not fit the memory of the devices it
    is split over; `check_run_memory` counts the whole interval once it is compiled."""
    keys = jax.ShapeDtypeStruct((num_runs, 2), jnp.uint32)
    state = jax.eval_shape(jax.vmap(module.make_program(config).init), keys)
    count = jax.device_count() if devices == "all" else devices
    try:
        memory.check_fits(
            memory.nbytes(state), f"the training state of {num_runs} run(s)", SMALLER, jax.devices()[:count]
        )
    except InputError as error:
        raise UsageError(str(error)) from None


def check_run_memory(parts: dict[str, Any], num_runs: int, mesh: Mesh | None) -> None:
    """Refuse, before anything is allocated, a run whose compiled interval (XLA's count of its state, rollout,
    evaluations and temporaries, per device) and the host copy a checkpoint makes of the state would not fit."""
    interval = memory.compiled_bytes(parts["interval"])
    if interval is None:  # a backend that does not say: the training state was checked before --out
        return
    devices = [jax.local_devices()[0]] if mesh is None else list(mesh.devices.flat)
    need = interval * len(devices) + memory.nbytes(parts["template"])
    try:
        memory.check_fits(need, f"a logging interval of {num_runs} run(s)", SMALLER, devices)
    except InputError as error:
        raise UsageError(str(error)) from None


SMALLER = "use smaller sizes (hidden, buffer_size, num_envs, num_steps) or fewer --seeds"


# --- devices ---


def parse_devices(text: str) -> str | int:
    """`--devices`: 'all' or a positive integer."""
    if text.strip().lower() == "all":
        return "all"
    try:
        count = int(text)
    except ValueError:
        raise UsageError(f"--devices must be 'all' or a positive integer, got {text!r}") from None
    if count < 1:
        raise UsageError(f"--devices must be 'all' or a positive integer, got {text!r}")
    return count


def start_distributed(args: argparse.Namespace) -> None:
    """`jax.distributed.initialize` for --distributed (before any JAX computation)."""
    given = {"--coordinator": args.coordinator, "--num-processes": args.num_processes}
    given["--process-id"] = args.process_id
    if not args.distributed:
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise UsageError(f"{', '.join(named)} only make sense with --distributed")
        return
    if args.devices.strip().lower() != "all":
        raise UsageError("--distributed splits the seeds over every process's devices: pass --devices all")
    try:
        jax.distributed.initialize(
            coordinator_address=args.coordinator, num_processes=args.num_processes, process_id=args.process_id
        )
    except (RuntimeError, ValueError) as error:
        raise UsageError(f"jax.distributed.initialize failed: {error}") from None


def make_seed_mesh(devices: str | int, num_seeds: int, distributed: bool, swept: bool = False) -> Mesh | None:
    """The mesh the seeds (in a sweep: the runs, seeds x values) are split over, or None for a single device
    (the plain, unsharded program)."""
    try:
        mesh = sharding.make_mesh(devices, runner.SEED_AXIS, local=not distributed)
    except ValueError as error:
        raise UsageError(f"--devices: {error}") from None
    if num_seeds % mesh.devices.size:
        count = mesh.devices.size
        what = f"the sweep's {num_seeds} runs (seeds x values)" if swept else f"--seeds {num_seeds}"
        raise UsageError(
            f"{what} cannot be split evenly over {count} devices: use a multiple of {count} "
            f"{'runs' if swept else 'seeds'} or another --devices"
        )
    return None if mesh.devices.size == 1 and not distributed else mesh


def compile_plan(plan: runner.Plan, num_runs: int, mesh: Mesh | None, inputs: tuple = ()) -> dict[str, Any]:
    """The compiled pieces for the plan's runs (`runner.compiled`), with an offline run's dataset (`inputs`)
    and a sweep's values filled in."""
    algorithm, config = plan.algorithm, plan.config
    if plan.sweep is None and not inputs:  # the exact calls of earlier versions, so their cache entries are shared
        return compiled(algorithm, config, num_runs) if mesh is None else compiled(algorithm, config, num_runs, mesh)
    swept = tuple(plan.sweep or ())
    try:
        parts = compiled(algorithm, config, num_runs, mesh, swept, runner.shapes_of(inputs))
    except grid.SweepError as error:
        raise UsageError(str(error)) from None
    if mesh is not None:
        inputs = sharding.replicate(inputs, mesh)
    parts = runner.bind_inputs(parts, inputs)
    return parts if plan.sweep is None else runner.bind_values(parts, runner.sweep_values(plan, mesh))


def offline_inputs(plan: runner.Plan) -> tuple:
    """An offline run's dataset, the input of its program's intervals, once it is known to be the one for
    --env and, for --resume, the one the checkpoint was trained on (its identity then goes in the plan, for
    the checkpoints); nothing for an online agent."""
    if not isinstance(plan.config, OfflineConfig):
        return ()
    try:
        data, identity = datasets.for_config(plan.config)
    except datasets.DatasetError as error:
        raise UsageError(str(error)) from None
    recorded = None if plan.meta is None else plan.meta.get("dataset")
    if recorded is not None and recorded != identity:
        raise UsageError(
            f"--dataset {plan.config.dataset!r} is not the dataset the checkpoint was trained on "
            f"({recorded['steps']} steps, sha256 {recorded['sha256'][:16]}...; now {identity['steps']} steps, "
            f"sha256 {identity['sha256'][:16]}...)"
        )
    plan.dataset = identity
    return (data,)


# --- what to run ---


def plan_run(algorithm: str, module, args: argparse.Namespace, out: Path) -> runner.Plan:
    """The config and seeds of a new run, or those of the checkpoint to resume (refusing a resume whose
    options disagree with it), all checked before anything compiles."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} exists and is not a directory")
    if not args.resume:
        config, preset = config_from_args(args, module)
        num_seeds = 1 if args.seeds is None else args.seeds
        if num_seeds < 1:
            raise UsageError(f"--seeds must be >= 1, got {num_seeds}")
        first = 0 if args.seed is None else args.seed
        if checkpoint.exists(out):
            raise UsageError(f"{str(out)!r} already holds a run; pass --resume to continue it, or choose another --out")
        sweep = checked_sweep(module, config, make_sweep(args, module))
        check_memory(
            module, config, num_seeds * math.prod(map(len, (sweep or {}).values())), parse_devices(args.devices)
        )
        prepare_out(out)
        seeds = list(range(first, first + num_seeds))
        return runner.Plan(algorithm, config, seeds, preset, None, sweep)

    if not checkpoint.exists(out):
        raise UsageError(f"--resume: no checkpoint in {str(out)!r}")
    try:
        meta = checkpoint.read_meta(out)
        saved_config = saved.config_for(meta)
    except checkpoint.CheckpointError as error:
        raise UsageError(str(error)) from None
    if meta["algorithm"] != algorithm:
        raise UsageError(f"the checkpoint in {str(out)!r} is a {meta['algorithm']} run, not {algorithm}")
    config, preset = config_from_args(args, module, base=saved_config)
    if config.env_id != meta["env_id"]:
        raise UsageError(f"the checkpoint in {str(out)!r} is for {meta['env_id']}, not {config.env_id}")
    diff = config_diff(saved_config, config)
    if diff:
        listed = "; ".join(f"{k}: checkpoint {a!r}, now {b!r}" for k, (a, b) in diff.items())
        raise UsageError(f"the checkpoint in {str(out)!r} was made with another config ({listed})")
    seeds = meta["seeds"]
    if args.seeds is not None and args.seeds != len(seeds):
        raise UsageError(f"the checkpoint has {len(seeds)} seeds, --seeds says {args.seeds}")
    if args.seed is not None and args.seed != seeds[0]:
        raise UsageError(f"the checkpoint starts at seed {seeds[0]}, --seed says {args.seed}")
    saved_sweep = {name: tuple(values) for name, values in meta.get("sweep", {}).items()} or None
    sweep = checked_sweep(module, config, make_sweep(args, module))
    if sweep is not None and sweep != saved_sweep:
        raise UsageError(f"the checkpoint in {str(out)!r} sweeps {saved_sweep}, the options say {sweep}")
    prepare_out(out)
    if jax.process_index() == 0:  # the process that saves: its next checkpoint must fit
        checkpoint.check_room(out)
    return runner.Plan(algorithm, config, seeds, preset or meta.get("preset"), meta, saved_sweep)


def checked_sweep(module, config: Any, sweep: dict[str, tuple[float, ...]]) -> dict[str, tuple[float, ...]] | None:
    """The sweep checked against the config (`grid.check_sweep`), or None for an ordinary run."""
    if not sweep:
        return None
    try:
        return grid.check_sweep(module, config, sweep)
    except grid.SweepError as error:
        raise UsageError(str(error)) from None


# --- the run ---


@checkpoint.releases_run_locks
def run(
    algorithm: str,
    argv: list[str] | None = None,
    on_interval: Callable[[int], None] | None = None,
    extension: Extension | None = None,
) -> dict:
    """Parse `argv`, train, write the artefacts; returns the summary. `on_interval(intervals_done)` is called
    after each interval (tests use it to simulate Ctrl-C); the `extension`'s hooks hear of the run's progress."""
    module = agent_module(algorithm)
    args = build_parser(algorithm, module, extension).parse_args(argv)
    devices = parse_devices(args.devices)
    check_run_options(args)
    start_distributed(args)
    lead = jax.process_index() == 0  # the process that writes files and prints
    out = Path(args.out)
    created = not out.exists()
    plan = plan_run(algorithm, module, args, out)
    runs = plan.runs()
    try:
        inputs = offline_inputs(plan)
        mesh = make_seed_mesh(devices, len(runs), args.distributed, swept=plan.sweep is not None)
        hooks = start_hooks(extension, args, plan, out, lead)
    except UsageError:
        if created and lead:
            discard_out(out)
        raise

    compile_start = time.time()
    try:
        with interrupts.deferred():  # compiling: a stop is raised once XLA is done (`interrupts`)
            parts = compile_plan(plan, len(runs), mesh, inputs)
            check_run_memory(parts, len(runs), mesh)
            progress = initial_progress(parts, plan, out, mesh)
    except KeyboardInterrupt:  # before the first frame: one line, as an interrupted run, and nothing half made
        stopped_untrained(hooks, plan, out, created and lead, "while compiling, before any training")
    except UsageError:  # refused before the first frame (too large, a damaged checkpoint): nothing half made
        hooks.finish(status="FAILED")
        if created and lead:
            discard_out(out)
        raise
    compile_time = time.time() - compile_start
    sched = parts["program"].schedule
    every = args.checkpoint_every
    checkpoint_every = max(1, sched.num_intervals // 10 if every is None else round(every / sched.frames_per_interval))

    def save(final_eval: dict | None = None) -> Path:
        """The checkpoint and metrics.csv of the last completed interval, written whole however Ctrl-C falls."""
        with interrupts.deferred():
            return artifacts.save_progress(plan, sched, progress, out, final_eval)

    bar = None if args.no_progress or not lead else runner.progress_bar(plan, sched, progress.done)
    saved_at = progress.done

    def after_interval(metrics: dict[str, np.ndarray], elapsed: float) -> None:
        """Progress bar, periodic checkpoint, then the caller's hook."""
        nonlocal saved_at
        if bar is not None:
            runner.show_progress(bar, sched, metrics, elapsed)
        if progress.done % checkpoint_every == 0:
            save()
            saved_at = progress.done
        hooks.log_metrics(progress.done * sched.frames_per_interval, progress.rows[-len(runs) :], tuple(runs[0]))
        if on_interval is not None:
            on_interval(progress.done)

    def reached(metrics: dict[str, np.ndarray]) -> bool:
        """--stop-at-return: every run's last-100 training return is at R (NaN, before any episode ends, is not)."""
        return args.stop_at_return is not None and bool(np.all(metrics["recent_return"] >= args.stop_at_return))

    try:
        runner.run_intervals(parts, progress, runs, mesh, after_interval, until=reached)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        if progress.done == 0:  # a new run inside its first interval: nothing trained, nothing to resume from
            stopped_untrained(hooks, plan, out, created and lead, "before the first interval ended")
        if saved_at != progress.done:
            save()  # the last completed interval: resuming from it stays exact
        print(
            f"\ninterrupted after {progress.done * sched.frames_per_interval} frames per seed; checkpoint kept in "
            f"{out}. Continue with: {resume_command(algorithm, out)}",
            file=sys.stderr,
        )
        hooks.finish(status="KILLED")
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as error:
        hooks.finish(status="FAILED")
        if isinstance(error, checkpoint.CheckpointError):  # a file of the run that could not be written
            raise cannot_write(error, algorithm, out) from None
        raise
    if bar is not None:
        bar.close()
    try:
        with interrupts.deferred():  # the final evaluation compiles; the run is finished once it is saved
            return finish(args, plan, parts, progress, compile_time, mesh, save, hooks, out, lead)
    except KeyboardInterrupt:
        hooks.finish(status="KILLED")
        print(f"\ninterrupted as the run finished; its checkpoint and files are in {out}", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except (checkpoint.CheckpointError, OSError) as error:
        hooks.finish(status="FAILED")
        raise cannot_write(error, algorithm, out) from None


def stopped_untrained(hooks: RunHooks, plan: runner.Plan, out: Path, discard: bool, when: str) -> NoReturn:
    """A stop before a new run's first interval ends (`discard`: --out is this run's, removed) or before a
    resumed run's first frame (its checkpoint as it was): one line saying so, exit status 130."""
    hooks.finish(status="KILLED")
    if discard:
        discard_out(out)
    kept = "" if plan.meta is None else f"; the checkpoint in {out} is as it was"
    print(f"\ninterrupted {when}{kept}", file=sys.stderr)
    raise SystemExit(EXIT_INTERRUPTED)


def resume_command(algorithm: str, out: Path) -> str:
    return f"python -m maxatar_agents.{algorithm} --out {out} --resume"


def cannot_write(error: Exception, algorithm: str, out: Path) -> checkpoint.CheckpointError:
    """A file of the run that could not be written once training began (a full or read-only disk): one line
    saying where its last checkpoint stands and how to continue from it."""
    if isinstance(error, OSError):
        error = f"could not write {error.filename or out}: {error.strerror or error}; the checkpoint in {out} is intact"
    if not checkpoint.exists(out):
        return checkpoint.CheckpointError(str(error))
    return checkpoint.CheckpointError(f"{error}. Continue with: {resume_command(algorithm, out)}")


def finish(args, plan, parts, progress, compile_time, mesh, save, hooks, out: Path, lead: bool) -> dict:
    """The final evaluation, its checkpoint and the artefacts of a run whose intervals are done; returns the
    summary (a sweep's: sweep.json's content)."""
    sched = parts["program"].schedule
    stopped = progress.done < sched.num_intervals  # --stop-at-return ended it
    if stopped and lead:
        frames = progress.done * sched.frames_per_interval
        print(
            f"every seed's last-100 training return reached {args.stop_at_return:g} after {frames} of "
            f"{sched.total_frames} frames per seed; training stopped (--resume continues it)",
            file=sys.stderr,
        )
    returns = sharding.to_numpy(parts["evaluate"](progress.state))  # (runs, episodes)
    final_eval = artifacts.final_eval(returns)
    policy_path = save(final_eval)
    used = [jax.local_devices()[0]] if mesh is None else list(mesh.devices.flat)
    if plan.sweep is not None:
        content = finish_sweep(plan, sched, progress, returns, compile_time, used, out, lead, args.gif)
        return end_hooks(hooks, out, content)
    sampled = parts["evaluate_sampled"] and artifacts.final_eval(
        sharding.to_numpy(parts["evaluate_sampled"](progress.state))
    )
    summary = artifacts.summary(plan, sched, progress, final_eval, compile_time, used, policy_path, sampled)
    if stopped:
        summary["stopped_at_return"] = args.stop_at_return
    if not lead:
        return summary
    artifacts.write_summary(plan, progress, summary, out)
    if args.gif:
        render(plan.config.env_id, policy_path, out / "policy.gif")
    return end_hooks(hooks, out, summary)


def start_hooks(extension: Extension | None, args: argparse.Namespace, plan: runner.Plan, out: Path, lead: bool):
    """The run's hooks: the extension's (a ValueError from them is a usage error), or none."""
    if extension is None:
        return RunHooks()
    try:
        return extension.hooks(args, plan, out, lead)
    except ValueError as error:
        raise UsageError(str(error)) from None


def end_hooks(hooks: RunHooks, out: Path, summary: dict) -> dict:
    """The run's files (those it wrote) handed to the hooks, which are then closed; returns `summary`."""
    names = ["summary.json", "metrics.csv", "learning_curve.png", "policy.gif", "sweep.json", "sweep.csv", "sweep.png"]
    hooks.log_artifacts([out / name for name in [*names, checkpoint.STATE_FILE, checkpoint.META_FILE]])
    hooks.finish(summary)
    return summary


def finish_sweep(plan, sched, progress, returns, compile_time, used, out: Path, lead: bool, gif: bool) -> dict:
    """A finished sweep's files (`artifacts.write_sweep`) and, with --gif, each value's policy.gif;
    returns sweep.json's content."""
    state = sharding.to_numpy(progress.state)  # gathered by every process
    if not lead:
        return {}
    whole = runner.Progress(state, progress.done, progress.rows, progress.wall)
    content = artifacts.write_sweep(plan, sched, whole, returns, compile_time, used, out)
    if gif:
        for result in content["results"]:
            directory = out / result["dir"]
            render(plan.config.env_id, directory / checkpoint.STATE_FILE, directory / "policy.gif")
    return content


def render(env_id: str, policy_path: Path, gif_path: Path) -> None:
    """--gif: the policy rendered by the renderers' command line."""
    try:
        artifacts.render_gif(env_id, policy_path, gif_path)
    except RuntimeError as error:
        raise UsageError(str(error)) from None


def initial_progress(parts: dict[str, Any], plan: runner.Plan, out: Path, mesh: Mesh | None) -> runner.Progress:
    """A fresh start from the seeds' keys, or for --resume the checkpoint's state and progress."""
    if plan.meta is None:
        keys = runner.seed_keys([run["seed"] for run in plan.runs()], mesh)
        return runner.Progress(parts["init"](keys), 0, [], 0.0)
    try:
        state = checkpoint.load_state(out, parts["template"], plan.meta, saved.schema(parts["program"]))
    except checkpoint.CheckpointError as error:
        raise UsageError(str(error)) from None
    if mesh is not None:
        state = sharding.shard_batch(sharding.to_numpy(state), mesh)
    return runner.Progress(state, plan.meta["intervals_done"], plan.meta["rows"], plan.meta["wall_time"])


def discard_out(out: Path) -> None:
    """A run that stops before its first frame leaves no --out of its own behind (this run created it)."""
    checkpoint.unlock_run(out)
    shutil.rmtree(out, ignore_errors=True)


def main(algorithm: str, argv: list[str] | None = None, extension: Extension | None = None) -> None:
    """The entry point of `python -m maxatar_agents.<algorithm>`: bad input exits with status 2 and one
    `error:` line instead of a traceback; SIGTERM stops a run as Ctrl-C does (`stops_like_ctrl_c`)."""
    try:
        with stops_like_ctrl_c():
            run(algorithm, argv, extension=extension)
    except (UsageError, checkpoint.CheckpointError) as error:  # a CheckpointError: --out in use, a disk error
        print(f"python -m maxatar_agents.{algorithm}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
