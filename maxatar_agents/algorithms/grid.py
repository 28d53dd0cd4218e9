"""Hyperparameter sweeps in one program (PureJaxRL's trick): float config fields that leave the program's
shapes unchanged (a step size, gamma, an exploration rate, tau, an entropy target, ..., and the optional float
`sticky_action_prob`, which the environment's params take traced) become inputs of the program instead of
constants compiled into it, so every value of a sweep trains in the same jitted, vmapped program as the seeds
do: seeds x values at once.

`swept_program(module, config, fields)` is the agent's `Program` whose init, interval and evaluate take one
more argument, `values` (each swept field's value as a float32 scalar): inside, the agent builds its program
from a copy of `config` holding those traced values. A field whose value the agent uses in Python (a shape,
a loop count, an `if`) cannot be traced; it is refused with a `SweepError` naming it, found by tracing, so a
new agent needs no list of sweepable fields. `make_train(module, config, sweep)` is the whole run of every
combination of the sweep's values for one seed; the command line (`cli`, `runner`) runs the same program
one interval at a time over seeds x values, with checkpoints.

A swept value computes what the constant computes, so a value's runs in a sweep equal its ordinary runs
batched alike, bit for bit (XLA may round a batch of 8 runs differently from a batch of 2, for ordinary
runs too). Where an agent combines two config floats in Python before they meet an array (PQN's
`epsilon_fraction * total_steps / num_envs`), the constant is rounded once from float64 and the traced
value computed in float32, which may differ in the last bit.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar_agents.algorithms import program as program_lib
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.fields import field_types
from maxatar_agents.algorithms.program import Program, TrainResult

# What JAX raises when Python code needs the concrete value of a traced number.
TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
    jax.errors.NonConcreteBooleanIndexError,
)


class SweepError(ValueError):
    """A sweep that cannot run: an unknown or non-float field, a bad value, or a field the program needs
    as a Python constant."""


def check_sweep(module: Any, config: Any, sweep: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, ...]]:
    """The sweep as {field: values} with float values, after checking that every field is a float field
    of `module.Config`, that every combination of values makes a valid config (the config's own checks),
    and that the agent builds its program from traced values of each field. Raises `SweepError`."""
    if not sweep:
        raise SweepError("a sweep needs at least one field with a list of values")
    kinds = field_types(module.Config)
    checked = {}
    for name, values in sweep.items():
        if name not in kinds:
            raise SweepError(f"unknown config field {name!r}; fields: {', '.join(kinds)}")
        _check_kind(name, kinds[name])
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise SweepError(f"field {name}: expected a non-empty list of floats, got {values!r}")
        try:
            checked[name] = tuple(float(v) for v in values)
        except (TypeError, ValueError):
            raise SweepError(f"field {name}: expected a list of floats, got {values!r}") from None
        if len(set(checked[name])) != len(checked[name]):
            raise SweepError(f"field {name}: a value is listed twice in {list(checked[name])}")
    for combo in combinations(checked):
        try:  # the config's own checks, and the environment's (a sticky-action probability in [0, 1])
            env_from_config(dataclasses.replace(config, **combo))
        except (TypeError, ValueError) as error:
            raise SweepError(f"sweep value {label(combo)}: {error}") from None
    for name in checked:  # building the program is cheap; tracing the whole run waits for the compiler
        try:
            jax.eval_shape(functools.partial(_builds, module, config, name), jax.ShapeDtypeStruct((), jnp.float32))
        except TRACER_ERRORS:
            raise SweepError(_refusal([name])) from None
    return checked


def parse_values(name: str, kind: Any, text: str) -> tuple[float, ...]:
    """A swept field's values from the command line's comma list (`1e-4,3e-4,1e-3`); `kind` is the field's
    type, refused unless float."""
    _check_kind(name, kind)
    items = [item.strip() for item in text.split(",") if item.strip()]
    try:
        return tuple(float(item) for item in items)
    except ValueError:
        raise SweepError(f"field {name}: expected a comma list of floats, got {text!r}") from None


def sweepable_kind(kind: Any) -> bool:
    """Whether a field of this type can be swept: a float, or an optional float whose None means "the
    environment's default" (`sticky_action_prob`), since the environment's params take a traced value too."""
    return kind is float or kind == (float | None)


def _check_kind(name: str, kind: Any) -> None:
    if not sweepable_kind(kind):
        kind = str(kind).replace("<class '", "").replace("'>", "")
        raise SweepError(
            f"field {name} cannot be swept: it changes the program's shape or code (only float fields can be "
            f"swept, and {name} is {kind}), so each value needs its own program"
        )


def combinations(sweep: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """Every combination of the sweep's values (the grid: the last field varies fastest), in the order the
    command line trains, logs and writes them."""
    names = list(sweep)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*sweep.values())]


def label(combo: Mapping[str, float]) -> str:
    """A combination as text, its directory name in a sweep's output: `lr=0.0003` or `gamma=0.9,lr=0.001`
    (each value the shortest text that reads back as the same float)."""
    return ",".join(f"{name}={value!r}" for name, value in combo.items())


def value_table(sweep: Mapping[str, Sequence[float]], repeat: int = 1) -> dict[str, np.ndarray]:
    """The program's `values` input for every combination, each repeated `repeat` times in a row (the
    command line's runs: combination-major, then seed): {field: float32 array}."""
    combos = combinations(sweep)
    return {name: np.repeat(np.asarray([c[name] for c in combos], np.float32), repeat) for name in sweep}


def swept_program(module: Any, config: Any, fields: Sequence[str]) -> Program:
    """`module`'s program for `config` with the float `fields` as inputs: init(key, values),
    interval(state, t0, values) and evaluate(state, values), `values` mapping each field to a float32
    scalar. The schedule, the policy and `config` (the fields' own values unused) are those of
    `module.make_program(config)`. Tracing raises `SweepError` for a field the program needs in Python."""
    fields = tuple(fields)
    base = module.make_program(config)

    def refusing(piece: str) -> Callable:
        """The program's `piece`, built from the traced values; a tracer error becomes a SweepError."""

        def run(*args):
            *args, values = args
            if set(values) != set(fields):
                raise SweepError(f"values for {sorted(values)} given, the program sweeps {list(fields)}")
            try:
                return getattr(_build(module, config, values), piece)(*args)
            except TRACER_ERRORS:
                raise SweepError(_refusal(fields)) from None

        return run

    sampled = base.evaluate_sampled and refusing("evaluate_sampled")
    return base._replace(
        init=refusing("init"), interval=refusing("interval"), evaluate=refusing("evaluate"), evaluate_sampled=sampled
    )


def make_train(module: Any, config: Any, sweep: Mapping[str, Sequence[float]]) -> Callable[[jax.Array], TrainResult]:
    """`train(key) -> TrainResult` for every combination of the sweep's values (`combinations(sweep)`) from
    one seed's key, as one pure function: its leaves lead with the combination axis, and
    `jax.jit(jax.vmap(train))(keys)` trains seeds x values in one program (leaves (seeds, combinations, ...)).

        train = grid.make_train(pqn, config, {"lr": [1e-4, 3e-4, 1e-3]})
        result = jax.jit(jax.vmap(train))(keys)  # result.eval_returns: (seeds, 3, episodes)
    """
    sweep = check_sweep(module, config, sweep)
    swept = swept_program(module, config, tuple(sweep))
    table = {name: jnp.asarray(column) for name, column in value_table(sweep).items()}

    def train(key: jax.Array, *inputs: Any) -> TrainResult:
        """The whole run of every combination from this seed's key (and an offline agent's dataset, `inputs`)."""
        return jax.vmap(lambda values: program_lib.make_train(with_values(swept, values))(key, *inputs))(table)

    return train


def with_values(swept: Program, values: Mapping[str, jax.Array]) -> Program:
    """A swept program with its values filled in: an ordinary `Program` (init(key), interval(state, t0),
    evaluate(state))."""
    return swept._replace(
        init=functools.partial(_last, swept.init, values),
        interval=functools.partial(_last, swept.interval, values),
        evaluate=functools.partial(_last, swept.evaluate, values),
    )


def _last(fn: Callable, values: Any, *args: Any) -> Any:
    return fn(*args, values)


def _build(module: Any, config: Any, values: Mapping[str, Any]) -> Program:
    """The agent's program from a copy of `config` whose swept fields hold `values` (tracers). The copy skips
    the config's checks, which compare in Python (`check_sweep` ran them on every concrete value), and
    `make_program`'s cache, which would hash the tracers."""
    traced = copy.copy(config)
    for name, value in values.items():
        object.__setattr__(traced, name, value)
    build = getattr(module.make_program, "__wrapped__", module.make_program)
    return build(traced)


def _builds(module: Any, config: Any, name: str, value: jax.Array) -> jax.Array:
    """Build the program with `name` traced (a tracer error if the agent needs it in Python)."""
    _build(module, config, {name: value})
    return value


def _refusal(fields: Sequence[str]) -> str:
    names = ", ".join(fields)
    which = f"field {names} cannot" if len(fields) == 1 else f"one of the fields {names} cannot"
    return (
        f"{which} be swept: it changes the program's shape (the agent uses its value in Python, for a shape, "
        "a count or an `if`), so each value needs its own program: run the values one at a time"
    )
