"""Policies for rendering: random actions, or a trained agent loaded from a `maxatar_agents` checkpoint, or
the trained policy shipped with `maxatar_agents` for the environment (`pretrained`).

The checkpoint interface `renderers` relies on (kept small so `maxatar_agents` can satisfy it):

    maxatar_agents.checkpoint.load_policy(path: str) -> tuple[str, act]

returns the id of the environment the checkpoint was trained on and a pure, jittable
`act(key, obs) -> action index` for one unbatched observation (greedy or sampled, the agent's choice).
Returning `jax.tree_util.Partial(fn, weights)` with `fn(weights, key, obs)` keeps the weights out of the
compiled program's constants (they become its arguments).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from maxatar.core import Environment
from maxatar.registry import canonical_name
from renderers.rollout import Policy, random_policy

CHECKPOINT_MODULE = "maxatar_agents.checkpoint"
PRETRAINED = "pretrained"  # `--policy pretrained`: the shipped policy of --env (`pretrained:<id>` names one)


class PolicyError(ValueError):
    """A policy could not be loaded (missing file, missing loader, wrong environment)."""


def load_checkpoint_policy(path: str | Path, env_id: str) -> Policy:
    """The policy stored at `path` (or named `pretrained:<id>`); fails clearly if it cannot be loaded or
    belongs to another environment."""
    shipped = isinstance(path, str) and path.startswith(PRETRAINED + ":")
    if not shipped and not Path(path).exists():
        raise PolicyError(
            f"--policy must be 'random', 'pretrained' or a path to a checkpoint; {str(path)!r} does not exist"
        )
    try:
        module = importlib.import_module(CHECKPOINT_MODULE)
    except ImportError as error:
        raise PolicyError(
            f"loading the checkpoint {str(path)!r} needs `{CHECKPOINT_MODULE}.load_policy` from the "
            f"maxatar_agents package, which cannot be imported ({error})"
        ) from None
    load_policy = getattr(module, "load_policy", None)
    if load_policy is None:
        raise PolicyError(f"{CHECKPOINT_MODULE} has no load_policy(path) -> (env_id, act) function")
    try:
        checkpoint_env_id, act = load_policy(str(path))
    except (OSError, ValueError) as error:
        raise PolicyError(f"cannot load the checkpoint {str(path)!r}: {error}") from None
    if canonical_name(checkpoint_env_id) != canonical_name(env_id):
        raise PolicyError(
            f"the checkpoint {str(path)!r} was trained on {checkpoint_env_id}, not {env_id}; "
            f"pass --env {checkpoint_env_id} or a checkpoint for {env_id}"
        )
    return act


def resolve_policy(spec: str, env: Environment, env_id: str) -> Policy:
    """`"random"`, `"pretrained"` (the shipped policy for `env_id`), `"pretrained:<id>"`, or a checkpoint
    path (see the module docstring)."""
    if spec == "random":
        return random_policy(env)
    if spec == PRETRAINED:
        spec = f"{PRETRAINED}:{env_id}"
    return load_checkpoint_policy(spec, env_id)
