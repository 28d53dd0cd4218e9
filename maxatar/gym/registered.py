"""The entry points Gymnasium's registration gives each id (`maxatar.gym.registered:Breakout-v0`, and
`vector:Breakout-v0`'s spelling `vector_Breakout-v0` for `make_vec`): each knows its own id.

Gymnasium passes a make's keywords to the entry point merged over the registered ones, so an id given as a
keyword (`gymnasium.make("maxatar/Breakout-v0", env_id="maxatar/Asterix-v0")`) would play another game under
the id asked for. The id is the registration's alone: a keyword naming it is refused.
"""

from __future__ import annotations

import functools
import inspect

from maxatar.checks import InputError
from maxatar.registry import full_id, keywords, registered_ids

VECTOR = "vector_"
INTERNAL = ("env_id",)  # what the registration itself fills in


def _make(cls: type, env_id: str, /, *args, **kwargs):
    internal = [name for name in INTERNAL if name in kwargs]
    if internal or args:  # Gymnasium passes keywords only; a positional argument would land on the id's place
        own = [p for p in inspect.signature(cls).parameters if p not in ("self", "kwargs", *INTERNAL)]
        given = f"positional argument(s) {list(args)}" if args else f"argument(s) {internal}"
        raise InputError(
            f"{env_id}: unexpected {given} (the id is the registration's own); it takes the keywords "
            f"{', '.join([*own, *keywords(env_id)])}"
        )
    return cls(env_id, **kwargs)


def __getattr__(name: str):
    from maxatar.gym.single import MaxAtarEnv
    from maxatar.gym.vector import MaxAtarVectorEnv

    vector = name.startswith(VECTOR)
    env_id = full_id(name.removeprefix(VECTOR))  # another package's id is spelled whole: `my_games/Catch-v0`
    if env_id not in registered_ids(variants=True):  # `__path__`, a typo: not an entry point
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return functools.partial(_make, MaxAtarVectorEnv if vector else MaxAtarEnv, env_id)
