"""SpaceInvaders: MinAtar's cannon-versus-alien-wave game as a pure JAX environment.

The cannon sits on the bottom row and fires bullets upward at a block of aliens that marches sideways, steps
down and reverses at the walls, speeds up as it thins out and shoots back at the cannon. Clearing a wave
spawns a new one (faster, with difficulty ramping). An enemy bullet or an alien reaching the cannon ends the
episode. The game itself draws no random numbers: only the sticky-action uniform (drawn by core) is random.

Behaviour of `minatar==1.0.15` reproduced on purpose:
* every wave is 24 aliens, rows 0-3 and columns 2-7 (minatar 1.0.0 started with 28);
* the enemy-bullet death check uses the cannon's position *after* this step's move;
* the alien move timer is reloaded with min(#aliens, enemy_move_interval), counted before this step's kills,
  and is not reset when a new wave spawns;
* the shooting alien is the lowest one in the occupied column nearest the cannon, ties going to the left;
* aliens and friendly bullets move in separate phases, so an alien stepping down onto a bullet's old cell
  while the bullet moves up into the alien's old cell swaps with it and both survive;
* grid moves wrap around like `np.roll` (an alien on row 9 that steps down reappears on row 0; that step is
  terminal anyway);
* a terminal step still finishes (aliens move, shots happen, kills are rewarded, waves respawn);
* difficulty ramp: on each cleared wave, with ramping on and enemy_move_interval > 6, the interval drops by one
  and ramp_index rises (so ramp_index ends at 6).
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from maxatar.core import Environment, pytree_dataclass

SHOT_COOL_DOWN = 5
ENEMY_MOVE_INTERVAL = 12
ENEMY_SHOT_INTERVAL = 10
MIN_MOVE_INTERVAL = 6  # ramping stops once the interval reaches this

_ROWS = jnp.arange(10, dtype=jnp.int32)
_COLS = jnp.arange(10, dtype=jnp.int32)


def _wave() -> jax.Array:
    """A fresh wave: rows 0-3, columns 2-7."""
    return (_ROWS[:, None] < 4) & (_COLS[None, :] >= 2) & (_COLS[None, :] < 8)


@pytree_dataclass
class SpaceInvadersState:
    """pos: cannon column (row 9). Maps are (row, col) booleans. alien_dir: -1 left, +1 right."""

    pos: jax.Array  # int8
    alien_map: jax.Array  # bool (10, 10)
    f_bullet_map: jax.Array  # bool (10, 10)
    e_bullet_map: jax.Array  # bool (10, 10)
    alien_dir: jax.Array  # int8
    enemy_move_interval: jax.Array  # int8
    alien_move_timer: jax.Array  # int8
    alien_shot_timer: jax.Array  # int8
    ramp_index: jax.Array  # int8
    shot_timer: jax.Array  # int8


class SpaceInvaders(Environment):
    """MinAtar SpaceInvaders (6 channels: cannon, alien, alien_left, alien_right, friendly_bullet, enemy_bullet)."""

    name: ClassVar[str] = "space_invaders"
    num_game_actions: ClassVar[int] = 6
    minimal_action_set: ClassVar[tuple[int, ...]] = (0, 1, 3, 5)
    obs_shape: ClassVar[tuple[int, ...]] = (10, 10, 6)
    obs_dtype = jnp.bool_
    num_reset_uniforms: ClassVar[int] = 0
    num_step_uniforms: ClassVar[int] = 0

    def init(self, draws, params) -> SpaceInvadersState:
        empty = jnp.zeros((10, 10), jnp.bool_)
        return SpaceInvadersState(
            pos=jnp.int8(5),
            alien_map=_wave(),
            f_bullet_map=empty,
            e_bullet_map=empty,
            alien_dir=jnp.int8(-1),
            enemy_move_interval=jnp.int8(ENEMY_MOVE_INTERVAL),
            alien_move_timer=jnp.int8(ENEMY_MOVE_INTERVAL),
            alien_shot_timer=jnp.int8(ENEMY_SHOT_INTERVAL),
            ramp_index=jnp.int8(0),
            shot_timer=jnp.int8(0),
        )

    def game_step(self, game: SpaceInvadersState, action, draws, params):
        pos = game.pos.astype(jnp.int32)
        shot_timer = game.shot_timer.astype(jnp.int32)
        move_timer = game.alien_move_timer.astype(jnp.int32)
        shot_timer_alien = game.alien_shot_timer.astype(jnp.int32)
        interval = game.enemy_move_interval.astype(jnp.int32)
        alien_dir = game.alien_dir.astype(jnp.int32)
        aliens = game.alien_map

        # (1) The cannon fires (if cooled down) or moves.
        fire = (action == 5) & (shot_timer == 0)
        pos = jnp.where(action == 1, jnp.maximum(pos - 1, 0), pos)
        pos = jnp.where(action == 3, jnp.minimum(pos + 1, 9), pos)
        shot_timer = jnp.where(fire, SHOT_COOL_DOWN, shot_timer)
        cannon_col = _COLS == pos  # (10,)

        # (2) Friendly bullets move up (a new one enters at row 9 and reaches row 8 at once); enemy bullets down.
        fired = game.f_bullet_map[9] | (fire & cannon_col)
        f_bullets = jnp.concatenate([game.f_bullet_map[1:9], fired[None], jnp.zeros((1, 10), jnp.bool_)], axis=0)
        e_bullets = jnp.concatenate([jnp.zeros((1, 10), jnp.bool_), game.e_bullet_map[:-1]], axis=0)
        terminal = jnp.any(e_bullets[9] & cannon_col) | jnp.any(aliens[9] & cannon_col)

        # (3) Aliens move when their timer runs out: sideways, or down and reverse at a wall.
        move = move_timer == 0
        count = jnp.sum(aliens, dtype=jnp.int32)
        move_timer = jnp.where(move, jnp.minimum(count, interval), move_timer)
        occupied = jnp.any(aliens, axis=0)  # (10,) columns holding an alien
        at_wall = (occupied[0] & (alien_dir < 0)) | (occupied[9] & (alien_dir > 0))
        descend = move & at_wall
        sideways = move & ~at_wall
        terminal = terminal | (descend & jnp.any(aliens[9]))
        down = jnp.roll(aliens, 1, axis=0)
        side = jnp.where(alien_dir < 0, jnp.roll(aliens, -1, axis=1), jnp.roll(aliens, 1, axis=1))
        aliens = jnp.where(descend, down, jnp.where(sideways, side, aliens))
        alien_dir = jnp.where(descend, -alien_dir, alien_dir)
        terminal = terminal | (move & jnp.any(aliens[9] & cannon_col))

        # (4) The lowest alien of the occupied column nearest the cannon (ties to the left) shoots.
        shoot = shot_timer_alien == 0
        shot_timer_alien = jnp.where(shoot, ENEMY_SHOT_INTERVAL, shot_timer_alien)
        occupied = jnp.any(aliens, axis=0)
        key = jnp.where(occupied, 2 * jnp.abs(_COLS - pos) + (_COLS > pos), 100)
        shooter_col = key == jnp.min(key)  # one-hot: the keys of distinct columns differ
        lowest = jnp.max(jnp.where(aliens & shooter_col[None, :], _ROWS[:, None], -1))
        e_bullets = e_bullets | (shoot & shooter_col[None, :] & (_ROWS[:, None] == lowest))

        # (5) A bullet sharing a cell with an alien destroys it and is spent.
        kills = aliens & f_bullets
        reward = jnp.sum(kills, dtype=jnp.int32).astype(jnp.float32)
        aliens = aliens & ~kills
        f_bullets = f_bullets & ~kills

        # (6) Timers, then a new wave (and a ramp step) once every alien is gone.
        shot_timer = shot_timer - (shot_timer > 0)
        move_timer = move_timer - 1
        shot_timer_alien = shot_timer_alien - 1
        cleared = ~jnp.any(aliens)
        ramp = cleared & params.difficulty_ramping & (interval > MIN_MOVE_INTERVAL)
        interval = interval - ramp
        aliens = aliens | (cleared & _wave())

        new = SpaceInvadersState(
            pos=pos.astype(jnp.int8),
            alien_map=aliens,
            f_bullet_map=f_bullets,
            e_bullet_map=e_bullets,
            alien_dir=alien_dir.astype(jnp.int8),
            enemy_move_interval=interval.astype(jnp.int8),
            alien_move_timer=move_timer.astype(jnp.int8),
            alien_shot_timer=shot_timer_alien.astype(jnp.int8),
            ramp_index=(game.ramp_index + ramp).astype(jnp.int8),
            shot_timer=shot_timer.astype(jnp.int8),
        )
        return new, reward, terminal

    def game_observation(self, game: SpaceInvadersState) -> jax.Array:
        aliens = game.alien_map
        left = game.alien_dir < 0
        cannon = (_ROWS[:, None] == 9) & (_COLS[None, :] == game.pos.astype(jnp.int32))
        return jnp.stack(
            [cannon, aliens, aliens & left, aliens & ~left, game.f_bullet_map, game.e_bullet_map],
            axis=-1,
        )
