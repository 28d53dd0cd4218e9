"""Names 0.2.0 exported that have moved still work until the version that removes them, with a DeprecationWarning
naming the new place; the tables of them are `maxatar._compat` and `maxatar_agents._compat`, the one place each."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

import maxatar
from maxatar import _compat as maxatar_compat
from maxatar.checks import InputError
from maxatar.registry import MINATAR_GAMES
from maxatar_agents import _compat
from maxatar_agents.algorithms import off_policy, on_policy, program
from maxatar_agents.run import policies


@pytest.mark.parametrize("old", sorted(_compat.MOVED_MODULES))
def test_every_module_of_the_flat_package_still_imports_and_its_names_warn(old):
    module = importlib.import_module(old)
    new = importlib.import_module(_compat.MOVED_MODULES[old])
    name = next(n for n in vars(new) if not n.startswith("_") and n not in _compat.MOVED_NAMES.get(old, {}))
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} is deprecated: use .* goes in {_compat.REMOVED_IN}"):
        assert getattr(module, name) is getattr(new, name)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", ["load_policy", "export_policy", "policy_env_kwargs", "policy_returns"])
def test_the_policies_moved_from_checkpoint_to_policies(name):
    from maxatar_agents import checkpoint

    with pytest.warns(DeprecationWarning, match=f"maxatar_agents.run.policies.{name}"):
        assert getattr(checkpoint, name) is getattr(policies, name)
    from maxatar_agents import load_policy

    assert load_policy is policies.load_policy


def test_moved_and_renamed_names():
    from maxatar_agents import configs, published, sweep
    from maxatar_agents.algorithms.fields import field_help
    from maxatar_agents.algorithms.registry import AGENT_MODULES
    from maxatar_agents.experiments import study

    with pytest.warns(DeprecationWarning, match="maxatar.registry.MINATAR_GAMES"):
        assert published.GAMES == list(MINATAR_GAMES)
    with pytest.warns(DeprecationWarning, match="field_help"):
        assert configs.field_comments is field_help
    with pytest.warns(DeprecationWarning, match="SEARCH_SPACE"):
        assert sorted(sweep.SEARCH_SPACES) == sorted(AGENT_MODULES)
    with pytest.warns(DeprecationWarning, match="maxatar_agents.experiments.study.make_storage"):
        assert sweep.make_storage is study.make_storage


def test_the_skeletons_earlier_agent_hooks_still_build_an_agent():
    from maxatar_agents import off_policy as old_off_policy
    from maxatar_agents import on_policy as old_on_policy

    with pytest.warns(DeprecationWarning, match="program.Agent"):
        OffPolicyAgent = old_off_policy.OffPolicyAgent
    agent = OffPolicyAgent(2, 1, "init", lambda *args: "actions", "update", "report", "params", "act")
    assert isinstance(agent, program.Agent) and agent.learn == off_policy.Learning(2, "update")
    assert agent.explore(None, None, None, 0) == ("actions", ())
    with pytest.warns(DeprecationWarning, match="program.Agent"):
        OnPolicyAgent = old_on_policy.OnPolicyAgent
    agent = OnPolicyAgent(lambda key, obs: (key, obs), "explore", "targets", "loss", "report", "act")
    assert agent.init(["key", "other"], "obs") == ("key", "obs")
    assert agent.learn == on_policy.Learning("targets", "loss")


@pytest.mark.slow  # a whole training / fresh interpreters
def test_the_old_command_modules_still_run():
    """`python -m maxatar_agents.<old module>` is still each command (here: its --help)."""
    for module in ("maxatar_agents.ppo", "maxatar_agents.sweep", "maxatar_agents.evaluate", "maxatar_agents.export"):
        done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, check=True)
        assert f"python -m {module}" in done.stdout and "Warning" not in done.stderr


def test_keep_last_action_moved():
    """`maxatar.core.keep_last_action`, released, still works, with a warning naming its new place."""
    _, fresh = maxatar.make("Breakout-v0")[0].reset(jax.random.key(0))
    previous = dataclasses.replace(fresh, last_action=jnp.int32(3))
    with pytest.warns(DeprecationWarning, match="maxatar.episode.keep_last_action"):
        old = maxatar.core.keep_last_action(fresh, previous)
    assert int(old.last_action) == int(maxatar.keep_last_action(fresh, previous).last_action) == 3
    with pytest.raises(AttributeError):
        maxatar.core.no_such_name  # noqa: B018


def test_a_game_class_of_0_2_0_is_refused_with_what_to_declare():
    """A custom game written for 0.2.0 set the renderers' and the checks' data as loose class attributes; they
    would be ignored now, so making it is one error saying what to declare instead."""
    from maxatar.core import TRAIL
    from maxatar.games.doors import Doors

    class Old(Doors):
        channels = (TRAIL,)
        state_ranges = {"x": range(3)}

    with pytest.raises(InputError, match=r"Old sets channels, state_ranges.*Looks\(channels=.*States\(ranges="):
        Old()
    assert set(maxatar_compat.LOOSE_ATTRIBUTES) == {
        "channels",
        "draw_order",
        "canvas_cells",
        "keymap",
        "idle_action",
        "state_ranges",
    }
