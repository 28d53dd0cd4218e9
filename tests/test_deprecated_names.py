"""Names a released version exported that have moved still work, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import pytest

from maxatar.registry import MINATAR_GAMES
from maxatar_agents.experiments import published
from maxatar_agents.run import checkpoint, policies


@pytest.mark.parametrize("name", ["load_policy", "export_policy", "policy_env_kwargs", "policy_returns"])
def test_the_policies_moved_from_checkpoint_to_policies(name):
    with pytest.warns(DeprecationWarning, match=f"maxatar_agents.run.policies.{name}"):
        assert getattr(checkpoint, name) is getattr(policies, name)
    from maxatar_agents import load_policy

    assert load_policy is policies.load_policy


def test_the_game_list_is_the_registry_s():
    with pytest.warns(DeprecationWarning, match="maxatar.registry.MINATAR_GAMES"):
        assert published.GAMES == list(MINATAR_GAMES)
    with pytest.raises(AttributeError):
        checkpoint.no_such_name  # noqa: B018
