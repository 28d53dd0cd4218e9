"""Freeway's twin (see `maxatar.games.freeway.rules` for the rules and the reference quirks they keep)."""

from __future__ import annotations

import numpy as np

from maxatar.games.freeway.rules import CHICKEN_COL, NUM_CARS, PLAYER_SPEED, TIME_LIMIT, FreewayState
from maxatar.twin import Twin, randint

_CARS = range(NUM_CARS)


def _speeds(uniforms):
    """`Freeway.reset_draws` then `_signed_speeds`: per car, the speed from the bits of u below the top one
    (2u - [u >= 0.5], exact in float32) and the sign of u - 0.5 (0 for u == 0.5 exactly)."""
    out = []
    for u in uniforms:
        high = u >= 0.5
        speed = randint(2 * u - high, 1, 6)
        out.append(0 if u == 0.5 else speed if high else -speed)
    return out


def _car_cells(speeds):
    """Per car and column, the bytes of the observation (see `FreewayTwin.observation`) of the car and of its
    trail cell (the car's own byte again when it draws no trail)."""
    tables, channel = [], -1
    for i, s in enumerate(speeds):
        if s != 0:  # a speed-0 car keeps the previous car's channel (the reference's stale loop variable)
            channel = 1 + abs(s)
        row = 70 * (i + 1)
        table = []
        for x in range(10):
            back = (x - 1) % 10 if s > 0 else (x + 1) % 10
            table.append((row + 7 * x + 1, row + 7 * back + channel if channel > 0 else row + 7 * x + 1))
        tables.append(table)
    return tables


class FreewayTwin(Twin):
    """State: a list [car_x, car_timer, car_speed, pos, move_timer, terminate_timer] of Python ints, the first
    three lists of 8 (car i drives in row i + 1, signed speed), mutated in place."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self._speeds, self._cells = None, None  # the car speeds `_cells` was built for, and `_car_cells`

    def reset(self, uniforms):
        """Cars in column 0 with fresh speeds (one uniform per car), the chicken on row 9."""
        speed = _speeds(uniforms)
        return [[0] * NUM_CARS, [abs(s) for s in speed], speed, 9, PLAYER_SPEED, TIME_LIMIT]

    def step(self, game, action, uniforms):
        """Chicken move (once every 3 steps at most), scoring at row 0 (new car speeds), cars move, collision."""
        car_x, car_timer, car_speed, pos, move_timer, terminate_timer = game
        if move_timer == 0 and (action == 2 or action == 4):
            pos = min(max(pos + (1 if action == 4 else -1), 0), 9)
            move_timer = PLAYER_SPEED

        # The step's uniforms are read only when the chicken scores: every car's speed and timer are re-drawn.
        scored = pos == 0
        if scored:
            car_speed[:] = _speeds(uniforms)
            car_timer[:] = [abs(s) for s in car_speed]
            pos = 9

        # Only the car in the chicken's row can hit it: before or after its move, it is in the chicken's column.
        hit = pos != 9 and car_x[pos - 1] == CHICKEN_COL
        for i in _CARS:
            t = car_timer[i]
            if t == 0:
                s = car_speed[i]
                xi = car_x[i] + (1 if s > 0 else -1)
                car_x[i] = 9 if xi < 0 else 0 if xi > 9 else xi
                car_timer[i] = -s if s < 0 else s
            else:
                car_timer[i] = t - 1
        if hit or (pos != 9 and car_x[pos - 1] == CHICKEN_COL):
            pos = 9

        terminate_timer -= 1
        game[3:] = pos, move_timer - (move_timer > 0), terminate_timer
        return game, 1.0 if scored else 0.0, terminate_timer < 0

    def observation(self, game):
        """Channels 0 chicken, 1 car, 2..6 the trail behind a car of |speed| 1..5 (wrapping); a speed-0 car's trail
        takes the channel of the nearest earlier car with a speed, or is not drawn. Cell (y, x) of channel c is
        byte (10 y + x) * 7 + c of a fresh bytearray."""
        car_x, _, car_speed, pos = game[:4]
        if car_speed != self._speeds:  # speeds change only at reset and when the chicken scores
            self._speeds, self._cells = car_speed[:], _car_cells(car_speed)
        cells = bytearray(700)
        cells[(10 * pos + CHICKEN_COL) * 7] = 1
        for table, x in zip(self._cells, car_x, strict=True):
            car, trail = table[x]
            cells[car] = 1
            cells[trail] = 1
        return np.ndarray((10, 10, 7), np.bool_, cells)

    def to_pure(self, game):
        """The JAX `FreewayState` (int8 cars and chicken, int16 countdown)."""
        car_x, car_timer, car_speed, pos, move_timer, terminate_timer = game
        i8 = np.int8
        return FreewayState(
            np.array(car_x, i8),
            np.array(car_timer, i8),
            np.array(car_speed, i8),
            i8(pos),
            i8(move_timer),
            np.int16(terminate_timer),
        )

    def from_pure(self, state):
        """The twin state of a JAX `FreewayState`."""
        s = state
        cars = ([int(v) for v in a] for a in (s.car_x, s.car_timer, s.car_speed))
        return [*cars, int(s.pos), int(s.move_timer), int(s.terminate_timer)]
