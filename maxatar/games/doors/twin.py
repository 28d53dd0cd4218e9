"""Doors' twin (see `maxatar.games.doors.rules` for the rules)."""

from __future__ import annotations

import math

import numpy as np

from maxatar.games.doors.rules import AGENT, GOAL, MOVES, WALL, DoorsState
from maxatar.twin import Twin, f32, randint

_EXACT = 1 << 24  # float32 holds every integer below this, so a smaller sum of squares is exact


class DoorsTwin(Twin):
    """State: a list [agent_row, agent_col, goal_col, doors] (the goal sits on row 0), doors a tuple of `size`
    bools, True where the wall row is open."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self.size = env.size
        self.wall_row = env.wall_row
        self.num_doors = env.num_doors
        self.random_doors = bool(getattr(params, "random_doors", False))
        default = {i * self.size // self.num_doors for i in range(self.num_doors)}
        self.default_doors = tuple(c in default for c in range(self.size))
        self._rewards: dict[int, float] = {}  # squared distances before and after a move -> reward
        self._cache = 2 * (self.size - 1) ** 2 < _EXACT  # every squared distance is exact (size below 2897)
        self._grid = (None, None)  # the last doors and their empty grid with the wall row

    def reset(self, uniforms):
        size = self.size
        doors = self.default_doors
        if self.random_doors:
            # The columns whose keys are among the `num_doors` smallest, ties to the lower column (a stable sort).
            order = sorted(range(size), key=lambda c: (uniforms[2 + c], c))
            chosen = set(order[: self.num_doors])
            doors = tuple(c in chosen for c in range(size))
        return [size - 1, randint(uniforms[0], 0, size), randint(uniforms[1], 0, size), doors]

    def _distance(self, dr: int, dc: int) -> float:
        """The JAX step's float32 `sqrt(sum(d ** 2))`. XLA's float32 sqrt is correctly rounded, and so is a float64
        sqrt rounded to float32: rounding twice, from 53 bits then to 24, is harmless for +, -, *, / and sqrt."""
        return f32(math.sqrt(f32(f32(dr * dr) + f32(dc * dc))))  # each f32 exact below 2**24

    def step(self, game, action, uniforms):
        row, col, goal_col, doors = game
        dr, dc = MOVES[action]
        r, c = row + dr, col + dc
        if not (0 <= r < self.size and 0 <= c < self.size) or (r == self.wall_row and not doors[c]):
            return game, 0.0, row == 0 and col == goal_col  # blocked (or staying): no move, reward d - d = 0
        # float32's difference of the distances (the goal is on row 0): a float64 difference rounded to float32,
        # harmless double rounding again. Cached by the squared distances, which fix it while they are exact.
        key = (row * row + (col - goal_col) ** 2) * _EXACT + r * r + (c - goal_col) ** 2
        reward = self._rewards.get(key)
        if reward is None:
            reward = f32(self._distance(row, col - goal_col) - self._distance(r, c - goal_col))
            if self._cache:
                self._rewards[key] = reward
        return [r, c, goal_col, doors], reward, r == 0 and c == goal_col

    def observation(self, game):
        row, col, goal_col, doors = game
        if self._grid[0] is not doors:
            grid = np.zeros(self.size * self.size, np.int8)
            start = self.wall_row * self.size
            grid[start : start + self.size] = [0 if door else WALL for door in doors]
            self._grid = (doors, grid)
        obs = self._grid[1].copy()
        obs[goal_col] = GOAL
        obs[row * self.size + col] = AGENT
        return obs

    def to_pure(self, game):
        row, col, goal_col, doors = game
        return DoorsState(
            agent=np.array([row, col], np.int32), goal=np.array([0, goal_col], np.int32), doors=np.array(doors, bool)
        )

    def from_pure(self, state):
        """The twin state of a JAX `DoorsState` (whose goal is always on row 0: `Doors.states`)."""
        (row, col), (_, goal_col) = (int(v) for v in state.agent), (int(v) for v in state.goal)
        return [row, col, goal_col, tuple(bool(d) for d in state.doors)]
