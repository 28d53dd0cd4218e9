"""Doors: walk from the bottom row through a door in the middle wall to a goal on the top row.

The grid is `size` x `size` (15). Row `size // 2` is wall except `num_doors` doors, by default at the
evenly spaced columns 0, 5, 10; with `params.random_doors` each reset draws distinct door columns instead.
The agent starts on the bottom row and the goal sits on the top row, each at its own uniform column (two
independent draws: an earlier port drew both from one key, so they always coincided). Actions: 0 stay,
1 right, 2 down, 3 left, 4 up. A move into the wall or off the grid leaves the agent in place and earns 0;
otherwise the reward is the decrease of the Euclidean distance to the goal. Reaching the goal terminates.

Default time limit: 100 steps. The longest shortest path with the default doors is 28 steps (14 rows plus
14 columns, e.g. from the bottom-right corner to the top-left one) and 42 with random doors (a single door
in the far corner: 14 + 2 * 14), so every start can reach its goal with room for detours.
Observation: the flattened grid, 0 empty, 1 agent, 2 wall, 3 goal (`MultiDiscrete([4] * size * size)`).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.checks import InputError, check_size
from maxatar.core import Channel, EnvParams, Looks, States, Tabular, pytree_dataclass
from maxatar.episode import Environment
from maxatar.prng import uniform_to_int

EMPTY, AGENT, WALL, GOAL = 0, 1, 2, 3
# The largest grid side: 65,536 cells an observation, 64 kB per environment (a larger grid is refused at
# construction rather than failing at its first reset for want of memory).
MAX_SIZE = 256
# (row, col) offsets of actions 0 stay, 1 right, 2 down, 3 left, 4 up.
MOVES = ((0, 0), (0, 1), (1, 0), (0, -1), (-1, 0))


@pytree_dataclass
class DoorsParams(EnvParams):
    """EnvParams plus `random_doors`: draw the door columns at each reset instead of spacing them evenly."""

    random_doors: bool = False

    kinds: ClassVar[dict[str, str]] = {**EnvParams.kinds, "random_doors": "flag"}


@pytree_dataclass
class DoorsState:
    """Where the agent and the goal are, and which columns of the wall row are doors."""

    agent: jax.Array  # int32[2], (row, col)
    goal: jax.Array  # int32[2], (row, col)
    doors: jax.Array  # bool[size], True where the wall row is open


@pytree_dataclass
class DoorsDraws:
    """A reset's variates: the agent's and the goal's columns, and the door columns (drawn or the default)."""

    agent_col: jax.Array  # int32 in [0, size)
    goal_col: jax.Array  # int32 in [0, size)
    doors: jax.Array  # bool[size]


class Doors(Environment):
    """Doors (no MinAtar counterpart): a small navigation task with a shaped reward, for quick experiments."""

    name = "doors"
    num_game_actions = 5
    action_names = ("stay", "right", "down", "left", "up")
    params_class = DoorsParams
    obs_dtype = jnp.int8
    obs_nvec = 4  # cell codes: empty, agent, wall, goal
    num_step_uniforms = 0
    default_sticky_action_prob = 0.0
    default_max_steps = 100
    twin = "maxatar.games.doors.twin:DoorsTwin"
    randomness = (
        "The start (the agent's and the goal's columns, and the doors when `random_doors=True`); the steps are "
        "deterministic given the actions."
    )
    looks = Looks(
        channels=(Channel("agent", (40, 210, 255)), Channel("wall", (130, 130, 150)), Channel("goal", (255, 200, 40))),
        draw_order=("wall", "goal", "agent"),
        keymap={"right": 1, "down": 2, "left": 3, "up": 4},
    )

    def __init__(self, size: int = 15, num_doors: int = 3):
        super().__init__()
        self.size = check_size("size", size, 3, MAX_SIZE, " (an observation of size * size cells)")
        self.num_doors = check_size("num_doors", num_doors, 1, self.size)

    @property
    def obs_shape(self) -> tuple[int, ...]:
        """The flattened grid (size * size,): its size is a constructor argument, so this is per instance."""
        return (self.size * self.size,)

    @property
    def states(self) -> States:
        """The values a Doors episode reaches (`maxatar.checks`): the agent on the grid, the goal on row 0."""
        cells = range(self.size)
        return States(ranges={"agent": cells, "goal row": range(1), "goal column": cells})

    def state_values(self, game: DoorsState) -> dict[str, np.ndarray]:
        goal = np.asarray(game.goal)
        return {"agent": game.agent, "goal row": goal[..., 0], "goal column": goal[..., 1], "doors": game.doors}

    def state_rules(self, state) -> list[str]:
        """The agent never stands in the wall; the wall has `num_doors` doors."""
        agent, doors = np.asarray(state.game.agent), np.asarray(state.game.doors)
        row, col = agent[..., 0], np.clip(agent[..., 1], 0, self.size - 1)
        on_door = np.take_along_axis(doors, col[..., None], axis=-1)[..., 0]
        problems = []
        if np.any((row == self.wall_row) & ~on_door):
            problems.append(f"the agent (game.agent) stands in the wall (row {self.wall_row}, not on a door)")
        if np.any(doors.sum(axis=-1) != self.num_doors):
            problems.append(f"the wall (game.doors) does not have {self.num_doors} doors")
        return problems

    @property
    def wall_row(self) -> int:
        """The middle row, the wall the doors open."""
        return self.size // 2

    @property
    def num_reset_uniforms(self) -> int:
        """Agent column, goal column, and one key per column for a random choice of door columns."""
        return 2 + self.size

    def default_doors(self) -> jax.Array:
        """The evenly spaced door columns (0, 5, 10 for the default size): the layout without `random_doors`."""
        columns = [i * self.size // self.num_doors for i in range(self.num_doors)]
        return jnp.zeros(self.size, bool).at[jnp.array(columns)].set(True)

    def reset_draws(self, uniforms: jax.Array, params: DoorsParams) -> DoorsDraws:
        """The agent's and goal's columns, and the door columns: drawn with `random_doors`, else the default."""
        # Random doors: the columns whose keys rank among the `num_doors` smallest (a uniform random subset).
        # The rank of key i is the number of keys before it in a stable sort, counted pairwise (equal to the
        # double argsort it replaces, ties broken by column; a sort is much dearer on CPU).
        keys = uniforms[2:]
        cols = jnp.arange(self.size)
        before = (keys[None, :] < keys[:, None]) | ((keys[None, :] == keys[:, None]) & (cols[None, :] < cols[:, None]))
        random_doors = jnp.sum(before, axis=1) < self.num_doors
        return DoorsDraws(
            agent_col=uniform_to_int(uniforms[0], 0, self.size),
            goal_col=uniform_to_int(uniforms[1], 0, self.size),
            doors=jnp.where(params.random_doors, random_doors, self.default_doors()),
        )

    def init(self, draws: DoorsDraws, params: DoorsParams) -> DoorsState:
        bottom, top = self.size - 1, 0
        return DoorsState(
            agent=jnp.stack([jnp.int32(bottom), draws.agent_col]).astype(jnp.int32),
            goal=jnp.stack([jnp.int32(top), draws.goal_col]).astype(jnp.int32),
            doors=jnp.asarray(draws.doors, bool),
        )

    def _blocked(self, cell, doors) -> jax.Array:
        """Whether `cell` is off the grid or in the wall (not on a door)."""
        row, col = cell[0], cell[1]
        outside = (row < 0) | (row >= self.size) | (col < 0) | (col >= self.size)
        in_wall = (row == self.wall_row) & ~doors[jnp.clip(col, 0, self.size - 1)]
        return outside | in_wall

    def game_step(self, game: DoorsState, action: jax.Array, draws: tuple, params: DoorsParams):
        target = game.agent + jnp.asarray(MOVES, jnp.int32)[action]
        agent = jnp.where(self._blocked(target, game.doors), game.agent, target)

        def distance(cell):
            return jnp.sqrt(jnp.sum(((cell - game.goal).astype(jnp.float32)) ** 2))

        reward = distance(game.agent) - distance(agent)
        terminal = jnp.all(agent == game.goal)
        return dataclasses.replace(game, agent=agent), reward.astype(jnp.float32), terminal

    def game_observation(self, game: DoorsState) -> jax.Array:
        """The flattened grid of cell codes (0 empty, 1 agent, 2 wall, 3 goal)."""
        grid = jnp.zeros((self.size, self.size), jnp.int8)
        grid = grid.at[self.wall_row].set(jnp.where(game.doors, EMPTY, WALL).astype(jnp.int8))
        grid = grid.at[game.goal[0], game.goal[1]].set(GOAL)
        grid = grid.at[game.agent[0], game.agent[1]].set(AGENT)
        return grid.reshape(-1)

    def grid(self, obs: jax.Array) -> jax.Array:
        """The cell codes as three bool planes (agent, wall, goal), as `channels` names them."""
        grid = obs.reshape(self.size, self.size)
        return jnp.stack([grid == AGENT, grid == WALL, grid == GOAL], axis=-1)

    def tabular(self, params: EnvParams) -> Tabular:
        """Doors with its fixed doors: index (agent row * size + agent column) * size + goal column, size^3 states
        (3375 for the default 15 x 15 grid; unreachable wall cells included). The goal moves between episodes, so
        its column is part of the state. Random doors would add C(size, num_doors) layouts (455 by default) to
        the state and are refused."""
        if not isinstance(params.random_doors, (bool, np.bool_)) or params.random_doors:
            raise InputError("tabular agents need Doors' fixed doors (random_doors=False): random doors are state too")
        size = self.size
        doors = self.default_doors()

        def state_index(game: DoorsState) -> jax.Array:
            return ((game.agent[0] * size + game.agent[1]) * size + game.goal[1]).astype(jnp.int32)

        def obs_index(obs: jax.Array) -> jax.Array:
            grid = obs.reshape(*obs.shape[:-1], size, size)
            agent = jnp.argmax((grid == AGENT).reshape(*obs.shape), axis=-1)
            top = grid[..., 0, :]
            # On the goal (a finished episode) the agent hides it: then the goal's column is the agent's.
            goal = jnp.where(jnp.any(top == GOAL, axis=-1), jnp.argmax(top == GOAL, axis=-1), agent % size)
            return (agent * size + goal).astype(jnp.int32)

        def game_state(index: jax.Array) -> DoorsState:
            cell, goal = index // size, index % size
            agent = jnp.stack([cell // size, cell % size]).astype(jnp.int32)
            return DoorsState(agent=agent, goal=jnp.stack([0, goal]).astype(jnp.int32), doors=doors)

        return Tabular(size**3, state_index, obs_index, game_state, reset_uniforms=2)
