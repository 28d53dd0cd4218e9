"""Configs as text and JSON: command-line text parsed into a field's type (`parse_value`, `--set`), config <->
JSON, presets by name or file, and `make_config` (preset, then overrides). Every agent's `Config` goes through
here, so the command line, checkpoints and summaries describe a config the same way whatever the algorithm; the
fields themselves (types, help, checks) are `maxatar_agents.algorithms.fields`'."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import re
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import maxatar
from maxatar.files import JSONError, read_json
from maxatar.registry import qualified_id
from maxatar_agents.algorithms.fields import ConfigError, ConfigTypeError, field_types


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """ "; did you mean X?" with X the name among `known` closest to `given` (difflib's), else the one its words'
    initials spell (`--learning-rate`: `--lr`, `learning_rate`: `lr`); "" where none is."""
    known = list(known)
    stem = given.lstrip("-")
    initials = given[: len(given) - len(stem)] + "".join(word[:1] for word in re.split("[-_]", stem))
    close = difflib.get_close_matches(given, known, n=1) or [name for name in known if name == initials != given]
    return f"; did you mean {close[0]}?" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported as one `error:` line and where to look, not the whole usage first; an
    unknown option names the closest known one (`did_you_mean`)."""

    def parse_args(self, args=None, namespace=None):
        namespace, unknown = self.parse_known_args(args, namespace)
        if unknown:
            options = [text.partition("=")[0] for text in unknown if text.startswith("-")]
            hint = did_you_mean(options[0], self._option_string_actions) if options else ""
            self.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
        return namespace

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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
            hint = did_you_mean(name, hints) if sep else ""
            raise AssignmentError(
                item, f"{option} expects FIELD=VALUE with FIELD one of: {', '.join(hints)}; got {item!r}{hint}"
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


def unknown_preset(module: Any, preset: str) -> str:
    """The message refusing a preset name the agent does not have, with the closest it has."""
    return (
        f"unknown preset {preset!r}{did_you_mean(preset, module.PRESETS)} (known presets: {', '.join(module.PRESETS)})"
    )


def preset_values(module: Any, preset: str) -> dict[str, Any]:
    """A preset's field values: one of the agent's `PRESETS`, or a JSON file of {field: value} (a path ending
    in `.json`, e.g. the `best_preset.json` of `python -m maxatar_agents.sweep`)."""
    if not is_preset_file(preset):
        if preset not in module.PRESETS:
            raise ValueError(unknown_preset(module, preset))
        return module.PRESETS[preset]
    path = Path(preset)
    try:
        values = read_json(path)  # a regular file only: a FIFO would block, /dev/zero never end
    except OSError as error:
        raise ValueError(f"preset file {preset!r}: cannot read it as JSON: {error}") from None
    except JSONError as error:
        raise ValueError(f"preset file {preset!r}: cannot read it as JSON: {error.reason}") from None
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
