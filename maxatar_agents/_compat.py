"""Every name of `maxatar_agents` that 0.2.0 exported and that has since moved, in one place: each keeps working
with a DeprecationWarning that names its new place, until the version in `REMOVED_IN`.

* `MOVED_MODULES`: the modules of the flat 0.2.0 package, now in `algorithms/`, `run/` and `experiments/`.
  `import maxatar_agents.configs` (or any of them) gives an alias module whose every name warns once read.
  The algorithms' and commands' old paths (`maxatar_agents.ppo`, `.sweep`, ...) are the command modules
  (`python -m maxatar_agents.ppo` still runs); their other names come from here the same way.
* `MOVED_NAMES`: names that moved out of their module or were renamed, by their old module.

Names are written as "module:attribute" text and imported when looked up, so this module imports nothing of
the package at import time (and no layer below depends on it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

REMOVED_IN = "0.4"

# old module -> new module
MOVED_MODULES = {
    **{f"maxatar_agents.{m}": f"maxatar_agents.algorithms.{m}" for m in ("dqn", "sac", "ppo", "pqn", "q_learning")},
    **{
        f"maxatar_agents.{m}": f"maxatar_agents.algorithms.{m}"
        for m in ("program", "off_policy", "on_policy", "networks", "evaluation", "registry", "grid")
    },
    **{
        f"maxatar_agents.{m}": f"maxatar_agents.run.{m}"
        for m in ("cli", "runner", "artifacts", "checkpoint", "policies", "export", "interrupts", "configs")
    },
    "maxatar_agents.files": "maxatar.files",  # the renderers' rules for files too
    **{
        f"maxatar_agents.{m}": f"maxatar_agents.experiments.{m}"
        for m in ("study", "tracking", "redaction", "published")
    },
    "maxatar_agents.sweep": "maxatar_agents.experiments.sweep",
    "maxatar_agents.evaluate": "maxatar_agents.experiments.statistics",
}


def _search_spaces() -> dict[str, dict]:
    from maxatar_agents.algorithms.registry import AGENT_MODULES, agent_module

    return {algorithm: agent_module(algorithm).SEARCH_SPACE for algorithm in AGENT_MODULES}


def _minatar_games() -> list[str]:
    from maxatar.registry import MINATAR_GAMES

    return list(MINATAR_GAMES)


def _off_policy_agent() -> Callable:
    from maxatar_agents.algorithms.off_policy import Learning
    from maxatar_agents.algorithms.program import Agent

    def OffPolicyAgent(sequence_length, num_init_keys, init, explore, update, report, policy_field, act, sample=None):
        """An agent in the hooks of 0.2.0 (a class then, whose `explore` returned the actions alone)."""
        with_extras = lambda *args: (explore(*args), ())
        learn = Learning(sequence_length, update)
        return Agent(init, with_extras, learn, report, act, policy_field, num_init_keys, sample)

    return OffPolicyAgent


def _on_policy_agent() -> Callable:
    from maxatar_agents.algorithms.on_policy import Learning
    from maxatar_agents.algorithms.program import Agent

    def OnPolicyAgent(init_params, explore, targets, loss, report, act, sample=None):
        """An agent in the hooks of 0.2.0 (a class then)."""
        init = lambda keys, obs: init_params(keys[0], obs)
        return Agent(init, explore, Learning(targets, loss), report, act, sample=sample)

    return OnPolicyAgent


# old module -> {old name: "new.module:name", or (a function making the value, where it is now)}
MOVED_NAMES: dict[str, dict[str, str | tuple[Callable[[], Any], str]]] = {
    "maxatar_agents.checkpoint": {
        name: f"maxatar_agents.run.policies:{name}"
        for name in ("load_policy", "export_policy", "policy_env_kwargs", "policy_returns")
    },
    "maxatar_agents.sweep": {
        "SEARCH_SPACES": (_search_spaces, "each agent module's SEARCH_SPACE"),
        **{
            name: f"maxatar_agents.experiments.study:{name}"
            for name in ("make_storage", "STALE_RETRIES", "SETTING_ATTR")
        },
    },
    "maxatar_agents.published": {"GAMES": (_minatar_games, "maxatar.registry.MINATAR_GAMES")},
    "maxatar_agents.configs": {"field_comments": "maxatar_agents.algorithms.fields:field_help"},
    "maxatar_agents.off_policy": {
        "OffPolicyAgent": (_off_policy_agent, "program.Agent(learn=off_policy.Learning(...))")
    },
    "maxatar_agents.on_policy": {"OnPolicyAgent": (_on_policy_agent, "program.Agent(learn=on_policy.Learning(...))")},
}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: use {new} (the old name goes in {REMOVED_IN})", DeprecationWarning, 3)


def moved_attribute(old_module: str) -> Callable[[str], Any]:
    """The module `__getattr__` of an old module path: a moved name, or the name from the module's new place,
    with a DeprecationWarning either way."""
    new_module = MOVED_MODULES[old_module]

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        moved = MOVED_NAMES.get(old_module, {}).get(name)
        if isinstance(moved, tuple):
            make, where = moved
            _warn(f"{old_module}.{name}", where)
            return make()
        module, attribute = moved.split(":") if moved else (new_module, name)
        value = getattr(importlib.import_module(module), attribute)  # AttributeError for a name it never had
        _warn(f"{old_module}.{name}", f"{module}.{attribute}")
        return value

    return __getattr__


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old module paths that have no file of their own: each is an alias module (`moved_attribute`)."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in MOVED_MODULES or importlib.machinery.PathFinder.find_spec(fullname, path):
            return None  # not an old path, or one that is still a file in the package (a command module)
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        module = types.ModuleType(spec.name, f"Deprecated: {MOVED_MODULES[spec.name]}.")
        module.__getattr__ = moved_attribute(spec.name)
        return module

    def exec_module(self, module):
        pass


def install() -> None:
    """Make the old module paths importable (once; `maxatar_agents/__init__.py` calls it)."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())  # before any other finder that knows 0.2.0's files
