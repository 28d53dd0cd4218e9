"""The published figures (`experiments.published`, `lab.published`) the evaluation, benchmarks and reports set
results beside: each gymnax-setting figure names its source file and the commit it was read at, uses MaxAtar's
game ids, and is a finite positive return with a positive budget; MinAtar's DQN figures cover every game."""

from __future__ import annotations

import math
import re

import pytest

from lab.published import GYMNAX_SETTING_BUDGETS, GYMNAX_SETTING_PUBLISHED
from maxatar.registry import MINATAR_GAMES as GAMES
from maxatar_agents.experiments.published import MINATAR_DQN

# "owner/name path @ <40-hex commit>"
SOURCE = re.compile(r"^[\w.-]+/[\w.-]+ \S+ @ [0-9a-f]{40}$")


def test_minatar_dqn_covers_every_game():
    assert set(MINATAR_DQN) == set(GAMES)
    assert all(isinstance(v, (int, float)) and v > 0 for v in MINATAR_DQN.values())


@pytest.mark.parametrize("name", sorted(GYMNAX_SETTING_PUBLISHED))
def test_published_entry(name):
    entry = GYMNAX_SETTING_PUBLISHED[name]
    assert set(entry) == {"algorithm", "returns", "frames", "source", "how"}
    assert entry["algorithm"] in name
    assert SOURCE.match(entry["source"]), entry["source"]
    assert entry["how"].strip()
    assert isinstance(entry["frames"], int) and entry["frames"] > 0
    returns = entry["returns"]
    assert returns and set(returns) <= set(GAMES)
    for game, value in returns.items():
        assert isinstance(value, (int, float)) and not isinstance(value, bool), game
        assert math.isfinite(value) and value > 0, game


@pytest.mark.parametrize("name", sorted(GYMNAX_SETTING_BUDGETS))
def test_budget_entry(name):
    entry = GYMNAX_SETTING_BUDGETS[name]
    assert set(entry) == {"frames", "num_envs", "source", "how"}
    assert SOURCE.match(entry["source"]), entry["source"]
    assert entry["how"].strip()
    assert isinstance(entry["frames"], int) and entry["frames"] > 0
    assert isinstance(entry["num_envs"], int) and entry["num_envs"] > 0


def test_published_budgets_agree():
    """A source with published returns has its budget recorded, and the two agree."""
    for name, entry in GYMNAX_SETTING_PUBLISHED.items():
        source = "gymnax-blines PPO" if name.startswith("gymnax") else name
        assert GYMNAX_SETTING_BUDGETS[source]["frames"] == entry["frames"], name
