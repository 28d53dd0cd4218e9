"""The trained policies shipped in the package (`maxatar_agents/pretrained/`, made by
`python -m lab.results`): one per MinAtar game, loadable by name, playing as recorded, and
watchable through the renderers."""

from __future__ import annotations

import json
import os

import imageio.v3 as iio
import numpy as np
import pytest

import maxatar_agents
from maxatar.registry import MINATAR_GAMES as GAMES
from maxatar_agents.run import checkpoint, policies
from renderers.cli import main as renderers_main

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)


def test_every_minatar_game_has_a_small_shipped_policy():
    assert checkpoint.pretrained_ids() == sorted(f"maxatar/{g}" for g in GAMES)
    sizes = [f.stat().st_size for f in checkpoint.PRETRAINED_DIR.rglob("*") if f.is_file()]
    assert sum(sizes) < 5 * 2**20  # a few MB in all


@pytest.mark.parametrize("game", GAMES)
def test_shipped_policy_plays_as_recorded(game):
    name = f"pretrained:maxatar/{game}"
    env_id, act = maxatar_agents.load_policy(name)
    assert env_id == f"maxatar/{game}"
    meta = checkpoint.read_meta(checkpoint.pretrained_path(game))
    record = meta["record"]
    assert meta["policy_only"] and meta["config"]["sticky_action_prob"] is None  # MinAtar's setting: 0.1
    assert policies.policy_env_kwargs(name) == {"setting": "minatar", "obs_type": None, "obs_scale": None}
    assert record["greedy_episodes"] == 100 and record["run"].endswith(game)
    check = record["check"]
    returns = policies.policy_returns(name, check["episodes"], check["key"])
    # The fixed episodes played at export give the same return now (a little slack for another CPU's
    # rounding flipping an action), and that return is in line with the 100-episode figure it was chosen by.
    assert abs(returns.mean() - check["return_mean"]) <= 0.1 * abs(check["return_mean"]) + 0.5
    assert returns.mean() >= 0.5 * record["greedy_return"]


def test_unknown_pretrained_name_lists_what_is_shipped():
    with pytest.raises(checkpoint.CheckpointError, match="no pretrained policy for 'maxatar/CartPole-v1'; shipped: "):
        maxatar_agents.load_policy("pretrained:maxatar/CartPole-v1")


def test_renderers_draw_and_show_the_shipped_policy(tmp_path, capsys, monkeypatch):
    out = tmp_path / "trained.gif"
    args = ["gif", "--env", "maxatar/Breakout-v0", "--policy", "pretrained", "--steps", "40", "--out", str(out)]
    assert renderers_main(args) == 0
    assert iio.imread(out).shape[0] == 40
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    assert renderers_main(["play", "--env", "maxatar/Breakout-v0", "--policy", "pretrained", "--steps", "30"]) == 0
    with pytest.raises(SystemExit):
        renderers_main(["play", "--env", "maxatar/CartPole-v1", "--policy", "pretrained", "--steps", "5"])
    assert "no pretrained policy for 'maxatar/CartPole-v1'" in capsys.readouterr().err


def test_shipped_records_are_json_without_code():
    medium = checkpoint.PRETRAINED_DIR / "medium"  # the offline datasets' medium policies, shipped alike
    for directory in [*checkpoint.PRETRAINED_DIR.iterdir(), *medium.iterdir()]:
        if directory == medium:
            continue
        assert sorted(os.listdir(directory)) == sorted([checkpoint.META_FILE, checkpoint.STATE_FILE])
        json.loads((directory / checkpoint.META_FILE).read_text())
        with np.load(directory / checkpoint.STATE_FILE, allow_pickle=False) as arrays:
            assert all(arrays[name].dtype != object for name in arrays.files)


def test_load_policy_act_is_jitted_and_the_same_policy():
    """`act` is jitted (fast for one observation in a Python loop: one dispatch, not the network op by op) and
    the same policy: one observation, a batch, inside a jitted caller, and with the params passed."""
    import gymnasium
    import jax

    env_id, act = maxatar_agents.load_policy("pretrained:maxatar/Breakout-v0")
    assert isinstance(act.func, type(jax.jit(lambda x: x)))  # a jitted function, not op-by-op dispatch
    env = gymnasium.make(env_id)
    obs = [env.reset(seed=0)[0]] + [env.step(t % 3)[0] for t in range(15)]
    one_by_one = np.array([int(act(None, o)) for o in obs])
    np.testing.assert_array_equal(np.asarray(act(None, np.stack(obs))), one_by_one)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda f, o: f(None, o))(act, np.stack(obs))), one_by_one)
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(lambda o: act(None, o)))(np.stack(obs))), one_by_one)
    np.testing.assert_array_equal(np.asarray(act(jax.random.PRNGKey(3), np.stack(obs))), one_by_one)  # a key: its own
    params = act.args[0]
    np.testing.assert_array_equal(np.asarray(act(params, np.stack(obs))), one_by_one)
    unjitted = act.func.__wrapped__  # the same computation without jit: the same actions
    np.testing.assert_array_equal(np.asarray(unjitted(params, None, np.stack(obs))), one_by_one)
    assert repr(act) == "Policy(132,822 parameters)"  # its size, not every weight (a Partial's repr ran to 34k chars)
    assert type(jax.tree.map(lambda x: x, act)) is type(act)
