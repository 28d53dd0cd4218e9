"""Breakout's twin (see `maxatar.games.breakout.rules` for the rules and the reference quirks they keep)."""

from __future__ import annotations

import numpy as np

from maxatar.games.breakout.rules import FULL_WALL, NUM_BRICK_BITS, BreakoutState
from maxatar.twin import Twin, randint

_BRICK_SHIFTS = np.arange(NUM_BRICK_BITS, dtype=np.int64).reshape(3, 10)


def _wall_template(bricks: int) -> np.ndarray:
    """An observation holding only the wall (channel 3, rows 1-3) of the brick bitmask `bricks`."""
    obs = np.zeros((10, 10, 4), bool)
    obs[1:4, :, 3] = (bricks >> _BRICK_SHIFTS) & 1 == 1
    return obs


class BreakoutTwin(Twin):
    """State: a list [ball_x, ball_y, ball_dir, pos, bricks, strike, last_x, last_y] of Python ints/bools."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self._wall = (FULL_WALL, _wall_template(FULL_WALL))  # the last brick bitmask and its observation

    def reset(self, uniforms):
        right = randint(uniforms[0], 0, 2) == 1
        x = 9 if right else 0
        return [x, 3, 3 if right else 2, 4, FULL_WALL, False, x, 3]

    def step(self, game, action, uniforms):
        x, y, d, pos, bricks, strike, _, _ = game
        pos = min(max(pos + (action == 3) - (action == 1), 0), 9)
        new_x = x + (1 if d in (1, 2) else -1)
        new_y = y + (1 if d >= 2 else -1)
        if not 0 <= new_x <= 9:  # side wall: clamp and flip horizontally
            new_x = min(max(new_x, 0), 9)
            d ^= 1
        top = new_y < 0
        bit = (new_y - 1) * 10 + new_x if 1 <= new_y <= 3 else NUM_BRICK_BITS
        on_brick = not top and (bricks >> bit) & 1 == 1
        breaks = on_brick and not strike
        bottom = not top and not on_brick and new_y == 9
        bounce = bottom and x == pos
        reverse = bottom and not bounce and new_x == pos
        terminal = bottom and not bounce and not reverse
        if breaks:
            bricks &= ~(1 << bit)
        if bottom and bricks == 0:
            bricks = FULL_WALL
        if top or breaks or bounce:
            d = 3 - d
        elif reverse:
            d ^= 2
        if top:
            new_y = 0
        elif breaks or bounce or reverse:
            new_y = y
        return [new_x, new_y, d, pos, bricks, on_brick, x, y], float(breaks), terminal

    def observation(self, game):
        x, y, _, pos, bricks, _, last_x, last_y = game
        if self._wall[0] != bricks:
            self._wall = (bricks, _wall_template(bricks))
        obs = self._wall[1].copy()  # a copy of a ready wall costs half of filling zeros and the wall anew
        obs[9, pos, 0] = True
        obs[y, x, 1] = True
        obs[last_y, last_x, 2] = True
        return obs

    def to_pure(self, game):
        x, y, d, pos, bricks, strike, last_x, last_y = game
        i8 = np.int8
        return BreakoutState(i8(x), i8(y), i8(d), i8(pos), np.int32(bricks), np.bool_(strike), i8(last_x), i8(last_y))

    def from_pure(self, state):
        s = state
        ints = (s.ball_x, s.ball_y, s.ball_dir, s.pos, s.bricks)
        return [*(int(v) for v in ints), bool(s.strike), int(s.last_x), int(s.last_y)]
