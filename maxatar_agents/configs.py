"""Config dataclasses as data: their fields' types and documentation, command-line text parsed into a field's
type, and config <-> JSON. Every agent's `Config` goes through here, so the command line, checkpoints and
summaries describe a config the same way whatever the algorithm."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import numbers
import types
import typing
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import maxatar
from maxatar.registry import qualified_id
from maxatar_agents.files import read_text


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported as one `error:` line and where to look, not the whole usage first."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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


def field_comments(config_cls: type) -> dict[str, str]:
    """Deprecated name of `field_help` (the help was once read from source comments)."""
    warnings.warn("configs.field_comments is now configs.field_help", DeprecationWarning, stacklevel=2)
    return field_help(config_cls)


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
    "learning_starts": Bounds(0),
    # Upper bounds on sizes, so that a typo is refused rather than exhausting memory; the command line also
    # checks the whole training state against the devices' memory before a run starts (`cli.check_memory`).
    # Frames per seed: the programs count steps in int32.
    "total_steps": Bounds(1, 2**31 - 1),
    **dict.fromkeys(["num_envs", "eval_episodes"], Bounds(1, 65_536)),
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


def parse_value(text: str, kind: Any) -> Any:
    """Parse a command-line string into a config field's type (int, float, bool, str, tuple[int, ...],
    or any of these `| None`)."""
    args = typing.get_args(kind)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        if text.strip().lower() in ("none", "null", ""):
            return None
        inner = [a for a in args if a is not type(None)]
        return parse_value(text, inner[0])
    if origin is tuple:
        items = [s for s in text.replace("(", "").replace(")", "").split(",") if s.strip()]
        return tuple(parse_value(s.strip(), args[0]) for s in items)
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"expected a boolean, got {text!r}")
    if kind is int:
        value = float(text.replace("_", ""))
        if not value.is_integer():
            raise ValueError(f"expected an integer, got {text!r}")
        return int(value)
    if kind is float:
        return float(text)
    return text


class AssignmentError(ValueError):
    """A `FIELD=VALUE` item (`--set`) that names no field or holds no value of the field's type; the message
    quotes the item."""

    def __init__(self, item: str, message: str):
        super().__init__(message)
        self.item = item


def parse_assignments(
    items: list[str],
    config_cls: type,
    parse: Callable[[str, str, Any], Any] | None = None,
    option: str = "--set",
) -> dict[str, Any]:
    """`FIELD=VALUE` items (the command lines' `--set`, `option` in the messages) as {field: value}, each value
    parsed into its field's type by `parse(text, field, kind)` (default `parse_value(text, kind)`); a dash in
    FIELD is an underscore, a later item for the same field wins. Raises `AssignmentError` quoting the item:
    one without `=` or with an unknown field (the message lists the fields), or a value `parse` refuses.
    Whether the value suits the field (bounds, choices) is the config's check when it is built."""
    hints = field_types(config_cls)
    values: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in hints:
            raise AssignmentError(
                item, f"{option} expects FIELD=VALUE with FIELD one of: {', '.join(hints)}; got {item!r}"
            )
        try:
            values[name] = parse_value(text, hints[name]) if parse is None else parse(text, name, hints[name])
        except ValueError as error:
            raise AssignmentError(item, f"{option} {item}: {error}") from None
    return values


def config_to_dict(config: Any) -> dict[str, Any]:
    """JSON-ready dict (tuples become lists), for checkpoints and summaries."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()}


def config_from_dict(config_cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a config from `config_to_dict` output. An unknown field is an error, so that a checkpoint never
    silently trains without a setting it recorded; a missing one (a field added since it was written) takes
    its default, which keeps older checkpoints and presets loadable."""
    types_ = field_types(config_cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown} for {config_cls.__module__}.{config_cls.__name__}")
    values = {}
    for name, value in data.items():
        if isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return config_cls(**values)


def config_diff(a: Any, b: Any) -> dict[str, tuple[Any, Any]]:
    """The fields where two configs differ, as name -> (a's value, b's value): what a refused resume lists."""
    da, db = config_to_dict(a), config_to_dict(b)
    return {k: (da.get(k), db.get(k)) for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)}


def canonical_env_id(env_id: str) -> str:
    """The id with its `maxatar/` namespace (raises ValueError for an unknown id), so that configs written
    with `CartPole-v1` and `maxatar/CartPole-v1` are one config."""
    if not isinstance(env_id, str):
        raise ConfigTypeError("env_id", f"env_id must be a string such as 'maxatar/Breakout-v0', got {env_id!r}")
    try:
        maxatar.make(env_id)
    except ValueError as error:
        raise ConfigError("env_id", str(error)) from None
    return qualified_id(env_id)


# The preset named for an environment, which an agent uses there when none is named and it has one.
ENV_PRESETS = {"maxatar/CartPole-v1": "cartpole", "maxatar/Doors-v0": "doors"}


def env_presets(module: Any) -> dict[str, str]:
    """{environment id: preset} for the environments whose preset the agent module has (`ENV_PRESETS`)."""
    return {env_id: preset for env_id, preset in ENV_PRESETS.items() if preset in module.PRESETS}


def default_preset(module: Any, env_id: str) -> str:
    """The preset an agent uses on `env_id` when none is named, as RL Baselines3 Zoo picks hyperparameters by
    environment: the environment's preset (`env_presets`), else the module's `DEFAULT_PRESET` (the one for
    the MinAtar games)."""
    return env_presets(module).get(canonical_env_id(env_id), module.DEFAULT_PRESET)


def is_preset_file(preset: str) -> bool:
    """Whether `preset` names a JSON file of field values (a sweep's `best_preset.json`) rather than a preset."""
    return preset.endswith(".json")


def preset_values(module: Any, preset: str) -> dict[str, Any]:
    """A preset's field values: one of the agent's `PRESETS`, or a JSON file of {field: value} (a path ending
    in `.json`, e.g. the `best_preset.json` of `python -m maxatar_agents.sweep`)."""
    if not is_preset_file(preset):
        if preset not in module.PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known presets: {', '.join(module.PRESETS)}")
        return module.PRESETS[preset]
    path = Path(preset)
    try:
        values = json.loads(read_text(path))  # a regular file only: a FIFO would block, /dev/zero never end
    except (OSError, ValueError) as error:  # ValueError: not JSON, or not UTF-8 text
        raise ValueError(f"preset file {preset!r}: cannot read it as JSON: {error}") from None
    if not isinstance(values, dict):
        raise ValueError(
            f"preset file {preset!r} must hold a JSON object of config fields, got {type(values).__name__}"
        )
    unknown = sorted(set(values) - set(field_types(module.Config)))
    if unknown:
        fields = ", ".join(field_types(module.Config))
        raise ValueError(
            f"preset file {preset!r}: unknown config field(s) {unknown} for {module.__name__}; fields: {fields}"
        )
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


def make_config(module: Any, env_id: str | None = None, preset: str | None = None, **overrides: Any) -> Any:
    """An agent's config from Python as the command line builds it: the preset (by default the one chosen
    for `env_id`), then `env_id` and the overrides on top. Without `env_id`, the preset's environment (or
    the `Config` default) is used. `preset` may also be a JSON file of field values (`preset_values`).

        config = make_config(ppo, "maxatar/CartPole-v1")  # the `cartpole` preset
        result = ppo.make_train(config)(jax.random.PRNGKey(0))
    """
    if preset is None:
        preset = default_preset(module, env_id or module.Config.env_id)
    from_preset = preset_values(module, preset)
    values = {**from_preset, **overrides}
    if env_id is not None:
        values["env_id"] = env_id
    try:
        values["env_id"] = canonical_env_id(values.get("env_id", module.Config.env_id))
        config = module.Config(**values)
        given = {*overrides, *(from_preset if is_preset_file(preset) else ())}
        for name, (other, needed, message) in getattr(module, "ONLY_WITH", {}).items():
            if name in given and getattr(config, other) != needed:
                raise ConfigError(name, message(getattr(config, other)))
        return config
    except ConfigError as error:
        # A value the preset file holds (and nothing given on top replaced) is reported with the file's name.
        given = {*overrides, *(() if env_id is None else ("env_id",))}
        if is_preset_file(preset) and error.field in from_preset and error.field not in given:
            raise type(error)(error.field, str(error), where=f"preset file {preset!r}") from None
        raise
