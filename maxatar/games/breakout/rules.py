"""MinAtar Breakout as a pure JAX environment.

A paddle on the bottom row bounces a ball that travels along diagonals and breaks three rows of bricks
(rows 1-3) for +1 each; the episode ends when the ball reaches the bottom row without being caught.
Observation channels: 0 paddle, 1 ball, 2 trail (the ball's previous cell), 3 brick. The only random
variate is the ball's starting side at reset. No difficulty ramp (the param is ignored).

Reference (minatar 1.0.15) behaviour reproduced on purpose:

* A ball that would leave the board sideways is clamped into the edge column for that step and its
  horizontal direction flips; a top-wall bounce can flip the vertical direction in the same step.
* Strike: breaking a brick keeps the ball's row (it moves one cell sideways) and flips its vertical
  direction. If the very next move lands on a brick as well, nothing is broken and no reward is given:
  the ball enters that brick's cell. The flag stays set for as long as the ball keeps landing on bricks.
* The wall of bricks is refilled only when the ball reaches the bottom row with no bricks left, not
  when the last brick breaks (the refill happens even if the paddle then misses).
* Catching: if the paddle (after this step's move) is under the ball's *previous* column, the ball
  bounces straight back up (vertical flip); otherwise, if it is under the ball's *new* column, the ball
  is sent back the way it came (both directions flip); otherwise the episode ends, and the terminal
  observation shows the ball on the bottom row.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import TRAIL, Channel, EnvParams, Looks, States, pytree_dataclass
from maxatar.episode import Environment
from maxatar.prng import uniform_to_int
from maxatar.settings import minatar_game

# Ball directions: 0 up-left, 1 up-right, 2 down-right, 3 down-left. With this numbering a horizontal flip
# is `d ^ 1`, a vertical flip is `3 - d` and a full reversal is `d ^ 2`.
NUM_BRICK_BITS = 30  # bit (row - 1) * 10 + col holds the brick at (row, col), rows 1..3
FULL_WALL = (1 << NUM_BRICK_BITS) - 1

ROWS = np.arange(10, dtype=np.int32)[:, None]
COLS = np.arange(10, dtype=np.int32)[None, :]
# Bit index of each board cell; cells outside rows 1..3 point at bit 30, which is always clear.
CELL_BIT = np.where((ROWS >= 1) & (ROWS <= 3), (ROWS - 1) * 10 + COLS, NUM_BRICK_BITS).astype(np.int32)


@pytree_dataclass
class BreakoutState:
    """Breakout's own state; `bricks` is the 10x10 brick map of the reference packed as a bitmask (only rows
    1..3 can ever hold bricks). `last_x, last_y` is the trail cell."""

    ball_x: jax.Array  # int8, 0..9
    ball_y: jax.Array  # int8, 0..9
    ball_dir: jax.Array  # int8, 0..3
    pos: jax.Array  # int8, paddle column on row 9
    bricks: jax.Array  # int32 bitmask, bit (row - 1) * 10 + col
    strike: jax.Array  # bool, the previous move broke or entered a brick
    last_x: jax.Array  # int8
    last_y: jax.Array  # int8


class Breakout(Environment):
    """MinAtar Breakout (`minatar.Environment('breakout')`)."""

    name = "breakout"
    gymnax_name = "Breakout-MinAtar"
    settings = minatar_game(gymnax_max_steps=1000)
    num_game_actions = 6
    minimal_action_set = (0, 1, 3)
    obs_shape = (10, 10, 4)
    obs_dtype = jnp.bool_
    num_reset_uniforms = 1
    num_step_uniforms = 0
    twin = "maxatar.games.breakout.twin:BreakoutTwin"
    randomness = "One draw at reset (the ball's side); the steps are deterministic given the actions."
    looks = Looks(
        channels=(
            Channel("paddle", (70, 150, 255), role="player"),
            Channel("ball", (255, 255, 255), role="player_shot"),
            TRAIL,
            Channel("brick", (235, 95, 60), role="goal"),
        ),
        draw_order=("brick", "trail", "paddle", "ball"),
    )
    # The values a Breakout episode reaches (`maxatar.checks`): the ball and its trail on the board, four
    # directions, the paddle's column, the 30 brick bits.
    states = States(
        ranges={
            "ball_x": range(10),
            "ball_y": range(10),
            "ball_dir": range(4),
            "pos": range(10),
            "bricks": range(FULL_WALL + 1),
            "last_x": range(10),
            "last_y": range(10),
        },
    )

    def state_rules(self, state) -> list[str]:
        """The ball reaches the bottom row only when the paddle misses it, which ends the episode."""
        if np.any((np.asarray(state.game.ball_y) == 9) & ~np.asarray(state.terminated)):
            return ["the ball is on the bottom row (game.ball_y 9) in an episode that has not ended"]
        return []

    def reset_draws(self, uniforms: jax.Array, params: EnvParams) -> jax.Array:
        """The reference's `randint(2)`: 0 starts the ball on the left going down-right, 1 on the right."""
        return uniform_to_int(uniforms[0], 0, 2)

    def init(self, draws: jax.Array, params: EnvParams) -> BreakoutState:
        """The ball on row 3 at the side the draw picks, heading down into the field; a full wall."""
        right = jnp.asarray(draws) == 1
        x = jnp.where(right, 9, 0).astype(jnp.int8)
        y = jnp.int8(3)
        return BreakoutState(
            ball_x=x,
            ball_y=y,
            ball_dir=jnp.where(right, 3, 2).astype(jnp.int8),
            pos=jnp.int8(4),
            bricks=jnp.int32(FULL_WALL),
            strike=jnp.bool_(False),
            last_x=x,
            last_y=y,
        )

    def game_step(self, game: BreakoutState, action: jax.Array, draws: tuple, params: EnvParams):
        pos = jnp.clip(game.pos + (action == 3).astype(jnp.int8) - (action == 1).astype(jnp.int8), 0, 9)
        d = game.ball_dir
        new_x = game.ball_x + jnp.where((d == 1) | (d == 2), 1, -1).astype(jnp.int8)
        new_y = game.ball_y + jnp.where(d >= 2, 1, -1).astype(jnp.int8)

        # Side wall: clamp into the edge column and flip horizontally.
        side = (new_x < 0) | (new_x > 9)
        new_x = jnp.clip(new_x, 0, 9)
        d = jnp.where(side, d ^ 1, d)

        # The if/elif chain: top wall, else brick, else bottom row.
        top = new_y < 0
        bit = jnp.where((new_y >= 1) & (new_y <= 3), (new_y.astype(jnp.int32) - 1) * 10 + new_x, NUM_BRICK_BITS)
        on_brick = ~top & (((game.bricks >> bit) & 1) == 1)
        breaks = on_brick & ~game.strike
        bottom = ~top & ~on_brick & (new_y == 9)
        bounce = bottom & (game.ball_x == pos)
        reverse = bottom & ~bounce & (new_x == pos)
        terminal = bottom & ~bounce & ~reverse

        bricks = jnp.where(breaks, game.bricks & ~(jnp.int32(1) << bit), game.bricks)
        bricks = jnp.where(bottom & (bricks == 0), jnp.int32(FULL_WALL), bricks)
        d = jnp.where(top | breaks | bounce, 3 - d, jnp.where(reverse, d ^ 2, d))
        new_y = jnp.where(top, 0, jnp.where(breaks | bounce | reverse, game.ball_y, new_y)).astype(jnp.int8)

        next_game = BreakoutState(
            ball_x=new_x,
            ball_y=new_y,
            ball_dir=d.astype(jnp.int8),
            pos=pos,
            bricks=bricks,
            strike=on_brick,
            last_x=game.ball_x,
            last_y=game.ball_y,
        )
        return next_game, breaks.astype(jnp.float32), terminal

    def game_observation(self, game: BreakoutState) -> jax.Array:
        """Channels: 0 paddle, 1 ball, 2 trail, 3 brick."""
        paddle = (ROWS == 9) & (COLS == game.pos)
        ball = (ROWS == game.ball_y) & (COLS == game.ball_x)
        trail = (ROWS == game.last_y) & (COLS == game.last_x)
        return jnp.stack([paddle, ball, trail, self.brick_map(game)], axis=-1)

    @staticmethod
    def brick_map(game: BreakoutState) -> jax.Array:
        """The reference's 10x10 brick map (bool) from the packed bitmask."""
        return ((game.bricks >> CELL_BIT) & 1) == 1
