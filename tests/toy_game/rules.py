"""Catch: a ball falls from a random column of the top row of a 5 x 5 board, one row a step; the paddle on the
bottom row moves left or right (actions 0 stay, 1 left, 2 right). +1 for a caught ball, -1 for a missed one, and
the episode ends either way. Observation channels: 0 paddle, 1 ball."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from maxatar.core import Channel, EnvParams, Looks, States, pytree_dataclass
from maxatar.episode import Environment
from maxatar.prng import uniform_to_int

SIZE = 5


@pytree_dataclass
class CatchState:
    ball_row: jax.Array  # int32, 0..SIZE - 1
    ball_col: jax.Array  # int32, 0..SIZE - 1
    paddle: jax.Array  # int32, the paddle's column on the bottom row


class Catch(Environment):
    name = "catch"
    gymnax_name = "Catch-MaxAtarToy"
    settings = {"minatar": {}, "gymnax": {"sticky_action_prob": 0.0, "max_steps": 100}}
    num_game_actions = 3
    obs_shape = (SIZE, SIZE, 2)
    obs_dtype = jnp.bool_
    num_reset_uniforms = 1
    num_step_uniforms = 0
    twin = "tests.toy_game.twin:CatchTwin"
    action_names = ("stay", "left", "right")
    randomness = "One draw at reset (the ball's column); the steps are deterministic given the actions."
    looks = Looks(
        channels=(Channel("paddle", (70, 150, 255)), Channel("ball", (255, 255, 255))),
        draw_order=("paddle", "ball"),
        keymap={"left": 1, "right": 2},
    )
    states = States(ranges={"ball_row": range(SIZE), "ball_col": range(SIZE), "paddle": range(SIZE)})

    def reset_draws(self, uniforms: jax.Array, params: EnvParams) -> jax.Array:
        return uniform_to_int(uniforms[0], 0, SIZE)

    def init(self, draws: jax.Array, params: EnvParams) -> CatchState:
        return CatchState(ball_row=jnp.int32(0), ball_col=draws.astype(jnp.int32), paddle=jnp.int32(SIZE // 2))

    def game_step(self, game: CatchState, action: jax.Array, draws, params: EnvParams):
        move = jnp.asarray((0, -1, 1), jnp.int32)[action]
        paddle = jnp.clip(game.paddle + move, 0, SIZE - 1)
        row = game.ball_row + 1
        landed = row == SIZE - 1
        reward = jnp.where(landed, jnp.where(paddle == game.ball_col, 1.0, -1.0), 0.0).astype(jnp.float32)
        return dataclasses.replace(game, ball_row=row, paddle=paddle), reward, landed

    def game_observation(self, game: CatchState) -> jax.Array:
        rows, cols = jnp.arange(SIZE)[:, None], jnp.arange(SIZE)[None, :]
        paddle = (rows == SIZE - 1) & (cols == game.paddle)
        ball = (rows == game.ball_row) & (cols == game.ball_col)
        return jnp.stack([paddle, ball], axis=-1)
