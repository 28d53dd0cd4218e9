"""Gymnasium ids with flat float32 observations, for clients whose network does not flatten (CleanRL's DQN).

CleanRL's `QNetwork` is an MLP over `np.prod(obs_shape)` inputs and its `forward` does not flatten, so a
10x10xC bool observation has to reach it flat. Importing this module registers, for MaxAtar and for the
reference alike, the same two wrappers on top of the original id (Gymnasium's own `FlattenObservation` and
`DtypeObservation(float32)`, through the spec's `additional_wrappers`, so `gymnasium.make` applies them after
its usual checker wrappers):

    bench/MaxAtar-Breakout-flat-v0   = maxatar/Breakout-v0     + flatten + float32
    bench/MinAtar-Breakout-flat-v0   = MinAtar/Breakout-v0     + flatten + float32   (the reference)

and likewise for Asterix, Freeway, Seaquest, SpaceInvaders, Doors (MaxAtar only) and CartPole
(`bench/Gymnasium-CartPole-flat-v1` for the reference). A script run unchanged picks them up through
Gymnasium's `module:id` syntax, which imports the module first:

    python cleanrl/dqn.py --env-id benchmarks.client_ids:bench/MaxAtar-Breakout-flat-v0

The specs copy the original ids' entry points and keyword arguments at import time, so they follow whatever
`maxatar/...` and `MinAtar/...` are registered as.
"""

from __future__ import annotations

import gymnasium
import minatar.gym
import numpy as np
from gymnasium.envs.registration import WrapperSpec

import maxatar
from maxatar.registry import MINATAR_GAMES

FLAT_WRAPPERS = (
    WrapperSpec("FlattenObservation", "gymnasium.wrappers:FlattenObservation", {}),
    WrapperSpec("DtypeObservation", "gymnasium.wrappers:DtypeObservation", {"dtype": np.float32}),
)
# MaxAtar short id -> the reference's Gymnasium id (MinAtar's own env class, Gymnasium's classic CartPole).
# Doors has no reference. Both sides have the full action set (MinAtar's v0 and MaxAtar's default).
REFERENCE_IDS = {"CartPole-v1": "CartPole-v1", **{game: f"MinAtar/{game}" for game in MINATAR_GAMES}}


def flat_id(side: str, env_id: str) -> str:
    """`flat_id("MaxAtar", "Breakout-v0")` -> `bench/MaxAtar-Breakout-flat-v0`."""
    name, version = env_id.rsplit("/", 1)[-1].rsplit("-", 1)
    return f"bench/{side}-{name}-flat-{version}"


def register_flat(new_id: str, base_id: str) -> None:
    """Register `new_id` as `base_id` plus `FLAT_WRAPPERS` (idempotent)."""
    if new_id in gymnasium.registry:
        return
    base = gymnasium.spec(base_id)
    gymnasium.register(
        id=new_id,
        entry_point=base.entry_point,
        kwargs=dict(base.kwargs),
        max_episode_steps=base.max_episode_steps,
        reward_threshold=base.reward_threshold,
        additional_wrappers=FLAT_WRAPPERS,
    )


def register_reference() -> None:
    """MinAtar's package defines its Gymnasium ids but does not register them on import."""
    if "MinAtar/Breakout-v0" not in gymnasium.registry:
        minatar.gym.register_envs()


def register_all() -> dict[str, tuple[str, str | None]]:
    """Register every flat id; returns {MaxAtar short id: (MaxAtar flat id, reference flat id or None)}."""
    register_reference()
    pairs = {}
    for short in maxatar.registered_ids():
        short = short.removeprefix("maxatar/")
        ours = flat_id("MaxAtar", short)
        register_flat(ours, f"maxatar/{short}")
        reference = REFERENCE_IDS.get(short)
        theirs = None
        if reference is not None:
            theirs = flat_id("MinAtar" if reference.startswith("MinAtar/") else "Gymnasium", reference)
            register_flat(theirs, reference)
        pairs[short] = (ours, theirs)
    return pairs


FLAT_IDS = register_all()
