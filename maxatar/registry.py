"""Environment ids -> environment classes, and `maxatar.make`."""

from __future__ import annotations

import dataclasses
import importlib
from typing import NamedTuple

import numpy as np

from maxatar import compilation_cache
from maxatar.checks import check_env_id, check_params
from maxatar.core import Environment, EnvParams
from maxatar.pixels import with_obs_type
from maxatar.settings import setting_kwargs


class Spec(NamedTuple):
    """Where an id's class lives (imported on first use) and the constructor arguments it fixes."""

    entry_point: str
    kwargs: dict


def _minatar(module: str, cls: str) -> dict[str, Spec]:
    """One id per game, as ALE does: the action set is the `full_action_space` keyword, not a version."""
    return {f"{cls}-v0": Spec(f"maxatar.games.{module}:{cls}", {})}


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
}
MINATAR_GAMES = tuple(MINATAR_SPECS)  # canonical names of the five MinAtar games

NAMESPACE = "maxatar"


def registered_ids() -> list[str]:
    """Every id, with the `maxatar/` namespace, as Gymnasium knows them."""
    return [f"{NAMESPACE}/{name}" for name in SPECS]


def canonical_name(env_id: str) -> str:
    """`maxatar:maxatar/Breakout-v0`, `maxatar/Breakout-v0` and `Breakout-v0` all name `Breakout-v0`; any other
    module prefix is refused (`maxatar.checks.check_env_id`)."""
    return check_env_id(env_id)


def _spec(env_id: str) -> Spec:
    name = canonical_name(env_id)
    if name not in SPECS:
        raise ValueError(f"unknown environment id {env_id!r}; known ids: {', '.join(registered_ids())}")
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
    picture as its observation (`maxatar.pixels.PixelObservation`), `obs_scale` its pixels per grid cell.

    It also turns on JAX's persistent compilation cache (`maxatar.compilation_cache`; `MAXATAR_CACHE_DIR=off`
    turns it off), so the programs compiled for this environment are reused by the next process.
    """
    compilation_cache.enable()
    spec = _spec(env_id)
    cls = env_class(env_id)
    overrides = {**setting_kwargs(cls, canonical_name(env_id), setting), **overrides}
    obs_type, obs_scale = overrides.pop("obs_type", None), overrides.pop("obs_scale", None)
    ctor_kwargs = dict(spec.kwargs)
    if "full_action_space" in overrides:
        full = overrides.pop("full_action_space")
        if not isinstance(full, (bool, np.bool_)):
            raise TypeError(f"full_action_space must be True or False, got {full!r}")
        full = bool(full)
        if cls.minimal_action_set is None and not full:
            raise ValueError(f"{env_id} has a single action set; full_action_space=False does not apply")
        ctor_kwargs["minimal_actions"] = not full
    param_fields = {f.name for f in dataclasses.fields(cls.params_class)}
    param_overrides = {k: v for k, v in overrides.items() if k in param_fields}
    ctor_kwargs.update({k: v for k, v in overrides.items() if k not in param_fields})
    try:
        env = cls(**ctor_kwargs)
    except TypeError as error:
        raise TypeError(f"{env_id}: unexpected argument(s) {sorted(ctor_kwargs)}: {error}") from None
    env = with_obs_type(env, obs_type, obs_scale)
    params = env.default_params()
    if param_overrides:
        params = dataclasses.replace(params, **param_overrides)
    return env, check_params(params, env)  # every field by its kind (maxatar.checks)
