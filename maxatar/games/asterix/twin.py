"""Asterix's twin (see `maxatar.games.asterix.rules` for the rules and the reference quirks they keep)."""

from __future__ import annotations

import numpy as np

from maxatar.games.asterix.rules import (
    GOLD_THRESHOLD,
    INIT_MOVE_SPEED,
    INIT_SPAWN_SPEED,
    NUM_SLOTS,
    RAMP_INTERVAL,
    AsterixState,
    level_speeds,
)
from maxatar.twin import Twin, randint

_GOLD = float(GOLD_THRESHOLD)  # float32(1/3) as a Python float: `u < _GOLD` is the JAX step's float32 comparison
_SLOTS = range(NUM_SLOTS)


class AsterixTwin(Twin):
    """State: a list [player_x, player_y, active, x, lr, gold, spawn_speed, spawn_timer, move_speed, move_timer,
    ramp_timer, ramp_index] of Python ints, where active, x, lr and gold are lists of 8 (slot i is row i + 1),
    mutated in place. As in the JAX state, a slot's x, lr and gold outlive it: a removed entity keeps its last x
    (-1 or 10 once it walked off the board) until a spawn rewrites the slot."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self.ramping = bool(params.difficulty_ramping)

    def reset(self, uniforms):
        """The fixed start: player at (5, 5), no entities, initial timers (Asterix draws nothing at reset)."""
        n, spawn, move = NUM_SLOTS, INIT_SPAWN_SPEED, INIT_MOVE_SPEED
        return [5, 5, [False] * n, [0] * n, [False] * n, [False] * n, spawn, spawn, move, move, RAMP_INTERVAL, 0]

    def step(self, game, action, uniforms):
        """Spawn, player move, collide, entities move, collide again, timers, ramp (the JAX step's order)."""
        px, py, active, x, lr, gold, spawn_speed, spawn_timer, move_speed, move_timer, ramp_timer, ramp_index = game

        # 1. Spawn into the k-th empty slot; the slot draw spans the free count (at least 1).
        if spawn_timer == 0:
            free = [i for i in _SLOTS if not active[i]]
            k = randint(uniforms[2], 0, max(len(free), 1))
            if free:
                i = free[k]
                right = uniforms[0] < 0.5
                active[i] = True
                x[i] = 0 if right else 9
                lr[i] = right
                gold[i] = uniforms[1] < _GOLD
            spawn_timer = spawn_speed

        # 2. Player move (noop and fire do nothing).
        px = min(max(px + (action == 3) - (action == 1), 0), 9)
        py = min(max(py + (action == 4) - (action == 2), 1), 8)

        # 3. Collision before the move: only the entity in the player's row can touch it.
        j = py - 1
        reward = 0.0
        dead = False
        if active[j] and x[j] == px:
            if gold[j]:
                active[j] = False
                reward = 1.0
            else:
                dead = True

        # 4. Entities move and leave the board, then the player's row is checked again.
        move = move_timer == 0
        if move:
            for i in _SLOTS:
                if active[i]:
                    xi = x[i] + (1 if lr[i] else -1)
                    x[i] = xi
                    if not 0 <= xi <= 9:
                        active[i] = False
            if active[j] and x[j] == px:
                if gold[j]:
                    active[j] = False
                    reward += 1.0
                else:
                    dead = True

        # 5. Timers.
        spawn_timer -= 1
        move_timer = (move_speed if move else move_timer) - 1

        # 6. Difficulty ramp: every 102 steps until both intervals are 1; the move interval every other ramp.
        if self.ramping and (spawn_speed > 1 or move_speed > 1):
            if ramp_timer < 0:
                ramp_timer = RAMP_INTERVAL
                if move_speed > 1 and ramp_index % 2 == 1:
                    move_speed -= 1
                if spawn_speed > 1:
                    spawn_speed -= 1
                ramp_index += 1
            else:
                ramp_timer -= 1

        game[0], game[1] = px, py
        game[6:] = spawn_speed, spawn_timer, move_speed, move_timer, ramp_timer, ramp_index
        return game, reward, dead

    def observation(self, game):
        """Channels 0 player, 1 enemy, 2 trail (the cell behind each entity, if on the board), 3 gold; cell (y, x)
        of channel c is byte (10 y + x) * 4 + c of a fresh bytearray."""
        px, py, active, x, lr, gold = game[:6]
        cells = bytearray(400)
        cells[(10 * py + px) * 4] = 1
        for i in _SLOTS:
            if active[i]:
                xi = x[i]
                row = 40 * (i + 1)
                cells[row + 4 * xi + (3 if gold[i] else 1)] = 1
                back = xi - 1 if lr[i] else xi + 1
                if 0 <= back <= 9:
                    cells[row + 4 * back + 2] = 1
        return np.ndarray((10, 10, 4), np.bool_, cells)

    def to_pure(self, game):
        """The JAX `AsterixState` (int8 scalars and slots, bool flags)."""
        px, py, active, x, lr, gold, *timers = game
        i8 = np.int8
        return AsterixState(
            i8(px),
            i8(py),
            np.array(active, np.bool_),
            np.array(x, i8),
            np.array(lr, np.bool_),
            np.array(gold, np.bool_),
            *(i8(t) for t in timers),
        )

    def from_pure(self, state):
        """The twin state of a JAX `AsterixState`."""
        s = state
        slots = [[bool(v) if a.dtype == np.bool_ else int(v) for v in a] for a in (s.active, s.x, s.lr, s.gold)]
        timers = (s.spawn_speed, s.spawn_timer, s.move_speed, s.move_timer, s.ramp_timer, s.ramp_index)
        return [int(s.player_x), int(s.player_y), *slots, *(int(t) for t in timers)]

    def at_difficulty(self, game, level):
        """`Asterix.at_difficulty`: the level's intervals, the timers loaded with them."""
        spawn, move = level_speeds(level)
        game[6:10] = spawn, spawn, move, move
        game[11] = level
        return game
