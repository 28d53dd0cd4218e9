"""Doors against an independent plain-Python model of its rules (the docstring of `maxatar.games.doors.rules`)."""

import dataclasses
import math
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import maxatar
from maxatar.core import Draws
from maxatar.games.doors.rules import DoorsDraws

SIZE = 15
STEPS = 48  # fixed episode length: one compiled scan serves every example


class DoorsModel:
    """The rules, written as plainly as possible: a list-of-lists grid and explicit moves."""

    MOVES = {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (0, -1), 4: (-1, 0)}

    def __init__(self, size, doors, agent_col, goal_col):
        self.size, self.wall = size, size // 2
        self.doors = set(doors)
        self.agent, self.goal = (size - 1, agent_col), (0, goal_col)
        self.done = False

    def open(self, row, col):
        inside = 0 <= row < self.size and 0 <= col < self.size
        return inside and (row != self.wall or col in self.doors)

    def step(self, action):
        if self.done:
            return 0.0, True
        dr, dc = self.MOVES[action]
        target = (self.agent[0] + dr, self.agent[1] + dc)
        before = math.dist(self.agent, self.goal)
        if self.open(*target):
            self.agent = target
        self.done = self.agent == self.goal
        return before - math.dist(self.agent, self.goal), self.done

    def grid(self):
        g = [[0] * self.size for _ in range(self.size)]
        for c in range(self.size):
            g[self.wall][c] = 0 if c in self.doors else 2
        g[self.goal[0]][self.goal[1]] = 3
        g[self.agent[0]][self.agent[1]] = 1
        return np.array(g).reshape(-1)


ENV, PARAMS = maxatar.make("Doors-v0")


@jax.jit
def play(agent_col, goal_col, doors, actions):
    draws = DoorsDraws(agent_col=agent_col, goal_col=goal_col, doors=doors)
    obs0, state = ENV.reset_from_draws(draws, PARAMS)

    def body(state, action):
        never_sticky = Draws(jnp.float32(1.0), ())
        obs, state, reward, terminated, truncated, _ = ENV.transition(state, action, never_sticky, PARAMS)
        return state, (obs, reward, terminated, truncated)

    return obs0, jax.lax.scan(body, state, actions)[1]


def towards_goal(agent_col, goal_col, doors):
    """An action sequence that reaches the goal: to the nearest door, up through it, across, up."""
    door = min(doors, key=lambda d: abs(d - agent_col) + abs(d - goal_col))
    row_moves = [4] * (SIZE - 1)
    first = [1 if door > agent_col else 3] * abs(door - agent_col)
    second = [1 if goal_col > door else 3] * abs(goal_col - door)
    return first + row_moves[: SIZE // 2] + second + row_moves[SIZE // 2 :]


@st.composite
def episodes(draw):
    agent_col, goal_col = draw(st.integers(0, SIZE - 1)), draw(st.integers(0, SIZE - 1))
    if draw(st.booleans()):
        doors = [0, 5, 10]
    else:
        doors = sorted(draw(st.sets(st.integers(0, SIZE - 1), min_size=1, max_size=SIZE)))
    if draw(st.booleans()):  # purposeful play (reaches the goal), with random noise spliced in
        actions = towards_goal(agent_col, goal_col, doors)
        noise = draw(st.lists(st.integers(0, 4), max_size=8))
        at = draw(st.integers(0, len(actions)))
        actions = actions[:at] + noise + actions[at:]
    else:
        actions = draw(st.lists(st.integers(0, 4), min_size=1, max_size=STEPS))
    return agent_col, goal_col, doors, actions[:STEPS]


@given(episodes())
@example((0, 0, [0, 5, 10], [4] * 14))  # straight up through door 0
@example((7, 7, [0, 5, 10], [4] * 6 + [4]))  # walks into the wall: blocked, reward 0
@example((14, 14, [0, 5, 10], [1, 2, 3, 3, 3, 3, 3]))  # off-grid moves are blocked
def test_episode_matches_model(episode):
    agent_col, goal_col, doors, actions = episode
    model = DoorsModel(SIZE, doors, agent_col, goal_col)
    mask = np.zeros(SIZE, bool)
    mask[doors] = True
    padded = np.zeros(STEPS, np.int32)
    padded[: len(actions)] = actions
    obs0, outputs = play(agent_col, goal_col, jnp.asarray(mask), jnp.asarray(padded))
    obs, reward, terminated, truncated = jax.device_get(outputs)
    np.testing.assert_array_equal(np.asarray(obs0), model.grid())
    for t, action in enumerate(padded):
        ref_reward, ref_done = model.step(int(action))
        np.testing.assert_array_equal(obs[t], model.grid(), err_msg=f"grid at step {t}")
        assert float(reward[t]) == pytest.approx(ref_reward, abs=1e-5), f"reward at step {t}"
        assert bool(terminated[t]) == ref_done, f"terminated at step {t}"
        assert not bool(truncated[t]) or t + 1 >= PARAMS.max_steps


def shortest_path(size, doors, agent_col, goal_col):
    model = DoorsModel(size, doors, agent_col, goal_col)
    start, seen, queue = model.agent, {model.agent: 0}, deque([model.agent])
    while queue:
        cell = queue.popleft()
        if cell == model.goal:
            return seen[cell]
        for dr, dc in DoorsModel.MOVES.values():
            nxt = (cell[0] + dr, cell[1] + dc)
            if model.open(*nxt) and nxt not in seen:
                seen[nxt] = seen[cell] + 1
                queue.append(nxt)
    raise AssertionError(f"goal unreachable from {start}")


def test_default_time_limit_lets_every_start_reach_the_goal():
    longest = max(shortest_path(SIZE, [0, 5, 10], a, g) for a in range(SIZE) for g in range(SIZE))
    assert longest == 28 and PARAMS.max_steps == 100 >= longest
    # With random doors the worst case is a single door in a far corner.
    assert max(shortest_path(SIZE, [d], a, g) for d in (0, 14) for a in (0, 14) for g in (0, 14)) <= 42


def test_reset_draws_independent_columns_and_random_doors():
    keys = jax.random.split(jax.random.key(0), 6000)
    reset = jax.jit(jax.vmap(ENV.reset, in_axes=(0, None)))
    _, state = reset(keys, PARAMS)
    agent, goal = np.asarray(state.game.agent), np.asarray(state.game.goal)
    assert (agent[:, 0] == SIZE - 1).all() and (goal[:, 0] == 0).all()
    for cols in (agent[:, 1], goal[:, 1]):
        counts = np.bincount(cols, minlength=SIZE)
        assert counts.min() > 0.7 * 6000 / SIZE and counts.max() < 1.3 * 6000 / SIZE
    # Independent columns coincide 1/15 of the time (an earlier port drew both from one key: always).
    assert abs((agent[:, 1] == goal[:, 1]).mean() - 1 / SIZE) < 0.02
    np.testing.assert_array_equal(np.asarray(state.game.doors[0]), np.isin(np.arange(SIZE), [0, 5, 10]))

    _, state = reset(keys, PARAMS.replace(random_doors=True))
    doors = np.asarray(state.game.doors)
    assert (doors.sum(1) == 3).all()
    assert np.abs(doors.mean(0) - 3 / SIZE).max() < 0.04


def test_size_and_door_count_are_configurable():
    env, params = maxatar.make("Doors-v0", size=9, num_doors=2)
    obs, state = jax.jit(env.reset)(jax.random.key(3), params)
    assert obs.shape == (81,) and obs.dtype == jnp.int8
    np.testing.assert_array_equal(np.asarray(state.game.doors), np.isin(np.arange(9), [0, 4]))
    with pytest.raises(ValueError, match="num_doors"):
        maxatar.make("Doors-v0", num_doors=0)
    with pytest.raises(ValueError, match="size"):
        maxatar.make("Doors-v0", size=2)


def test_random_door_subset_equals_double_argsort_and_is_uniform():
    """The pairwise rank picks the columns a stable double argsort picks (ties included), and every 3-subset of
    the 15 columns comes out equally often."""
    rng = np.random.default_rng(0)
    coarse = rng.integers(0, 4, (2000, 2 + SIZE)).astype(np.float32) / 4  # many ties
    fine = rng.random((2000, 2 + SIZE), dtype=np.float32)
    params = PARAMS.replace(random_doors=True)
    pick = jax.jit(jax.vmap(lambda u: ENV.reset_draws(u, params).doors))
    for uniforms in (coarse, fine):
        expected = np.argsort(np.argsort(uniforms[:, 2:], kind="stable"), kind="stable") < 3
        np.testing.assert_array_equal(np.asarray(pick(jnp.asarray(uniforms))), expected)

    keys = jax.random.split(jax.random.key(5), 45_500)  # 100 per subset
    _, state = jax.jit(jax.vmap(ENV.reset, in_axes=(0, None)))(keys, params)
    doors = np.asarray(state.game.doors)
    assert (doors.sum(1) == 3).all()
    codes = (doors * (1 << np.arange(SIZE))).sum(1)
    counts = np.unique(codes, return_counts=True)[1]
    assert len(counts) == math.comb(SIZE, 3) == 455
    chi2 = ((counts - 100) ** 2 / 100).sum()
    assert chi2 < 600, chi2  # 454 degrees of freedom: mean 454, sd 30


def test_observation_codes():
    """Wall row with open doors, goal and agent cells, the agent drawn over the goal when they meet."""
    draws = DoorsDraws(agent_col=jnp.int32(4), goal_col=jnp.int32(9), doors=ENV.default_doors())
    state = ENV.init(draws, PARAMS)
    grid = np.asarray(ENV.game_observation(state)).reshape(SIZE, SIZE)
    expected = np.zeros((SIZE, SIZE), np.int8)
    expected[7] = np.where(np.isin(np.arange(SIZE), [0, 5, 10]), 0, 2)
    expected[0, 9], expected[SIZE - 1, 4] = 3, 1
    np.testing.assert_array_equal(grid, expected)
    same = dataclasses.replace(state, agent=state.goal)
    grid = np.asarray(ENV.game_observation(same)).reshape(SIZE, SIZE)
    assert grid[0, 9] == 1 and (grid == 3).sum() == 0
