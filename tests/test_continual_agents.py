"""The agents across a sequence of tasks (`maxatar_agents.algorithms.continual`): PQN on a short protocol, trained
once as one program and once through the chunked command line, and the metrics `lab.continual` derives."""

from __future__ import annotations

import csv
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
from lab import continual as report
from maxatar_agents.algorithms import continual, dqn, pqn
from maxatar_agents.algorithms.fields import ConfigError
from maxatar_agents.run import checkpoint, cli, runner, saved

pytestmark = pytest.mark.slow  # whole trainings: the suite's slow tier (docs/contributing.md)

SEEDS = 2
# Three stages (the "short" protocol: Breakout, SpaceInvaders, Asterix) of two intervals each.
OVERRIDES = dict(
    env_id="maxatar/MinAtar-Continual-v0",
    protocol="short",
    total_steps=3 * 2 * 16 * 8,
    log_points=6,
    num_envs=16,
    num_steps=8,
    num_minibatches=4,
    eval_episodes=4,
    eval_max_steps=200,
    reset_optimizer=True,
)
GAMES = ("breakout", "space_invaders", "asterix")


def config() -> pqn.Config:
    return dataclasses.replace(pqn.Config(**pqn.PRESETS["c-chain"]), **OVERRIDES)


@pytest.fixture(scope="module")
def whole():
    train = jax.jit(jax.vmap(pqn.make_train(config())))
    return jax.device_get(train(jnp.stack([jax.random.PRNGKey(s) for s in range(SEEDS)])))


@pytest.fixture(scope="module")
def chunked(tmp_path_factory):
    out = tmp_path_factory.mktemp("continual-cli")
    sets = [f"--set={k}={v}" for k, v in OVERRIDES.items() if k not in ("env_id", "total_steps")]
    args = ["--env", OVERRIDES["env_id"], "--preset", "c-chain", "--seeds", str(SEEDS)]
    cli.run("pqn", [*args, "--total-steps", str(OVERRIDES["total_steps"]), *sets, "--out", str(out), "--no-progress"])
    return out


def test_stages_follow_the_protocol_and_each_ends_with_an_evaluation_on_every_game(whole):
    env, _ = maxatar.make("maxatar/MinAtar-Continual-v0", preset="short")
    assert env.games == GAMES
    metrics = whole.metrics
    np.testing.assert_array_equal(metrics["stage"][0], [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(metrics["task"][0], np.repeat(env.schedule.stages, 2))
    for game in GAMES:
        evaluated = ~np.isnan(metrics[f"return_{game}"])
        np.testing.assert_array_equal(evaluated, np.tile([False, True], (SEEDS, 3)))
        assert np.all(metrics[f"return_{game}"][evaluated] >= 0)
    assert np.all(np.diff(metrics["frames"][0]) == pqn.make_program(config()).schedule.frames_per_interval)


def test_plasticity_diagnostics_are_logged_every_interval(whole):
    dormant, rank, norm = (whole.metrics[k] for k in ("dormant", "feature_rank", "param_norm"))
    assert np.all((dormant >= 0) & (dormant <= 1))
    assert np.all((rank >= 1) & (rank <= min(16, config().hidden[-1])))
    assert np.all(norm > 0) and not np.array_equal(norm[:, 0], norm[:, -1])


def test_the_chunked_command_line_equals_the_whole_program_bit_for_bit(whole, chunked):
    parts = runner.compiled("pqn", config(), SEEDS)
    state = checkpoint.load_state(
        chunked, parts["template"], checkpoint.read_meta(chunked), saved.schema(parts["program"])
    )
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(whole.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    rows = list(csv.DictReader(open(chunked / "metrics.csv")))
    for game in GAMES:
        column = np.array([[float(r[f"return_{game}"]) for r in rows if int(r["seed"]) == s] for s in range(SEEDS)])
        np.testing.assert_array_equal(column, np.asarray(whole.metrics[f"return_{game}"], np.float64))


def test_a_task_switch_with_reset_optimizer_starts_adam_afresh(whole):
    # Adam's step count holds the gradient steps of the last stage only: its 2 intervals' rollouts, each
    # 2 epochs of 4 minibatches.
    rollouts = 2 * pqn.make_program(config()).schedule.steps_per_interval
    counts = [leaf for leaf in jax.tree.leaves(whole.state.learner.opt_state) if leaf.dtype == jnp.int32]
    assert counts and all(np.all(c == rollouts * 2 * 4) for c in counts)


def test_plasticity_on_known_activations():
    dead = jnp.array([[1.0, 0.0, 2.0, 0.0], [3.0, 0.0, 1.0, 0.0], [2.0, 0.0, 3.0, 0.0]])
    rank_two = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    diagnostics = continual.plasticity(lambda params, obs: [dead, rank_two], {"w": jnp.array([3.0, 4.0])}, None)
    assert float(diagnostics["dormant"]) == pytest.approx(2 / 6)
    assert int(diagnostics["feature_rank"]) == 2
    assert float(diagnostics["param_norm"]) == pytest.approx(5.0)


def test_continual_metrics_on_a_hand_made_matrix():
    # Three stages, tasks 0, 1, 2: R[i, j] after stage i + 1.
    R = np.array([[0.8, 0.1, 0.0], [0.5, 0.9, 0.2], [0.3, 0.6, 1.0]])
    stages = [0, 1, 2]
    assert report.average_performance(R, stages) == pytest.approx((0.3 + 0.6 + 1.0) / 3)
    assert report.forgetting(R, stages) == pytest.approx(((0.8 - 0.3) + (0.9 - 0.6)) / 2)
    assert report.forward_transfer(R, stages) == pytest.approx((0.1 + 0.2) / 2)


def test_keep_best_and_a_mixed_batch_are_refused_with_the_field_named():
    with pytest.raises(ConfigError, match="keep_best"):
        pqn.make_program(dataclasses.replace(config(), keep_best=True))
    with pytest.raises(ConfigError, match="protocol"):
        dataclasses.replace(config(), env_id="maxatar/Breakout-v0")
    assert dqn.PRESETS["c-chain"]["protocol"] == "c-chain"


def test_a_multitask_batch_trains_each_group_on_its_own_game():
    """Through the agents the MultiTask id's batch is spread over its games (`mixed_groups`), in training and in
    the evaluation, each group playing its game exactly as that game's own environment."""
    env, _ = maxatar.make("maxatar/MinAtar-MultiTask-v0")
    cfg = dataclasses.replace(
        pqn.Config(**pqn.PRESETS["minatar"]),
        env_id="maxatar/MinAtar-MultiTask-v0",
        total_steps=16 * 8,
        log_points=1,
        num_envs=16,
        num_steps=8,
        num_minibatches=4,
        eval_episodes=10,
        eval_max_steps=50,
    )
    program = pqn.make_program(cfg)
    state = jax.jit(program.init)(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(state.env_state.game.task, env.assignment(16))
    state, _ = jax.jit(program.interval)(state, jnp.int32(0))
    np.testing.assert_array_equal(state.env_state.game.task, env.assignment(16))
    # Group k's environments hold game k's state; the other games' slots stay as they began (zeros).
    for k, start, stop in env.groups(16):
        for other, game in enumerate(state.env_state.game.games):
            if other != k:
                assert not any(np.asarray(leaf)[start:stop].any() for leaf in jax.tree.leaves(game))
    returns = jax.jit(program.evaluate)(state)
    assert returns.shape == (10,) and np.isfinite(returns).all()
