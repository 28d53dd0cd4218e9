"""Environment ids -> environment classes, and `maxatar.make`."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from typing import NamedTuple

from maxatar import compilation_cache
from maxatar.checks import InputError, check_env_id, check_flag, check_params, check_registered
from maxatar.core import Environment, EnvParams
from maxatar.pixels import with_obs_type
from maxatar.settings import setting_kwargs


class Spec(NamedTuple):
    """Where an id's class lives (imported on first use), the constructor arguments it fixes, and the observation
    type it fixes (`obs_type`: None for the game's own observation)."""

    entry_point: str
    kwargs: dict
    obs_type: str | None = None


# Observation variants with ids of their own, as ALE's `-ram` ids: `<Game>-flat-v0` is `<Game>-v0` with
# `obs_type="flat"` (`maxatar.pixels.FlatObservation`: one float32 vector), for clients that take only an id and
# an MLP that does not flatten (CleanRL's `dqn.py`, `dqn_jax.py`, `ppo.py`).
ID_OBS_TYPES = ("flat",)


def _minatar(module: str, cls: str) -> dict[str, Spec]:
    """One id per game, as ALE does: the action set is the `full_action_space` keyword, not a version; and one
    id per observation variant (`ID_OBS_TYPES`), the same game with that `obs_type`."""
    entry_point = f"maxatar.games.{module}:{cls}"
    return {
        f"{cls}-v0": Spec(entry_point, {}),
        **{f"{cls}-{obs_type}-v0": Spec(entry_point, {}, obs_type) for obs_type in ID_OBS_TYPES},
    }


# One line per environment; its folder (`maxatar/games/<game>/`) holds everything else about it.
MINATAR_SPECS: dict[str, Spec] = {
    **_minatar("breakout", "Breakout"),
    **_minatar("asterix", "Asterix"),
    **_minatar("freeway", "Freeway"),
    **_minatar("seaquest", "Seaquest"),
    **_minatar("space_invaders", "SpaceInvaders"),
}
SPECS: dict[str, Spec] = {
    "CartPole-v1": Spec("maxatar.games.cartpole:CartPole", {}),
    "Doors-v0": Spec("maxatar.games.doors:Doors", {}),
    **MINATAR_SPECS,
    # The MinAtar games in one environment (`maxatar.continual`): a sequence of them, or a batch spread over them.
    "MinAtar-Continual-v0": Spec("maxatar.continual:MultiGame", {}),
    "MinAtar-MultiTask-v0": Spec("maxatar.continual:MultiTask", {}),
}
MINATAR_GAMES = tuple(name for name, spec in MINATAR_SPECS.items() if spec.obs_type is None)  # the five games

NAMESPACE = "maxatar"


def registered_ids(variants: bool = False) -> list[str]:
    """Every id, with the `maxatar/` namespace, as Gymnasium knows them; with `variants`, the observation
    variants' ids too (`maxatar/Breakout-flat-v0`, ...)."""
    return [f"{NAMESPACE}/{name}" for name, spec in SPECS.items() if variants or spec.obs_type is None]


def canonical_name(env_id: str) -> str:
    """`maxatar:maxatar/Breakout-v0`, `maxatar/Breakout-v0` and `Breakout-v0` all name `Breakout-v0`; any other
    module prefix is refused (`maxatar.checks.check_env_id`)."""
    return check_env_id(env_id)


def _spec(env_id: str) -> Spec:
    name = canonical_name(env_id)
    if name not in SPECS:
        check_registered(env_id, registered_ids())
    return SPECS[name]


def env_class(env_id: str) -> type[Environment]:
    """The environment class of `env_id`, importing its module only now (ids list games cheaply)."""
    module, cls = _spec(env_id).entry_point.split(":")
    return getattr(importlib.import_module(module), cls)


def make(env_id: str, setting: str = "minatar", **overrides) -> tuple[Environment, EnvParams]:
    """The pure environment and its default params for `env_id` (the `maxatar/` prefix is optional).

    `setting` picks the knobs of a paper's MinAtar setting (`maxatar.settings`): "minatar" (the default: sticky
    actions 0.1, full action set, ramping, no time limit), "gymnax" or "pgx"; explicit keywords override it.
    Keyword arguments naming a field of the environment's own params class (`sticky_action_prob`,
    `difficulty_ramping`, `max_steps`, `difficulty`, and a game's own, such as Doors' `random_doors`) set that
    default; `full_action_space=False` selects the game's minimal action set (ALE's keyword; the full set is
    the default, as in MinAtar's published results); any other keyword goes to the environment's constructor
    (for example Doors' `size`). `obs_type="rgb"` or `"grayscale"` (ALE's keyword) gives the environment's
    picture as its observation (`maxatar.pixels.PixelObservation`), `obs_scale` its pixels per grid cell;
    `obs_type="flat"` its observation as one float32 vector (`maxatar.pixels.FlatObservation`), which the
    `<Game>-flat-v0` ids fix.

    It also turns on JAX's persistent compilation cache (`maxatar.compilation_cache`; `MAXATAR_CACHE_DIR=off`
    turns it off), so the programs compiled for this environment are reused by the next process.
    """
    compilation_cache.enable()
    spec = _spec(env_id)
    cls = env_class(env_id)
    overrides = {**setting_kwargs(cls, canonical_name(env_id), setting), **overrides}
    obs_type, obs_scale = overrides.pop("obs_type", spec.obs_type), overrides.pop("obs_scale", None)
    if spec.obs_type is not None and obs_type != spec.obs_type:
        raise InputError(f"{env_id} fixes obs_type={spec.obs_type!r}; for obs_type={obs_type!r} use its plain id")
    if "minimal_actions" in overrides:  # the constructor's own name for the action set, not a keyword of make
        raise InputError(f"{env_id}: unexpected argument 'minimal_actions'; the action set is full_action_space")
    ctor_kwargs = dict(spec.kwargs)
    if "full_action_space" in overrides:
        full = check_flag("full_action_space", overrides.pop("full_action_space"))
        if cls.minimal_action_set is None and not full:
            raise InputError(f"{env_id} has a single action set; full_action_space=False does not apply")
        ctor_kwargs["minimal_actions"] = not full
    param_fields = {f.name for f in dataclasses.fields(cls.params_class)}
    param_overrides = {k: v for k, v in overrides.items() if k in param_fields}
    ctor_kwargs.update({k: v for k, v in overrides.items() if k not in param_fields})
    try:
        env = cls(**ctor_kwargs)
    except TypeError as error:
        # Name the user's keywords only (not `minimal_actions`, this function's own) and what the id takes.
        takes = [p for p in inspect.signature(cls).parameters if p not in ("self", "minimal_actions")]
        unknown = sorted(k for k in ctor_kwargs if k != "minimal_actions" and k not in takes)
        if not unknown:
            raise InputError(f"{env_id}: {error}") from None
        accepted = ", ".join(keywords(env_id))
        raise InputError(f"{env_id}: unexpected argument(s) {unknown}; it takes {accepted}") from None
    env = with_obs_type(env, obs_type, obs_scale)
    return env, checked_params(env, param_overrides)


def keywords(env_id: str) -> list[str]:
    """The keywords `make(env_id, ...)` takes: the setting's, the observation's, the params' fields and the
    environment constructor's own."""
    cls = env_class(env_id)
    takes = [p for p in inspect.signature(cls).parameters if p not in ("self", "minimal_actions")]
    params = sorted(f.name for f in dataclasses.fields(cls.params_class))
    return ["setting", "full_action_space", "obs_type", "obs_scale", *params, *takes]


def checked_params(env: Environment, overrides: dict) -> EnvParams:
    """`env`'s default params with `overrides`, every field checked by its kind (`maxatar.checks`). Params are
    immutable, so where the overrides are hashable (plain scalars, not batched arrays) they are made and checked
    once per environment and overrides: doing it anew was a sixth of a Gymnasium make. The key holds each
    value's type, because the checks tell apart values that compare equal (True is no probability, 1 is)."""
    key = tuple((name, type(value), value) for name, value in sorted(overrides.items()))
    try:
        hash((env, key))
    except TypeError:
        return _checked_params(env, key)
    return _cached_checked_params(env, key)


def _checked_params(env: Environment, key: tuple) -> EnvParams:
    params = env.default_params()
    if key:
        params = dataclasses.replace(params, **{name: value for name, _, value in key})
    return check_params(params, env)


_cached_checked_params = functools.lru_cache(maxsize=256)(_checked_params)
