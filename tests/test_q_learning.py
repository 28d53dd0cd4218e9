"""Tabular agents (`algorithms.q_learning`): TD targets by hand, uniform tie-breaks, the tabular view and the
transition table against the environment, learning Doors, the command line, bad configs and determinism."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
from maxatar.core import EnvState
from maxatar_agents.algorithms import q_learning
from maxatar_agents.algorithms.q_learning import Config
from maxatar_agents.run import cli, policies

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

# Small and shared: every distinct config is one compile.
SMALL = dict(num_envs=8, total_steps=8 * 50, log_points=2, eval_episodes=4)


def test_td_targets_by_hand():
    q_next = jnp.array([1.0, 3.0, 2.0, 3.0])
    assert float(q_learning.q_learning_target(1.0, False, q_next, 0.9)) == pytest.approx(1.0 + 0.9 * 3.0)
    assert float(q_learning.q_learning_target(1.0, True, q_next, 0.9)) == pytest.approx(1.0)
    # Epsilon-greedy with eps 0.2 over 4 actions: 0.8 split over the two maxima (3 each) + 0.05 on every action.
    expected = 0.8 * 3.0 + 0.05 * (1.0 + 3.0 + 2.0 + 3.0)
    sarsa = q_learning.expected_sarsa_target(1.0, False, q_next, 0.9, 0.2)
    assert float(sarsa) == pytest.approx(1.0 + 0.9 * expected)
    double = q_learning.double_q_target(-1.0, False, jnp.array([0.0, 5.0, 1.0]), jnp.array([7.0, 2.0, 9.0]), 0.5)
    assert float(double) == pytest.approx(-1.0 + 0.5 * 2.0)  # B's value at A's argmax
    assert float(q_learning.double_q_target(-1.0, True, jnp.zeros(3), jnp.ones(3), 0.5)) == pytest.approx(-1.0)


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = counts.sum() * probs
    return float(np.sum((counts - expected) ** 2 / expected))


def test_ties_are_broken_uniformly():
    """Greedy among three equal maxima: each a third of the time (chi-square, fixed seed); with epsilon the
    uniform share is added on top."""
    q = jnp.tile(jnp.array([1.0, 5.0, 5.0, 0.0, 5.0]), (60_000, 1))
    u = jax.random.uniform(jax.random.PRNGKey(7), (60_000,))
    greedy = np.bincount(np.asarray(q_learning.epsilon_greedy(q, u, 0.0)), minlength=5)
    assert greedy[0] == greedy[3] == 0
    assert chi_square(greedy[[1, 2, 4]], np.full(3, 1 / 3)) < 13.8  # p = 0.001 for 2 degrees of freedom
    mixed = np.bincount(np.asarray(q_learning.epsilon_greedy(q, u, 0.3)), minlength=5)
    probs = np.full(5, 0.3 / 5) + np.array([0, 1, 1, 0, 1]) * 0.7 / 3
    assert chi_square(mixed, probs) < 18.5  # p = 0.001 for 4 degrees of freedom
    # One maximum: always it when greedy.
    assert set(np.asarray(q_learning.epsilon_greedy(q.at[:, 2].set(9.0), u, 0.0)).tolist()) == {2}


def test_state_index_from_state_and_observation_agree():
    env, params = maxatar.make("maxatar/Doors-v0")
    view = q_learning.tabular_view(env, params)
    keys = jax.random.split(jax.random.PRNGKey(3), 64)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    for t in range(30):  # random walks: every index read from the state equals the one read from the observation
        actions = jax.random.randint(jax.random.PRNGKey(t), (64,), 0, 5)
        obs, state, *_ = step(jax.random.split(jax.random.PRNGKey(100 + t), 64), state, actions, params)
        from_state = jax.vmap(lambda s: view.state_index(s.game))(state)
        live = ~np.asarray(state.terminated)
        assert np.array_equal(np.asarray(from_state)[live], np.asarray(view.obs_index(obs))[live])
        back = jax.vmap(view.game_state)(from_state)
        assert np.array_equal(back.agent, state.game.agent) and np.array_equal(back.goal, state.game.goal)


def test_transition_table_is_the_environment():
    """Every (state, action) of the table against a full `env.transition` from that state."""
    env, params = maxatar.make("maxatar/Doors-v0")
    view = q_learning.tabular_view(env, params)
    table = q_learning.transition_table(env, params, view)
    index = jnp.repeat(jnp.arange(view.num_states), env.num_actions)
    action = jnp.tile(jnp.arange(env.num_actions), view.num_states)

    def from_env(i, a):
        state = EnvState(game=view.game_state(i), last_action=jnp.int32(0), time=jnp.int32(0), terminated=False)
        draws = env.draws_from_uniforms(jnp.ones(env.num_draws), state, params)  # sticky uniform 1: no repeat
        _, nxt, reward, terminated, _, _ = env.transition(state, a, draws, params)
        return view.state_index(nxt.game), reward, terminated

    nxt, reward, terminated = jax.jit(jax.vmap(from_env))(index, action)
    assert np.array_equal(np.asarray(table.next_state) >> 1, nxt)
    assert np.array_equal(np.asarray(table.next_state) & 1, np.asarray(terminated, np.int32))
    assert np.array_equal(np.asarray(table.reward), reward)


@pytest.mark.parametrize("method", ["q_learning", "double_q"])  # expected SARSA differs only in its target
def test_table_and_env_models_train_identically(method):
    """Same seed, same uniforms: the table model and `env.transition` give the same tables bit for bit."""
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    results = [
        jax.jit(jax.vmap(q_learning.make_train(Config(method=method, model=model, sticky_action_prob=0.25, **SMALL))))(
            keys
        )
        for model in q_learning.MODELS
    ]
    for name in results[0].state.params:
        assert np.array_equal(results[0].state.params[name], results[1].state.params[name])
        assert np.any(np.asarray(results[0].state.params[name]) != 0)
    assert np.array_equal(results[0].metrics["episodes"], results[1].metrics["episodes"])
    assert np.array_equal(results[0].eval_returns, results[1].eval_returns)


@pytest.fixture(scope="module")
def trained():
    """Four Q-learning agents on Doors with the preset, 2M frames each (a few seconds)."""
    config = Config(**{**q_learning.PRESETS["doors"], "log_points": 2})
    keys = jnp.stack([jax.random.PRNGKey(i) for i in range(4)])
    return config, jax.jit(jax.vmap(q_learning.make_train(config)))(keys)


def greedy_lengths(q: np.ndarray) -> np.ndarray:
    """Steps of the greedy policy from every (start column, goal column) of Doors to its goal (999: never)."""
    env, params = maxatar.make("maxatar/Doors-v0")
    view = q_learning.tabular_view(env, params)
    table = q_learning.transition_table(env, params, view)
    next_state = np.asarray(table.next_state)
    size = env.size
    lengths = []
    for start in range(size):
        for goal in range(size):
            index, steps = ((size - 1) * size + start) * size + goal, 999
            for t in range(100):
                packed = next_state[index * env.num_actions + int(np.argmax(q[index]))]
                index = packed >> 1
                if packed & 1:
                    steps = t + 1
                    break
            lengths.append(steps)
    return np.array(lengths)


def shortest_lengths() -> np.ndarray:
    """Shortest paths on Doors' fixed doors (0, 5, 10): 14 rows plus the detour through the nearest door."""
    size, doors = 15, np.array([0, 5, 10])
    return np.array([14 + np.min(np.abs(doors - s) + np.abs(doors - g)) for s in range(size) for g in range(size)])


def test_agents_learn_doors(trained):
    """Every agent's greedy policy reaches the goal from every start, close to the shortest path."""
    _, result = trained
    shortest = shortest_lengths()
    for q in np.asarray(result.state.params["q"]):
        lengths = greedy_lengths(q)
        assert np.all(lengths < 999)
        assert lengths.mean() <= 1.1 * shortest.mean()
    assert np.all(np.isfinite(result.metrics["recent_return"]))
    assert np.all(result.metrics["recent_return"][:, -1] > result.metrics["recent_return"][:, 0])


def test_same_seed_same_result(trained):
    config, result = trained
    again = jax.jit(jax.vmap(q_learning.make_train(config)))(jnp.stack([jax.random.PRNGKey(i) for i in range(4)]))
    assert np.array_equal(result.state.params["q"], again.state.params["q"])
    assert np.array_equal(result.eval_returns, again.eval_returns)
    assert not np.array_equal(result.state.params["q"][0], result.state.params["q"][1])


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(method="sarsa"), "method"),
        (dict(model="python"), "model"),
        (dict(epsilon=1.5), "epsilon"),
        (dict(lr=0.0), "lr"),
        (dict(gamma=-0.1), "gamma"),
        (dict(num_envs=0), "num_envs"),
    ],
)
def test_bad_config_values_raise(changes, message):
    with pytest.raises(ValueError, match=message):
        Config(**changes)


def test_environments_without_a_table_are_refused():
    with pytest.raises(ValueError, match="no small discrete state"):
        q_learning.make_program(Config(env_id="maxatar/CartPole-v1"))
    env, params = maxatar.make("maxatar/Doors-v0", random_doors=True)
    with pytest.raises(ValueError, match="random_doors"):
        q_learning.tabular_view(env, params)


def test_command_line_trains_and_saves_a_policy(tmp_path):
    argv = ["--seeds", "2", "--no-progress", "--total-steps", "1600", "--num-envs", "8", "--log-points", "2"]
    argv += ["--eval-episodes", "4", "--method", "expected_sarsa"]
    summary = cli.run("q_learning", [*argv, "--out", str(tmp_path)])
    assert summary["algorithm"] == "q_learning" and len(summary["final_eval_return_per_seed"]) == 2
    assert json.loads((tmp_path / "summary.json").read_text())["config"]["method"] == "expected_sarsa"
    env_id, act = policies.load_policy(tmp_path)
    obs, _ = maxatar.make(env_id)[0].reset(jax.random.PRNGKey(0))
    assert 0 <= int(act(None, obs)) < 5
    with pytest.raises(SystemExit):
        cli.main("q_learning", [*argv, "--method", "bogus", "--out", str(tmp_path / "bad")])
