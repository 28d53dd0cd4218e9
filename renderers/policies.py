"""Policies for rendering: random actions, or a trained agent loaded from a `maxatar_agents` checkpoint, or
the trained policy shipped with `maxatar_agents` for the environment (`pretrained`).

The checkpoint interface `renderers` relies on (kept small so `maxatar_agents` can satisfy it):

    maxatar_agents.run.policies.load_policy(path: str) -> tuple[str, act]

    maxatar_agents.run.policies.policy_env_kwargs(path: str) -> dict   (optional)

`load_policy` returns the id of the environment the checkpoint was trained on and a pure, jittable
`act(key, obs) -> action index` for one unbatched observation (greedy or sampled, the agent's choice).
Returning `jax.tree_util.Partial(fn, weights)` with `fn(weights, key, obs)` keeps the weights out of the
compiled program's constants (they become its arguments). `policy_env_kwargs` gives the `maxatar.make`
keywords of the environment it was trained in (setting, sticky actions, observation type): the policy is
played there, since its action indices and observations mean something only in that environment.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from maxatar.extras import require
from maxatar.registry import canonical_name
from renderers.rollout import Policy

CHECKPOINT_MODULE = "maxatar_agents.run.policies"
AGENT_MODULES = ("flax", "optax")  # what loading a trained policy imports, from the `agents` extra
PRETRAINED = "pretrained"  # `--policy pretrained`: the shipped policy of --env (`pretrained:<id>` names one)
DEFAULT_SETTING = "minatar"  # what a checkpoint without a recorded setting was trained in (maxatar.make's default)


class PolicyError(ValueError):
    """A policy could not be loaded (missing file, missing loader, wrong environment)."""


def load_checkpoint_policy(path: str | Path, env_id: str) -> tuple[Policy, dict[str, Any]]:
    """The policy stored at `path` (or named `pretrained:<id>`) and the `maxatar.make` keywords of the
    environment it was trained in; fails clearly if it cannot be loaded or belongs to another environment."""
    shipped = isinstance(path, str) and path.startswith(PRETRAINED + ":")
    if not shipped and not Path(path).exists():
        raise PolicyError(
            f"--policy must be 'random', 'pretrained' or a path to a checkpoint; {str(path)!r} does not exist"
        )
    require("agents", *AGENT_MODULES)  # before the import, whose error would name only the first one missing
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
    env_kwargs = getattr(module, "policy_env_kwargs", None)
    return act, ({} if env_kwargs is None else dict(env_kwargs(str(path))))


def resolve_policy(spec: str | None, env_id: str, setting: str | None = None) -> tuple[Policy | None, dict[str, Any]]:
    """The policy `spec` names and the `maxatar.make` keywords of the environment to play it in.

    `"random"` and None (a person plays) give no policy here (random play is `rollout.random_policy` of the
    environment made) and play in `setting` (None: the environment's default); `"pretrained"` (the shipped
    policy for `env_id`), `"pretrained:<id>"` or a checkpoint path play in the environment they were trained
    in, and a `setting` other than theirs is an error rather than a policy choosing actions it never learned
    (see the module docstring)."""
    if spec in (None, "random"):
        return None, ({} if setting is None else {"setting": setting})
    if spec == PRETRAINED:
        spec = f"{PRETRAINED}:{env_id}"
    act, env_kwargs = load_checkpoint_policy(spec, env_id)
    trained_in = env_kwargs.get("setting", DEFAULT_SETTING)
    if setting is not None and setting != trained_in:
        raise PolicyError(
            f"the policy {spec!r} was trained in the {trained_in!r} setting, not {setting!r}: its actions and "
            f"observations mean something only there; leave out --setting to play it in its own"
        )
    return act, env_kwargs
