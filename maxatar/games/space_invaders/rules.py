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
* a wave with an alien on row 9 that reaches a wall ends the episode, and still steps down, wrapping that
  row to row 0 like `np.roll` (sideways moves wrap the same way, though a wave never spans both walls);
* a terminal step still finishes (aliens move, shots happen, kills are rewarded, waves respawn);
* difficulty ramp: on each cleared wave, with ramping on and enemy_move_interval > 6, the interval drops by one
  and ramp_index rises (so ramp_index ends at 6).

The three 10x10 grids are stored as ten 10-bit row masks each (bit c of `rows[r]` is cell (r, c)), which keeps
the state small and the step cheap; `unpack_rows` turns them back into boolean grids.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import Channel, EnvParams, Looks, States, pytree_dataclass
from maxatar.episode import Environment
from maxatar.settings import minatar_game

SHOT_COOL_DOWN = 5
ENEMY_MOVE_INTERVAL = 12
ENEMY_SHOT_INTERVAL = 10
MIN_MOVE_INTERVAL = 6  # ramping stops once the interval is down to this

ROWS = np.arange(10, dtype=np.int32)
COLS = np.arange(10, dtype=np.int32)
ROW_MASK = 0x3FF  # ten columns
WAVE = np.where(ROWS < 4, 0b0011111100, 0).astype(np.uint16)  # rows 0-3, columns 2-7


@pytree_dataclass
class SpaceInvadersState:
    """pos: cannon column (row 9). *_rows: (10,) uint16 row masks. alien_dir: -1 left, +1 right."""

    pos: jax.Array  # int8
    alien_rows: jax.Array  # uint16 (10,)
    f_bullet_rows: jax.Array  # uint16 (10,)
    e_bullet_rows: jax.Array  # uint16 (10,)
    alien_dir: jax.Array  # int8
    enemy_move_interval: jax.Array  # int8
    alien_move_timer: jax.Array  # int8
    alien_shot_timer: jax.Array  # int8
    ramp_index: jax.Array  # int8
    shot_timer: jax.Array  # int8


def unpack_rows(rows: jax.Array) -> jax.Array:
    """Row masks (..., 10) -> boolean grid (..., 10, 10) indexed (row, column)."""
    # Shifted as uint32: AVX2 has per-lane variable shifts for 32-bit lanes only, so this form vectorizes.
    return ((jnp.asarray(rows).astype(jnp.uint32)[..., None] >> COLS.astype(np.uint32)) & 1) != 0


def _any_cols(rows: jax.Array) -> jax.Array:
    """The mask of columns holding at least one set cell."""
    return jax.lax.reduce(rows, jnp.uint16(0), jax.lax.bitwise_or, (rows.ndim - 1,))


def _bit(col) -> jax.Array:
    """The row mask of one column."""
    return jnp.left_shift(jnp.uint16(1), col.astype(jnp.uint16))


class SpaceInvaders(Environment):
    """MinAtar SpaceInvaders (`minatar.Environment('space_invaders')`)."""

    name = "space_invaders"
    gymnax_name = "SpaceInvaders-MinAtar"
    settings = minatar_game(gymnax_max_steps=1000)
    num_game_actions = 6
    minimal_action_set = (0, 1, 3, 5)
    obs_shape = (10, 10, 6)
    obs_dtype = jnp.bool_
    num_reset_uniforms = 0
    num_step_uniforms = 0
    max_difficulty = ENEMY_MOVE_INTERVAL - MIN_MOVE_INTERVAL
    twin = "maxatar.games.space_invaders.twin:SpaceInvadersTwin"
    randomness = "No draw at all: every episode starts the same, and the steps are deterministic given the actions."
    looks = Looks(
        channels=(
            Channel("cannon", (70, 220, 120), role="player"),
            Channel("alien", (225, 225, 235), role="enemy"),
            Channel("alien_left", (240, 80, 80), "left"),
            Channel("alien_right", (70, 150, 255), "right"),
            Channel("friendly_bullet", (255, 230, 40), "vbar", role="player_shot"),
            Channel("enemy_bullet", (255, 90, 210), "vbar", role="enemy_shot"),
        ),
        draw_order=("alien", "alien_left", "alien_right", "cannon", "enemy_bullet", "friendly_bullet"),
    )
    # The values a SpaceInvaders episode reaches (`maxatar.checks`): ten-column row masks, the wave moving left (-1)
    # or right (+1), timers counting down from their intervals.
    states = States(
        ranges={
            "pos": range(10),
            "alien_rows": range(ROW_MASK + 1),
            "f_bullet_rows": range(ROW_MASK + 1),
            "e_bullet_rows": range(ROW_MASK + 1),
            "alien_dir": range(-1, 2, 2),
            "enemy_move_interval": range(MIN_MOVE_INTERVAL, ENEMY_MOVE_INTERVAL + 1),
            "alien_move_timer": range(ENEMY_MOVE_INTERVAL + 1),
            "alien_shot_timer": range(ENEMY_SHOT_INTERVAL + 1),
            "ramp_index": range(ENEMY_MOVE_INTERVAL - MIN_MOVE_INTERVAL + 1),
            "shot_timer": range(SHOT_COOL_DOWN + 1),
        },
    )

    def state_rules(self, state) -> list[str]:
        """A wave is never empty (a cleared one respawns in the same step); a friendly bullet leaves row 9 in the
        step it is fired; the move interval is that of the ramp's level."""
        g = jax.tree.map(np.asarray, state.game)
        problems = []
        if np.any(np.all(g.alien_rows == 0, axis=-1)):
            problems.append("the wave is empty (game.alien_rows all 0)")
        if np.any(g.f_bullet_rows[..., 9] != 0):
            problems.append("a friendly bullet is on row 9 (game.f_bullet_rows[9])")
        if np.any(g.enemy_move_interval.astype(np.int32) + g.ramp_index != ENEMY_MOVE_INTERVAL):
            problems.append("game.enemy_move_interval is not that of ramp level game.ramp_index")
        return problems

    def init(self, draws: tuple, params: EnvParams) -> SpaceInvadersState:
        """The cannon in column 5 under a fresh wave moving left (a reset draws nothing)."""
        empty = jnp.zeros(10, jnp.uint16)
        return SpaceInvadersState(
            pos=jnp.int8(5),
            alien_rows=jnp.asarray(WAVE),
            f_bullet_rows=empty,
            e_bullet_rows=empty,
            alien_dir=jnp.int8(-1),
            enemy_move_interval=jnp.int8(ENEMY_MOVE_INTERVAL),
            alien_move_timer=jnp.int8(ENEMY_MOVE_INTERVAL),
            alien_shot_timer=jnp.int8(ENEMY_SHOT_INTERVAL),
            ramp_index=jnp.int8(0),
            shot_timer=jnp.int8(0),
        )

    def at_difficulty(self, game: SpaceInvadersState, level: jax.Array) -> SpaceInvadersState:
        """The start at ramp level `level` (what `level` cleared waves ramp): the alien move interval one shorter
        per level, and the move timer loaded with it, as a reset loads the initial one."""
        interval = (ENEMY_MOVE_INTERVAL - level).astype(jnp.int8)
        return dataclasses.replace(
            game, enemy_move_interval=interval, alien_move_timer=interval, ramp_index=level.astype(jnp.int8)
        )

    def game_step(self, game: SpaceInvadersState, action: jax.Array, draws: tuple, params: EnvParams):
        pos = game.pos.astype(jnp.int32)
        shot_timer = game.shot_timer.astype(jnp.int32)
        move_timer = game.alien_move_timer.astype(jnp.int32)
        alien_shot_timer = game.alien_shot_timer.astype(jnp.int32)
        interval = game.enemy_move_interval.astype(jnp.int32)
        alien_dir = game.alien_dir.astype(jnp.int32)
        aliens = game.alien_rows
        none = jnp.zeros(1, jnp.uint16)

        # (1) The cannon fires (if cooled down) or moves.
        fire = (action == 5) & (shot_timer == 0)
        pos = jnp.where(action == 1, jnp.maximum(pos - 1, 0), pos)
        pos = jnp.where(action == 3, jnp.minimum(pos + 1, 9), pos)
        shot_timer = jnp.where(fire, SHOT_COOL_DOWN, shot_timer)
        cannon = _bit(pos)

        # (2) Friendly bullets move up (a new one enters row 9 and reaches row 8 at once); enemy bullets down.
        fired = game.f_bullet_rows[9] | jnp.where(fire, cannon, jnp.uint16(0))
        f_bullets = jnp.concatenate([game.f_bullet_rows[1:9], fired[None], none])
        e_bullets = jnp.concatenate([none, game.e_bullet_rows[:9]])
        terminal = ((e_bullets[9] | aliens[9]) & cannon) != 0

        # (3) Aliens move when their timer runs out: sideways, or down and reverse at a wall (rows wrap).
        move = move_timer == 0
        count = jnp.sum(jax.lax.population_count(aliens), dtype=jnp.int32)
        move_timer = jnp.where(move, jnp.minimum(count, interval), move_timer)
        cols = _any_cols(aliens)
        at_wall = jnp.where(alien_dir < 0, cols & 1, cols & 0x200) != 0
        descend = move & at_wall
        sideways = move & ~at_wall
        terminal = terminal | (descend & (aliens[9] != 0))
        down = jnp.concatenate([aliens[9:], aliens[:9]])
        left = (aliens >> 1) | ((aliens & 1) << 9)
        right = ((aliens << 1) & ROW_MASK) | (aliens >> 9)
        aliens = jnp.where(descend, down, jnp.where(sideways, jnp.where(alien_dir < 0, left, right), aliens))
        alien_dir = jnp.where(descend, -alien_dir, alien_dir)
        terminal = terminal | (move & ((aliens[9] & cannon) != 0))

        # (4) The lowest alien of the occupied column nearest the cannon (ties to the left) shoots. A wave is
        # never empty here: a cleared wave respawns at the end of the same step.
        shoot = alien_shot_timer == 0
        alien_shot_timer = jnp.where(shoot, ENEMY_SHOT_INTERVAL, alien_shot_timer)
        occupied = ((_any_cols(aliens) >> COLS.astype(np.uint16)) & 1) != 0
        col = jnp.argmin(jnp.where(occupied, 2 * jnp.abs(COLS - pos) + (COLS > pos), 100))
        in_col = ((aliens >> col.astype(jnp.uint16)) & 1) != 0
        lowest = jnp.max(jnp.where(in_col, ROWS, -1))
        e_bullets = e_bullets | jnp.where(shoot & (ROWS == lowest), _bit(col), jnp.uint16(0))

        # (5) A bullet sharing a cell with an alien destroys it and is spent.
        kills = aliens & f_bullets
        reward = jnp.sum(jax.lax.population_count(kills), dtype=jnp.int32).astype(jnp.float32)
        aliens = aliens & ~kills
        f_bullets = f_bullets & ~kills

        # (6) Timers, then a new wave (and a ramp step) once every alien is gone.
        shot_timer = shot_timer - (shot_timer > 0)
        move_timer = move_timer - 1
        alien_shot_timer = alien_shot_timer - 1
        cleared = _any_cols(aliens) == 0
        ramp = cleared & params.difficulty_ramping & (interval > MIN_MOVE_INTERVAL)
        aliens = jnp.where(cleared, WAVE, aliens)

        new = SpaceInvadersState(
            pos=pos.astype(jnp.int8),
            alien_rows=aliens,
            f_bullet_rows=f_bullets,
            e_bullet_rows=e_bullets,
            alien_dir=alien_dir.astype(jnp.int8),
            enemy_move_interval=(interval - ramp).astype(jnp.int8),
            alien_move_timer=move_timer.astype(jnp.int8),
            alien_shot_timer=alien_shot_timer.astype(jnp.int8),
            ramp_index=(game.ramp_index + ramp).astype(jnp.int8),
            shot_timer=shot_timer.astype(jnp.int8),
        )
        return new, reward, terminal

    def game_observation(self, game: SpaceInvadersState) -> jax.Array:
        """Channels: 0 cannon, 1 alien, 2 alien moving left, 3 alien moving right, 4 friendly and 5 enemy bullet."""
        aliens = unpack_rows(game.alien_rows)
        left = game.alien_dir < 0
        cannon = (ROWS[:, None] == 9) & (COLS[None, :] == game.pos.astype(jnp.int32))
        channels = [cannon, aliens, aliens & left, aliens & ~left]
        return jnp.stack(channels + [unpack_rows(game.f_bullet_rows), unpack_rows(game.e_bullet_rows)], axis=-1)
