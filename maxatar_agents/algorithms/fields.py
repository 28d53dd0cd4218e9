"""A config dataclass's fields as data: `knob` (a field with its documentation, which `--help` shows), their
types and help, and the checks every config runs when it is built (`check_fields`: types, bounds by field name in
`FIELD_BOUNDS`, choices in `FIELD_CHOICES`), raising a `ConfigError` that carries the field it is about."""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
from typing import Any


def field_types(config_cls: type) -> dict[str, Any]:
    """Each field's type (resolved, since the agents' modules use `from __future__ import annotations`)."""
    return dict(_field_types(config_cls))


@functools.cache
def _field_types(config_cls: type) -> dict[str, Any]:
    return typing.get_type_hints(config_cls)


def knob(default: Any, help: str) -> Any:
    """A config field with its documentation, which `--help` shows for the field's option (`field_help`)."""
    return dataclasses.field(default=default, metadata={"help": help})


def field_help(config_cls: type) -> dict[str, str]:
    """Each field's documentation (`knob`), so that `--help` says what the config says. A subclass that only
    changes a field's default keeps its base class's text."""
    found: dict[str, str] = {}
    for cls in reversed(config_cls.__mro__):
        for field in getattr(cls, "__dataclass_fields__", {}).values():
            text = field.metadata.get("help", "")
            if text or field.name not in found:
                found[field.name] = text
    return found


# --- checking a config's values ---


class ConfigError(ValueError):
    """A config field with a value it cannot take; the message starts with the field's name and says what it
    accepts (after where the value came from, `where`, when that is not the caller: `preset file 'best.json'`).
    Every config raises it (or `ConfigTypeError`) from its constructor, so a bad value from the command line, a
    preset file, `--set`, a sweep or Python fails before anything is written or compiled."""

    def __init__(self, field: str, message: str, where: str | None = None):
        message = message if message.startswith(field) else f"{field}: {message}"
        super().__init__(message if where is None else f"{where}: {message}")
        self.field = field


class ConfigTypeError(ConfigError, TypeError):
    """A config field given a value of the wrong type (text for a number, 1 for a boolean, ...)."""


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The interval a number field's value must lie in (None: unbounded on that side)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    what: str = ""  # what such a value is ("a probability"), said before the interval

    def holds(self, value: float) -> bool:
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def text(self) -> str:
        """`in [0, 1]`, `> 0`, `>= 1`, ..., after `what`."""
        low, high = (
            f"{x:,}" if isinstance(x, int) else f"{x:g}" if x is not None else "" for x in (self.low, self.high)
        )
        if self.low is not None and self.high is not None:
            interval = f"in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        elif self.low is not None:
            interval = f"{'>' if self.low_open else '>='} {low}"
        else:
            interval = f"{'<' if self.high_open else '<='} {high}"
        return f"{self.what} {interval}" if self.what else interval


UNIT = Bounds(0.0, 1.0)
PROBABILITY = Bounds(0.0, 1.0, what="a probability")
POSITIVE = Bounds(0.0, low_open=True)
NON_NEGATIVE = Bounds(0.0)
COUNT = Bounds(1)  # every int field's, unless `FIELD_BOUNDS` says otherwise

# The one table of what the agents' number fields may hold, by field name, whichever agent's config has the
# field (see each field's comment). An int field not listed is a count (>= 1, each item of a tuple too); a
# float field not listed only has to be finite. A config's own checks (in its `__post_init__`) add what one
# field cannot say alone (learning_starts >= batch_size, minibatches that split a rollout).
FIELD_BOUNDS: dict[str, Bounds] = {
    "gamma": UNIT,
    "gae_lambda": UNIT,
    "q_lambda": UNIT,
    "target_entropy_scale": UNIT,
    "sticky_action_prob": PROBABILITY,
    "epsilon": PROBABILITY,
    "epsilon_start": PROBABILITY,
    "epsilon_end": PROBABILITY,
    "epsilon_fraction": Bounds(0.0, 1.0, low_open=True),
    "tau": Bounds(0.0, 1.0, low_open=True),
    "rms_decay": Bounds(0.0, 1.0, high_open=True),
    **dict.fromkeys(["lr", "actor_lr", "critic_lr", "alpha_lr", "adam_eps", "rms_eps"], POSITIVE),
    **dict.fromkeys(["initial_alpha", "clip_eps", "reward_scale"], POSITIVE),
    **dict.fromkeys(["max_grad_norm", "ent_coef", "vf_coef"], NON_NEGATIVE),
    "alpha": NON_NEGATIVE,  # CQL's penalty weight (0: none)
    "learning_starts": Bounds(0),
    # Upper bounds on sizes, so that a typo is refused rather than exhausting memory; the command line also
    # checks the run against the devices' memory before it starts (`run.cli.check_memory`, `check_run_memory`).
    # Frames per seed and an evaluation episode's steps: the programs count steps in int32.
    **dict.fromkeys(["total_steps", "eval_max_steps"], Bounds(1, 2**31 - 1)),
    **dict.fromkeys(["num_envs", "eval_episodes", "keep_best_episodes"], Bounds(1, 65_536)),
    "hidden": Bounds(1, 2**20),
}


# The text fields that name one of a few choices, by field name, whichever agent's config has the field.
FIELD_CHOICES: dict[str, tuple[str, ...]] = {
    "optimizer": ("rmsprop", "adam"),
    "activation": ("tanh", "relu"),
    "method": ("q_learning", "expected_sarsa", "double_q"),
    "model": ("table", "env"),
    "critic_target": ("min", "mean", "blend"),
}


def check_fields(config: Any, bounds: dict[str, Bounds] | None = None) -> None:
    """Check every field of a config dataclass against its type (a bool is True or False, an int an integer
    and not a bool, a float a finite number, a tuple a tuple of its items' type, `| None` also None), its
    bounds (`FIELD_BOUNDS`, then `bounds`, a config's own) and its choices (`FIELD_CHOICES`). Raises
    `ConfigTypeError` or `ConfigError` naming the first bad field."""
    limits = {**FIELD_BOUNDS, **(bounds or {})}
    for name, kind in _field_types(type(config)).items():
        value = getattr(config, name)
        _check_value(name, value, kind, limits.get(name))
        if name in FIELD_CHOICES and value not in FIELD_CHOICES[name]:
            choices = " or ".join(repr(c) for c in FIELD_CHOICES[name])
            raise ConfigError(name, f"{name} must be {choices}, got {value!r}")


def _check_value(name: str, value: Any, kind: Any, bounds: Bounds | None, optional: bool = False) -> None:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            _check_value(name, value, inner[0], bounds, optional=type(None) in args)
        return
    if origin is tuple:
        item = args[0] if args else Any
        if not isinstance(value, tuple) or not all(_is_kind(v, item) for v in value):
            example = " such as (64, 64)" if item is int else ""
            raise ConfigTypeError(name, f"{name} must be a tuple of {_kind_name(item)}s{example}, got {value!r}")
        if item is int and any(not (bounds or COUNT).holds(v) for v in value):
            raise ConfigError(name, f"{name} must hold integers {(bounds or COUNT).text()}, got {value!r}")
        return
    if kind not in (bool, int, float, str):
        return
    if not _is_kind(value, kind):
        none = " or None" if optional else ""
        raise ConfigTypeError(name, f"{name} must be {_kind_name(kind, article=True)}{none}, got {value!r}")
    if kind is float and not math.isfinite(value):
        raise ConfigError(name, f"{name} must be {_finite(bounds)}, got {value!r}")
    if kind is int:
        bounds = bounds or COUNT
    if kind in (int, float) and bounds is not None and not bounds.holds(value):
        raise ConfigError(name, f"{name} must be {bounds.text()}, got {value!r}")


def _is_kind(value: Any, kind: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind is int:
        return isinstance(value, numbers.Integral)
    if kind is float:
        return isinstance(value, numbers.Real)
    if kind is str:
        return isinstance(value, str)
    return True


def _kind_name(kind: Any, article: bool = False) -> str:
    names = {bool: "true or false", int: "integer", float: "number", str: "string"}
    name = names.get(kind, getattr(kind, "__name__", str(kind)))
    return f"a{'n' if name[0] in 'aeiou' else ''} {name}" if article and kind is not bool else name


def _finite(bounds: Bounds | None) -> str:
    """What a float field accepts, saying "finite" where the bounds do not."""
    if bounds is None:
        return "a finite number"
    return bounds.text() if None not in (bounds.low, bounds.high) else f"a finite number {bounds.text()}"


def config_error_text(error: Exception) -> str:
    """How the command lines report a config that cannot be built: a field's error as it is (it names the
    field), anything else (a preset file that cannot be read, a cross-field check) after `invalid config:`."""
    return str(error) if isinstance(error, ConfigError) else f"invalid config: {error}"
