"""Running a training program one logging interval at a time, for any agent: the compiled pieces for a
number of seeds (optionally split over a mesh of devices), the seeds' keys, and the loop over intervals.

Each interval is one call of the same compiled function for all seeds, so a run interrupted and resumed
from its last checkpoint ends bit for bit where the uninterrupted run ends (and where
`make_train(config)(key)` ends).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from maxatar import sharding
from maxatar_agents.algorithms import grid
from maxatar_agents.algorithms.program import Schedule
from maxatar_agents.algorithms.registry import agent_module
from maxatar_agents.run import interrupts

SEED_AXIS = "seeds"


def _over_seeds(fn: Callable, num_seeds: int, in_axes: tuple) -> Callable:
    """vmap over seeds; a single seed runs unbatched (XLA's CPU code is faster without the size-1 batch
    axis) with the axis added back, so states and metrics always lead with the seed axis."""
    if num_seeds > 1:
        return jax.vmap(fn, in_axes=in_axes)

    def single(*args):
        args = [jax.tree.map(lambda x: x[0], a) if axis == 0 else a for a, axis in zip(args, in_axes, strict=True)]
        return jax.tree.map(lambda x: x[None], fn(*args))

    return single


@functools.lru_cache(maxsize=8)
def compiled(
    algorithm: str,
    config: Any,
    num_seeds: int,
    mesh: Mesh | None = None,
    swept: tuple[str, ...] = (),
    inputs: tuple[Any, ...] = (),
) -> dict[str, Any]:
    """Jitted init and evaluate, and the interval compiled ahead of time (so its compile time is not
    counted as training time); cached per (algorithm, config, seeds, mesh, swept fields) so repeated runs
    share them.

    With a mesh, each function is a `shard_map` over the seed axis: every device runs, on its own seeds,
    exactly the program a single device runs for that many seeds (all inputs and outputs lead with the seed
    axis; the interval's start step is replicated). So a run on D devices equals, bit for bit, the
    one-device runs of each device's group of seeds.

    With `swept` float fields (a sweep, see `grid`), the seed axis holds every run of seeds x values and
    each function takes one more argument, the runs' values {field: (num_seeds,) float32}; `bind_values`
    fills it in.

    With `inputs` (the shapes, `shapes_of`, of the arrays an offline program's interval takes after `t0`: its
    dataset, `datasets.inputs_for`), the interval takes them, shared by every seed (replicated on a mesh),
    before a sweep's values; `bind_inputs` fills them in.
    """
    with interrupts.deferred():  # Ctrl-C raised inside XLA's callbacks into Python could crash it
        return _compiled(algorithm, config, num_seeds, mesh, swept, inputs)


def _compiled(
    algorithm: str, config: Any, num_seeds: int, mesh: Mesh | None, swept: tuple[str, ...], inputs: tuple
) -> dict:
    module = agent_module(algorithm)
    program = grid.swept_program(module, config, swept) if swept else module.make_program(config)
    keys = jax.ShapeDtypeStruct((num_seeds, 2), jnp.uint32)
    t0 = jax.ShapeDtypeStruct((), jnp.int32)
    # A sweep's values, like the keys and states, lead with the seed axis; an ordinary run has none.
    values = [{name: jax.ShapeDtypeStruct((num_seeds,), jnp.float32) for name in swept}] if swept else []
    per_run = [0] * len(values)
    local = num_seeds if mesh is None else num_seeds // mesh.devices.size
    init = _over_seeds(program.init, local, (0, *per_run))
    shared = [None] * len(inputs)
    interval = _over_seeds(program.interval, local, (0, None, *shared, *per_run))
    evaluate = _over_seeds(program.evaluate, local, (0, *per_run))
    sampled = program.evaluate_sampled and _over_seeds(program.evaluate_sampled, local, (0, *per_run))
    split: dict[str, Any] = {}
    both: dict[str, Any] = {}
    if mesh is not None:
        seeds, whole = NamedSharding(mesh, P(SEED_AXIS)), NamedSharding(mesh, P())
        # check_vma=False: the agents' programs are written for one device (e.g. a `lax.cond` whose branches
        # differ in what depends on the seed); every output is per-seed, so no cross-device check is needed.
        per_device = functools.partial(jax.shard_map, mesh=mesh, out_specs=P(SEED_AXIS), check_vma=False)
        on_seeds = [P(SEED_AXIS)] * len(values)
        init = per_device(init, in_specs=(P(SEED_AXIS), *on_seeds))
        interval = per_device(interval, in_specs=(P(SEED_AXIS), P(), *[P()] * len(inputs), *on_seeds))
        evaluate = per_device(evaluate, in_specs=(P(SEED_AXIS), *on_seeds))
        sampled = sampled and per_device(sampled, in_specs=(P(SEED_AXIS), *on_seeds))
        split = {"in_shardings": (seeds, *[seeds] * len(values)), "out_shardings": seeds}
        both = {"in_shardings": (seeds, whole, *[whole] * len(inputs), *[seeds] * len(values)), "out_shardings": seeds}
        inputs = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=whole), inputs)
        keys = jax.ShapeDtypeStruct(keys.shape, keys.dtype, sharding=seeds)
        t0 = jax.ShapeDtypeStruct((), jnp.int32, sharding=whole)
        values = [{k: jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=seeds) for k, v in vs.items()} for vs in values]
    init = jax.jit(init, **split)
    template = jax.eval_shape(init, keys, *values)
    return {
        "program": program,
        "template": template,
        "init": init,
        "interval": jax.jit(interval, **both).lower(template, t0, *inputs, *values).compile(),
        "evaluate": jax.jit(evaluate, **split),
        "evaluate_sampled": sampled and jax.jit(sampled, **split),  # None for a deterministic policy
    }


def bind_values(parts: dict[str, Any], values: dict[str, jax.Array]) -> dict[str, Any]:
    """The compiled pieces of a sweep with the runs' values filled in, called as an ordinary run's:
    init(keys), interval(state, t0), evaluate(state)."""
    return {
        **parts,
        "init": lambda keys: parts["init"](keys, values),
        "interval": lambda state, t0: parts["interval"](state, t0, values),
        "evaluate": lambda state: parts["evaluate"](state, values),
        "evaluate_sampled": parts["evaluate_sampled"] and (lambda state: parts["evaluate_sampled"](state, values)),
    }


def shapes_of(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The shapes and dtypes of a program's `inputs` (`datasets.inputs_for`), as `compiled` takes them."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), inputs)


def bind_inputs(parts: dict[str, Any], inputs: tuple[Any, ...]) -> dict[str, Any]:
    """The compiled pieces of a program with `inputs` (an offline run's dataset) filled in, called as any
    run's: interval(state, t0) (then a sweep's values, `bind_values`)."""
    if not inputs:
        return parts
    interval = parts["interval"]
    return {**parts, "interval": lambda state, t0, *values: interval(state, t0, *inputs, *values)}


def seed_keys(seeds: list[int], mesh: Mesh | None = None) -> jax.Array:
    """One PRNGKey per seed (seed s uses PRNGKey(s)), split over the mesh's devices when there is one."""
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    return keys if mesh is None else sharding.shard_batch(keys, mesh)


def sweep_values(plan: Plan, mesh: Mesh | None = None) -> dict[str, jax.Array]:
    """A sweep's values per run, in the order of `Plan.runs` (split over the mesh's devices when there is
    one): what `bind_values` gives the compiled pieces."""
    values = grid.value_table(plan.sweep, repeat=len(plan.seeds))
    return {k: jnp.asarray(v) for k, v in values.items()} if mesh is None else sharding.shard_batch(values, mesh)


@dataclasses.dataclass
class Plan:
    """What to run, checked before anything is compiled: the algorithm, the config, the seeds, for a
    resumed run the checkpoint's metadata, for a sweep its values (`grid`): every seed then trains
    with every combination of them (the config's own values of those fields unused), and for an offline run
    the identity of its dataset (`datasets.for_config`)."""

    algorithm: str
    config: Any
    seeds: list[int]
    preset: str | None
    meta: dict[str, Any] | None
    sweep: dict[str, tuple[float, ...]] | None = None
    dataset: dict[str, Any] | None = None  # an offline run's dataset, as its checkpoint records it

    def runs(self) -> list[dict[str, Any]]:
        """What tells the runs apart in metrics.csv, in the order of the seed axis: the seed, and in a
        sweep the combination of values first (combination-major)."""
        combos = grid.combinations(self.sweep) if self.sweep else [{}]
        return [{**combo, "seed": seed} for combo in combos for seed in self.seeds]


@dataclasses.dataclass
class Progress:
    """Where a run stands after its last completed interval: what a checkpoint saves and a resume restores."""

    state: Any  # the training state of every seed
    done: int  # logging intervals completed
    rows: list[dict[str, Any]]  # metrics.csv so far
    wall: float  # seconds spent in intervals (compilation excluded)


def run_intervals(
    parts: dict[str, Any],
    progress: Progress,
    runs: list[dict[str, Any]],
    mesh: Mesh | None,
    after_interval: Callable[[dict[str, np.ndarray], float], None],
    until: Callable[[dict[str, np.ndarray]], bool] | None = None,
) -> None:
    """Run the remaining intervals, updating `progress` after each (so that an interrupt leaves it at the
    last completed interval; `runs` label its rows, see `Plan.runs`) and then calling
    `after_interval(metrics, seconds)`; stop early once `until(metrics)` is true."""
    sched: Schedule = parts["program"].schedule
    while progress.done < sched.num_intervals:
        interrupts.check()  # a Ctrl-C whose KeyboardInterrupt was lost (`interrupts`)
        t0 = np.int32(progress.done * sched.steps_per_interval)
        start = time.time()
        next_state, metrics = parts["interval"](
            progress.state, jnp.int32(t0) if mesh is None else sharding.replicate(t0, mesh)
        )
        metrics = sharding.to_numpy(metrics)  # waits for the interval to finish
        elapsed = time.time() - start
        progress.state, progress.done, progress.wall = next_state, progress.done + 1, progress.wall + elapsed
        for i, run in enumerate(runs):
            row = {k: _scalar(v[i]) for k, v in metrics.items()}
            progress.rows.append({**run, **row, "wall_time": progress.wall})
        after_interval(metrics, elapsed)
        if until is not None and until(metrics):
            return


def progress_bar(plan: Plan, sched: Schedule, done: int):
    """A tqdm bar over the run's frames per seed, starting where a resumed run left off."""
    from tqdm import tqdm

    name = f"{plan.algorithm} {plan.config.env_id.split('/')[-1]} x{len(plan.seeds)}"
    if plan.sweep:
        name += f" x{len(grid.combinations(plan.sweep))} values"
    initial = done * sched.frames_per_interval
    return tqdm(total=sched.total_frames, initial=initial, unit="frame", unit_scale=True, desc=name)


def show_progress(bar, sched: Schedule, metrics: dict[str, np.ndarray], elapsed: float) -> None:
    """Advance the bar by one interval, with the frames per second over all seeds and the seeds' mean
    recent return next to it."""
    recent = metrics["recent_return"]
    recent = float(np.nanmean(recent)) if np.any(np.isfinite(recent)) else float("nan")
    fps = sched.frames_per_interval * metrics["recent_return"].shape[0] / max(elapsed, 1e-9)
    bar.set_postfix_str(f"fps(all seeds)={fps:,.0f} recent return={recent:.2f}", refresh=False)
    bar.update(sched.frames_per_interval)


def _scalar(value: Any) -> float | int:
    """A metric as a CSV cell: a Python number, NaN for any non-finite float."""
    value = np.asarray(value).item()
    if isinstance(value, float):
        return value if math.isfinite(value) else float("nan")
    return value
