"""Catch's plain-Python twin (see `tests.toy_game.rules` for the rules)."""

from __future__ import annotations

import numpy as np

from maxatar.twin import Twin, randint
from tests.toy_game.rules import SIZE, CatchState


class CatchTwin(Twin):
    """State: a list [ball_row, ball_col, paddle]."""

    def reset(self, uniforms):
        return [0, randint(uniforms[0], 0, SIZE), SIZE // 2]

    def step(self, game, action, uniforms):
        row, col, paddle = game
        paddle = min(max(paddle + (0, -1, 1)[action], 0), SIZE - 1)
        row += 1
        landed = row == SIZE - 1
        reward = (1.0 if paddle == col else -1.0) if landed else 0.0
        return [row, col, paddle], reward, landed

    def observation(self, game):
        row, col, paddle = game
        obs = np.zeros((SIZE, SIZE, 2), bool)
        obs[SIZE - 1, paddle, 0] = True
        obs[row, col, 1] = True
        return obs

    def to_pure(self, game):
        return CatchState(*(np.int32(v) for v in game))

    def from_pure(self, state):
        return [int(state.ball_row), int(state.ball_col), int(state.paddle)]
