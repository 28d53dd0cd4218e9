"""SpaceInvaders' twin (see `maxatar.games.space_invaders.rules` for the rules and the reference quirks they keep)."""

from __future__ import annotations

import numpy as np

from maxatar.games.space_invaders.rules import (
    ENEMY_MOVE_INTERVAL,
    ENEMY_SHOT_INTERVAL,
    MIN_MOVE_INTERVAL,
    SHOT_COOL_DOWN,
    SpaceInvadersState,
)
from maxatar.twin import Twin

# A 10x10 grid is one Python int of 100 bits: bit 10 * r + c is cell (r, c), so a whole grid moves a row with
# one shift, and counting or intersecting grids is one int operation.
_FULL = (1 << 100) - 1
_ROW9 = 90  # bit offset of the bottom row
_WAVE = sum(0b0011111100 << 10 * r for r in range(4))  # rows 0-3, columns 2-7
_CACHE_SIZE = 1024  # alien planes kept (a wave marching back and forth revisits its positions)


def _cols(grid: int) -> int:
    """The 10-bit mask of the columns holding at least one set cell."""
    x = grid | grid >> 50  # rows 5-9 folded onto rows 0-4
    x = (x | x >> 30) & (1 << 50) - 1  # rows 3-4 folded onto rows 0-1, then rows 5-9 dropped
    x = (x | x >> 10 | x >> 20) & 0x3FF
    return x


def _rows(grid: int) -> np.ndarray:
    """The JAX state's (10,) uint16 row masks."""
    return np.array([grid >> 10 * r & 0x3FF for r in range(10)], np.uint16)


# (left, row mask) -> that row's cells in the alien channels: 1 (alien) and 2 (moving left) or 3 (moving right).
_ALIEN_ROWS = np.zeros((2, 1024, 10, 6), bool)
_ALIEN_ROWS[..., 1] = _ALIEN_ROWS[1, ..., 2] = _ALIEN_ROWS[0, ..., 3] = np.arange(1024)[:, None] >> np.arange(10) & 1


class SpaceInvadersTwin(Twin):
    """State: a list [pos, aliens, f_bullets, e_bullets, alien_dir, interval, move_timer, alien_shot_timer,
    ramp_index, shot_timer] of Python ints, the three grids packed as 100-bit ints (see `_FULL`)."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self.ramping = bool(params.difficulty_ramping)
        self._planes: dict[tuple[int, bool], np.ndarray] = {}  # (aliens, left) -> observation without cannon/bullets

    def reset(self, uniforms):
        return [5, _WAVE, 0, 0, -1, ENEMY_MOVE_INTERVAL, ENEMY_MOVE_INTERVAL, ENEMY_SHOT_INTERVAL, 0, 0]

    def step(self, game, action, uniforms):
        pos, aliens, f_bullets, e_bullets, alien_dir, interval, move_timer, alien_shot_timer, ramp, shot_timer = game

        # (1) The cannon fires (if cooled down) or moves.
        fire = action == 5 and shot_timer == 0
        if action == 1:
            pos = max(pos - 1, 0)
        elif action == 3:
            pos = min(pos + 1, 9)
        if fire:
            shot_timer = SHOT_COOL_DOWN
        cannon = 1 << _ROW9 + pos

        # (2) Friendly bullets move up a row (a new one enters row 9 and reaches row 8 at once); enemy ones down.
        f_bullets = f_bullets >> 10 | (cannon >> 10 if fire else 0)
        e_bullets = e_bullets << 10 & _FULL
        terminal = (e_bullets | aliens) & cannon != 0

        # (3) Aliens move when their timer runs out (reloaded with the count before this step's kills):
        # sideways, or down (row 9 wrapping to row 0) and reverse at a wall.
        if move_timer == 0:
            move_timer = min(aliens.bit_count(), interval)
            cols = _cols(aliens)
            if cols & (1 if alien_dir < 0 else 0x200):
                terminal = terminal or aliens >> _ROW9 != 0
                aliens = aliens << 10 & _FULL | aliens >> _ROW9
                alien_dir = -alien_dir
            else:  # no alien in the column it moves away from, so no bit crosses into the next row
                aliens = aliens >> 1 if alien_dir < 0 else aliens << 1
            terminal = terminal or aliens & cannon != 0

        # (4) The lowest alien of the occupied column nearest the cannon (ties to the left) shoots. The wave is
        # never empty here (a cleared wave respawns at the end of the step it is cleared).
        if alien_shot_timer == 0:
            alien_shot_timer = ENEMY_SHOT_INTERVAL
            cols = _cols(aliens)
            for d in range(10):
                if pos - d >= 0 and cols >> pos - d & 1:
                    col = pos - d
                    break
                if pos + d <= 9 and cols >> pos + d & 1:
                    col = pos + d
                    break
            bit = 1 << _ROW9 + col
            while not aliens & bit:
                bit >>= 10
            e_bullets |= bit

        # (5) A bullet sharing a cell with an alien destroys it and is spent.
        kills = aliens & f_bullets
        if kills:
            aliens ^= kills
            f_bullets ^= kills

        # (6) Timers, then a new wave (and a ramp step) once every alien is gone.
        if shot_timer > 0:
            shot_timer -= 1
        if not aliens:
            aliens = _WAVE
            if self.ramping and interval > MIN_MOVE_INTERVAL:
                interval -= 1
                ramp += 1
        game = [pos, aliens, f_bullets, e_bullets, alien_dir, interval, move_timer - 1, alien_shot_timer - 1]
        game += [ramp, shot_timer]
        return game, float(kills.bit_count()), terminal

    def observation(self, game):
        pos, aliens, f_bullets, e_bullets, alien_dir = game[:5]
        key = (aliens, alien_dir < 0)
        plane = self._planes.get(key)
        if plane is None:
            if len(self._planes) >= _CACHE_SIZE:
                self._planes.clear()
            plane = self._planes[key] = _ALIEN_ROWS[int(alien_dir < 0)][_rows(aliens)]
        obs = plane.copy()
        obs[9, pos, 0] = True
        for bullets, channel in ((f_bullets, 4), (e_bullets, 5)):
            while bullets:  # a few bullets at most: one write each
                low = bullets & -bullets
                r, c = divmod(low.bit_length() - 1, 10)
                obs[r, c, channel] = True
                bullets ^= low
        return obs

    def to_pure(self, game):
        pos, aliens, f_bullets, e_bullets, alien_dir, interval, move_timer, alien_shot_timer, ramp, shot_timer = game
        i8 = np.int8
        return SpaceInvadersState(
            pos=i8(pos),
            alien_rows=_rows(aliens),
            f_bullet_rows=_rows(f_bullets),
            e_bullet_rows=_rows(e_bullets),
            alien_dir=i8(alien_dir),
            enemy_move_interval=i8(interval),
            alien_move_timer=i8(move_timer),
            alien_shot_timer=i8(alien_shot_timer),
            ramp_index=i8(ramp),
            shot_timer=i8(shot_timer),
        )

    def from_pure(self, state):
        """The twin state of a JAX `SpaceInvadersState` (the row masks packed into 100-bit ints)."""
        s = state
        grids = [
            sum(int(r) << 10 * i for i, r in enumerate(rows))
            for rows in (s.alien_rows, s.f_bullet_rows, s.e_bullet_rows)
        ]
        timers = (
            s.alien_dir,
            s.enemy_move_interval,
            s.alien_move_timer,
            s.alien_shot_timer,
            s.ramp_index,
            s.shot_timer,
        )
        return [int(s.pos), *grids, *(int(t) for t in timers)]

    def at_difficulty(self, game, level):
        """`SpaceInvaders.at_difficulty`: the level's move interval, the move timer loaded with it."""
        game[5] = game[6] = ENEMY_MOVE_INTERVAL - level
        game[8] = level
        return game
