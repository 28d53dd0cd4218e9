"""Asterix (MinAtar): dodge enemies and collect gold that cross the screen row by row.

The player moves in four directions on rows 1..8. Every `spawn_speed` steps an enemy (2/3) or a piece of gold
(1/3) appears at the left or right edge of a random empty row (rows 1..8, one entity per row) and walks
across, one cell every `move_speed` steps. Gold gives +1, an enemy ends the episode. With difficulty ramping,
every 102 steps the spawn interval shrinks by one and, every other ramp, the move interval too, down to (1, 1).

Reference quirks reproduced (minatar 1.0.15):

* spawn variates are drawn only when the spawn timer is 0 at the start of a step: the direction and gold
  uniforms always, the slot integer (the k-th empty row, in ascending order) only when a row is empty; with all
  eight rows occupied nothing spawns and nothing is overwritten;
* collisions are checked before and after the entities move; a step that hits an enemy still completes
  (entities move, timers and the ramp advance); entities leaving the board are removed before the second check;
* the ramp timer counts 100 down to -1 before ramping, so ramps happen every 102 steps; ramping stops for
  good once both intervals are 1; the spawn and move timers are not reset by a ramp;
* the unused shot timer (always 0) is not kept.

State per slot i (row i + 1): `active`, `x`, `lr` (moves right), `gold`; `x`, `lr` and `gold` are only
meaningful where `active`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import TRAIL, Channel, EnvParams, Looks, States, pytree_dataclass
from maxatar.episode import Environment
from maxatar.prng import uniform_to_int
from maxatar.settings import minatar_game

NUM_SLOTS = 8
RAMP_INTERVAL = 100
INIT_SPAWN_SPEED = 10
INIT_MOVE_SPEED = 5
# float32(1/3) rounds up, and no float32 lies in [1/3, float32(1/3)), so `u < GOLD_THRESHOLD` for a float32 u
# gives exactly the float64 reference's `u < 1/3`. 0.5 is exact.
GOLD_THRESHOLD = np.float32(1 / 3)
SLOT_ROWS = np.arange(1, NUM_SLOTS + 1, dtype=np.int8)
COLS = np.arange(10, dtype=np.int8)
MAX_LEVEL = INIT_SPAWN_SPEED - 1  # the ramp stops once both intervals are 1: the spawn interval gets there last


def level_speeds(level):
    """(spawn interval, move interval) after `level` ramps: the spawn interval drops every ramp, the move
    interval at every odd-indexed one (Python ints or JAX arrays alike)."""
    return INIT_SPAWN_SPEED - level, INIT_MOVE_SPEED - level // 2


@pytree_dataclass
class AsterixState:
    """Asterix's own state: the player, one entity slot per row 1..8, and the spawn, move and ramp timers."""

    player_x: jax.Array  # int8, 0..9
    player_y: jax.Array  # int8, 1..8
    active: jax.Array  # bool[8]
    x: jax.Array  # int8[8]
    lr: jax.Array  # bool[8], True: spawned at x=0 and moves right
    gold: jax.Array  # bool[8]
    spawn_speed: jax.Array  # int8
    spawn_timer: jax.Array  # int8
    move_speed: jax.Array  # int8
    move_timer: jax.Array  # int8
    ramp_timer: jax.Array  # int8, 100 .. -1
    ramp_index: jax.Array  # int8


@pytree_dataclass
class AsterixDraws:
    """The reference's spawn variates: `lr` and `gold` are its two `rand()` uniforms, `slot` its
    `randint(n_free)` (an index into the ascending list of empty slots). Used only on spawn steps."""

    lr: jax.Array  # float32 in [0, 1)
    gold: jax.Array  # float32 in [0, 1)
    slot: jax.Array  # int32 in [0, max(n_free, 1))


class Asterix(Environment):
    """MinAtar Asterix (`minatar.Environment('asterix')`)."""

    name = "asterix"
    gymnax_name = "Asterix-MinAtar"
    settings = minatar_game(gymnax_max_steps=1000)
    num_game_actions = 6
    minimal_action_set = (0, 1, 2, 3, 4)
    obs_shape = (10, 10, 4)
    obs_dtype = jnp.bool_
    num_reset_uniforms = 0
    num_step_uniforms = 3
    max_difficulty = MAX_LEVEL
    twin = "maxatar.games.asterix.twin:AsterixTwin"
    randomness = "No draw at reset; every spawn draws its side, whether it is gold, and its row."
    looks = Looks(
        channels=(
            Channel("player", (40, 210, 255), role="player"),
            Channel("enemy", (230, 55, 55), role="enemy"),
            TRAIL,
            Channel("gold", (255, 200, 40), role="goal"),
        ),
        draw_order=("trail", "gold", "enemy", "player"),
    )
    # The values an Asterix episode reaches (`maxatar.checks`): an entity's x is -1 or 10 once it walked off
    # (its slot then inactive); the timers count down from their intervals, the ramp timer from 100 to -1.
    states = States(
        ranges={
            "player_x": range(10),
            "player_y": range(1, NUM_SLOTS + 1),
            "x": range(-1, 11),
            "spawn_speed": range(1, INIT_SPAWN_SPEED + 1),
            "spawn_timer": range(INIT_SPAWN_SPEED + 1),
            "move_speed": range(1, INIT_MOVE_SPEED + 1),
            "move_timer": range(INIT_MOVE_SPEED + 1),
            "ramp_timer": range(-1, RAMP_INTERVAL + 1),
            "ramp_index": range(MAX_LEVEL + 1),
        },
    )

    def state_rules(self, state) -> list[str]:
        """Active entities are on the board; the intervals are those of the ramp's level (`level_speeds`)."""
        g = jax.tree.map(np.asarray, state.game)
        problems = []
        if np.any(g.active & ((g.x < 0) | (g.x > 9))):
            problems.append("an active entity (game.active) is off the board (game.x outside 0..9)")
        spawn, move = level_speeds(g.ramp_index.astype(np.int32))
        if np.any((g.spawn_speed != spawn) | (g.move_speed != move)):
            problems.append("game.spawn_speed and game.move_speed are not those of ramp level game.ramp_index")
        return problems

    def init(self, draws: tuple, params: EnvParams) -> AsterixState:
        """The player at (5, 5) on an empty board (a reset draws nothing)."""
        i8 = jnp.int8
        return AsterixState(
            player_x=i8(5),
            player_y=i8(5),
            active=jnp.zeros(NUM_SLOTS, jnp.bool_),
            x=jnp.zeros(NUM_SLOTS, i8),
            lr=jnp.zeros(NUM_SLOTS, jnp.bool_),
            gold=jnp.zeros(NUM_SLOTS, jnp.bool_),
            spawn_speed=i8(INIT_SPAWN_SPEED),
            spawn_timer=i8(INIT_SPAWN_SPEED),
            move_speed=i8(INIT_MOVE_SPEED),
            move_timer=i8(INIT_MOVE_SPEED),
            ramp_timer=i8(RAMP_INTERVAL),
            ramp_index=i8(0),
        )

    def at_difficulty(self, game: AsterixState, level: jax.Array) -> AsterixState:
        """The start at ramp level `level`: its intervals, the spawn and move timers loaded with them (as a reset
        loads the initial ones) and a full ramp countdown."""
        spawn, move = (jnp.asarray(v).astype(jnp.int8) for v in level_speeds(level))
        return dataclasses.replace(
            game,
            spawn_speed=spawn,
            spawn_timer=spawn,
            move_speed=move,
            move_timer=move,
            ramp_index=level.astype(jnp.int8),
        )

    def step_draws(self, uniforms: jax.Array, game: AsterixState, params: EnvParams) -> AsterixDraws:
        """The spawn variates; the slot integer ranges over the rows that are empty now."""
        n_free = NUM_SLOTS - jnp.sum(game.active, dtype=jnp.int32)
        return AsterixDraws(
            lr=uniforms[0],
            gold=uniforms[1],
            slot=uniform_to_int(uniforms[2], 0, jnp.maximum(n_free, 1)),
        )

    def game_step(self, game: AsterixState, action: jax.Array, draws: AsterixDraws, params: EnvParams):
        i8 = jnp.int8
        # 1. Spawn into the k-th empty slot (nothing when every slot is taken).
        spawn = game.spawn_timer == 0
        free = ~game.active
        rank = jnp.cumsum(free.astype(jnp.int32)) - 1
        new = spawn & free & (rank == draws.slot)
        lr_new = draws.lr < np.float32(0.5)
        active = game.active | new
        x = jnp.where(new, jnp.where(lr_new, i8(0), i8(9)), game.x)
        lr = jnp.where(new, lr_new, game.lr)
        gold = jnp.where(new, draws.gold < GOLD_THRESHOLD, game.gold)
        spawn_timer = jnp.where(spawn, game.spawn_speed, game.spawn_timer)

        # 2. Player move (noop and fire do nothing).
        px = jnp.clip(game.player_x + (action == 3).astype(i8) - (action == 1).astype(i8), 0, 9)
        py = jnp.clip(game.player_y + (action == 4).astype(i8) - (action == 2).astype(i8), 1, 8)
        in_row = SLOT_ROWS == py

        # 3. Collisions before the move.
        hit = active & in_row & (x == px)
        picked = hit & gold
        dead = jnp.any(hit & ~gold)
        active = active & ~picked

        # 4. Entities move, leave the board, and collide again. Without a move the second check finds nothing
        # new (picked gold is gone, an enemy hit is already terminal), so it runs unconditionally.
        move = game.move_timer == 0
        x = jnp.where(move & active, x + jnp.where(lr, i8(1), i8(-1)), x)
        active = active & (x >= 0) & (x <= 9)
        hit = active & in_row & (x == px)
        picked2 = hit & gold
        dead = dead | jnp.any(hit & ~gold)
        active = active & ~picked2
        reward = (jnp.sum(picked, dtype=jnp.int32) + jnp.sum(picked2, dtype=jnp.int32)).astype(jnp.float32)

        # 5. Timers.
        spawn_timer = spawn_timer - 1
        move_timer = jnp.where(move, game.move_speed, game.move_timer) - 1

        # 6. Difficulty ramp.
        ramping = params.difficulty_ramping & ((game.spawn_speed > 1) | (game.move_speed > 1))
        ramp = ramping & (game.ramp_timer < 0)
        ramp_timer = jnp.where(ramp, i8(RAMP_INTERVAL), game.ramp_timer - (ramping & ~ramp).astype(i8))
        slower_move = ramp & (game.move_speed > 1) & (game.ramp_index % 2 == 1)
        move_speed = game.move_speed - slower_move.astype(i8)
        spawn_speed = game.spawn_speed - (ramp & (game.spawn_speed > 1)).astype(i8)

        state = AsterixState(
            player_x=px.astype(i8),
            player_y=py.astype(i8),
            active=active,
            x=x.astype(i8),
            lr=lr,
            gold=gold,
            spawn_speed=spawn_speed.astype(i8),
            spawn_timer=spawn_timer.astype(i8),
            move_speed=move_speed.astype(i8),
            move_timer=move_timer.astype(i8),
            ramp_timer=ramp_timer.astype(i8),
            ramp_index=(game.ramp_index + ramp.astype(i8)).astype(i8),
        )
        return state, reward, dead

    def game_observation(self, game: AsterixState) -> jax.Array:
        """Channels: 0 player, 1 enemy, 2 trail (the cell behind each entity), 3 gold.

        Built as one broadcast comparison of a per-(row, channel) target column against the column index:
        concatenating boolean planes along the channel axis vectorizes worse on CPU."""
        i8 = jnp.int8
        none = i8(-1)
        channel = np.arange(4)
        back = game.x - jnp.where(game.lr, i8(1), i8(-1))
        enemy = jnp.where(game.active & ~game.gold, game.x, none)[:, None]
        trail = jnp.where(game.active, back, none)[:, None]
        gold = jnp.where(game.active & game.gold, game.x, none)[:, None]
        slots = jnp.where(channel == 1, enemy, jnp.where(channel == 2, trail, jnp.where(channel == 3, gold, none)))
        rows = jnp.pad(slots, ((1, 1), (0, 0)), constant_values=-1)  # (10, 4): rows 0 and 9 hold no entity
        player = jnp.where(np.arange(10) == game.player_y, game.player_x, none)[:, None]
        target = jnp.where(channel == 0, player, rows)
        return target[:, None, :] == COLS[None, :, None]
