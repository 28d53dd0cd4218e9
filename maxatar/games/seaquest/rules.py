"""Seaquest (MinAtar): a submarine shoots fish and enemy subs, rescues divers and surfaces for oxygen.

The player's sub (two cells, front and back) moves on rows 0..8 and fires horizontally. Enemies (fish, and
subs that fire bullets every 11 steps) and divers cross rows 1..8 from either edge. Shooting an enemy gives +1.
Divers touched are picked up (at most 6). Oxygen drains underwater; surfacing with at least one diver
restores it, costs one diver, and ramps the difficulty (faster spawns and moves); surfacing with all six pays
`oxygen * 10 // 200`. Contact with an enemy or enemy bullet, running out of oxygen, or surfacing with no
diver ends the episode.

Reference quirks reproduced (minatar 1.0.15):

* oxygen (1.0.11+): the `oxygen <= 0` check runs before the decrement, so at oxygen 1 underwater the next
  step leaves 0 and the step after terminates (oxygen reaches -1);
* the diver counter: a full rescue sets it to 0 and then the surfacing decrement makes it -1; every later
  surfacing decrements again (-2, -3, ...) and, the counter not being 0, never triggers the no-diver death;
* an enemy sub that leaves the board or is shot while moving still fires if its shot timer is due: the bullet
  appears at the sub's (possibly off-board) cell and moves in the same step, since enemy bullets are updated
  after the subs; every enemy bullet fired in a step moves in that step;
* the ramp tests the parity of `ramp_index` before incrementing it, so the first surfacing leaves the move
  interval at 5 (4 after the second); it stops once the spawn interval is 1 and the move interval 2;
* every list is updated newest first and collision searches pick the oldest match: a bullet hits the oldest
  fish on its cell before any sub, a moving enemy is hit by the oldest friendly bullet on its cell, and when
  several enemies move onto one bullet's cell the newest takes it; with five divers on board and two divers
  on the sub's cell, the newest is picked up;
* the reference removes dead entities by value (`list.remove`, the first equal element). For enemies and
  divers the element removed is always the current one: an entity leaving the board cannot equal an earlier
  (not yet moved, on-board) one, and an enemy shot on cell c while moving cannot have an equal earlier enemy
  there, because a friendly bullet surviving the bullet phase on c implies no enemy was on c. For bullets an
  equal earlier bullet can exist (two friendly bullets lined up by a sub moving with its shot, or two enemy
  bullets at a board edge); the reference then drops the earlier one and moves the current one again, which
  leaves the same lists as dropping the current one, because both cases happen only at the board's edge
  where the re-moved bullet leaves it. The parity tests replay these cases against the oracle.

Storage (fixed shapes, `overflow` is set instead of ever overwriting a live entry):

* enemies (fish and subs together) live in a ring of `NUM_ENEMY_SLOTS` = 30 slots indexed by spawn number, so
  spawn order is the slot order starting at `e_next` (the slot the next spawn takes). With at most one spawn
  per step and a lifetime of at most 30 steps once the move interval is 2 (spawns are at least 14 steps apart
  before that), a slot is always free again when its turn comes;
* each enemy slot owns one enemy-bullet slot: a sub fires every 11 steps and its bullet lives at most 9, and a
  ring slot is reused only 30 spawns later. The bullet's row and direction are its sub's. The sub's shot timer
  keeps counting while its bullet flies (also after the sub is gone), so `10 - shot timer` is the bullet's age,
  which recovers the reference's list order (older first, then newer sub first);
* the ring is bit-sliced: one uint32 per flag (bit i = slot i) and one uint32 per bit of each small integer
  field, so a whole phase over all 30 enemies is a few dozen integer operations per environment;
* friendly bullets (one shot per 5 steps, at most 8 steps alive) and divers (one per 30 steps, at most 59
  steps alive) need 2 records each, kept compacted in list order (record 0 is the older) and packed into one
  int32 each;
* unreachable in the reference: the sub facing left on column 9 (its back cell would be column 10, where the
  reference raises IndexError); here the back cell is simply not drawn.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import TRAIL, Channel, EnvParams, Looks, States, pytree_dataclass
from maxatar.episode import Environment
from maxatar.games.seaquest.layout import (
    BULLET_RECORD,
    BULLET_X_PLANES,
    DIVER_RECORD,
    MOVE_PLANES,
    NUM_ENEMY_SLOTS,
    SHOT_PLANES,
    X_PLANES,
    Y_PLANES,
    record_fields,
    record_width,
    slot_flags,
    slot_values,
)
from maxatar.prng import materialize, uniform_to_int
from maxatar.settings import minatar_game

MAX_OXYGEN = 200
INIT_SPAWN_SPEED = 20
DIVER_SPAWN_SPEED = 30
INIT_MOVE_SPEED = 5
SHOT_COOL_DOWN = 5
ENEMY_SHOT_INTERVAL = 10
DIVER_MOVE_INTERVAL = 5
# float32(1/3) rounds up and no float32 lies in [1/3, float32(1/3)): `u < SUB_THRESHOLD` for a float32 u is the
# float64 reference's `u < 1/3`. 0.5 is exact.
SUB_THRESHOLD = np.float32(1 / 3)
MIN_MOVE_SPEED = 2  # the ramp stops once the spawn interval is 1 and the move interval 2
MAX_LEVEL = INIT_SPAWN_SPEED - 1  # the spawn interval gets there last
HALF = np.float32(0.5)

ALL = np.uint32((1 << NUM_ENEMY_SLOTS) - 1)
NOTHING = np.uint32(0)
ROW_BITS = np.left_shift(np.uint8(1), np.arange(8, dtype=np.uint8))  # bit r of a row-mask byte
COLS = np.arange(10, dtype=np.int32)


@pytree_dataclass
class SeaquestState:
    """Seaquest's own state: the player's sub, the spawn and ramp timers, the enemy ring with its enemy bullets,
    and the packed friendly bullets and divers (see the module docstring's storage notes)."""

    sub_x: jax.Array  # int8 0..9
    sub_y: jax.Array  # int8 0..8
    sub_or: jax.Array  # bool, True: facing right
    oxygen: jax.Array  # int16, -1..200
    diver_count: jax.Array  # int32, 6 down to -inf (see the module docstring)
    shot_timer: jax.Array  # int8
    e_spawn_speed: jax.Array  # int8
    e_spawn_timer: jax.Array  # int8
    d_spawn_timer: jax.Array  # int8
    move_speed: jax.Array  # int8
    ramp_index: jax.Array  # int8
    surface: jax.Array  # bool
    # enemies: a ring of 30 slots indexed by spawn number; bit i of each uint32 belongs to slot i
    e_alive: jax.Array  # uint32
    e_sub: jax.Array  # uint32, set: a sub, clear: a fish
    e_lr: jax.Array  # uint32, set: spawned at x=0, moves right
    e_x: tuple[jax.Array, ...]  # 4 uint32 bit planes of x + 1
    e_y: tuple[jax.Array, ...]  # 3 uint32 bit planes of y - 1
    e_move: tuple[jax.Array, ...]  # 3 uint32 bit planes of the move timer
    e_shot: tuple[jax.Array, ...]  # 4 uint32 bit planes of the shot timer (subs; runs on while their bullet flies)
    e_next: jax.Array  # int8, the slot of the next spawn
    # enemy bullets: bullet i was fired by the sub in enemy slot i (row e_y, direction e_lr of slot i)
    b_alive: jax.Array  # uint32
    b_x: tuple[jax.Array, ...]  # 4 uint32 bit planes of x + 2
    # friendly bullets and divers: two records each, compacted (record 0 is the older), packed in an int32
    f_bullets: jax.Array  # int32, record k in bits 10k..: alive, direction (right), x (4 bits), y (4 bits)
    divers: jax.Array  # int32, record k in bits 13k..: alive, lr, x (4 bits), y (4 bits), move timer (3 bits)
    overflow: jax.Array  # bool, a spawn or shot found no free slot (never in the reference's reachable play)


@pytree_dataclass
class SeaquestDraws:
    """The reference's spawn variates. Enemy: `e_lr`, `e_sub` (its two `rand()`) and `e_row`
    (`randint(1, 9)`), used when `e_spawn_timer == 0`; diver: `d_lr` (`rand()`) and `d_row` (`randint(1, 9)`),
    used when `d_spawn_timer == 0`."""

    e_lr: jax.Array  # float32 in [0, 1)
    e_sub: jax.Array  # float32 in [0, 1)
    e_row: jax.Array  # int32 in 1..8
    d_lr: jax.Array  # float32 in [0, 1)
    d_row: jax.Array  # int32 in 1..8


# --- bit-sliced helpers: a "mask" is a uint32 with one bit per ring slot, "planes" a tuple of masks ---------


def _fill(flag):
    """All slots if `flag` (a bool), none otherwise."""
    return jnp.where(flag, ALL, NOTHING)


def _equals(planes, value):
    """The slots whose field equals `value` (an int in range, or an array of them: broadcasts)."""
    value = jnp.asarray(value, jnp.int32)
    out = jnp.asarray(ALL)
    for b, plane in enumerate(planes):
        bit = ((value >> b) & 1).astype(jnp.uint32)
        out = out & (plane ^ (bit - np.uint32(1)))  # plane where the bit is 1, ~plane where it is 0
    return out


def _is_zero(planes):
    out = jnp.asarray(ALL)
    for plane in planes:
        out = out & ~plane
    return out


def _increment(planes, mask):
    """+1 on the slots in `mask` (no overflow by construction)."""
    out, carry = [], mask
    for plane in planes:
        out.append(plane ^ carry)
        carry = plane & carry
    return tuple(out)


def _decrement(planes, mask):
    """-1 on the slots in `mask` (never below 0 by construction)."""
    out, borrow = [], mask
    for plane in planes:
        out.append(plane ^ borrow)
        borrow = ~plane & borrow
    return tuple(out)


def _assign(planes, mask, value):
    """Set the field to `value` (an int) on the slots in `mask`."""
    value = jnp.asarray(value, jnp.int32)
    return tuple(
        (plane & ~mask) | (mask & (np.uint32(0) - ((value >> b) & 1).astype(jnp.uint32)))
        for b, plane in enumerate(planes)
    )


def _select(mask, on, off):
    return tuple((a & mask) | (b & ~mask) for a, b in zip(on, off, strict=True))


def _rotate(mask, start):
    """Ring order: slot `start` (the oldest) to bit 0."""
    return ((mask >> start) | (mask << (np.uint32(NUM_ENEMY_SLOTS) - start))) & ALL


def _unrotate(mask, start):
    return ((mask << start) | (mask >> (np.uint32(NUM_ENEMY_SLOTS) - start))) & ALL


def _oldest(mask, start):
    """The single oldest slot of `mask` (in spawn order), or no slot."""
    r = _rotate(mask, start)
    return _unrotate(r & (np.uint32(0) - r), start)


def _newest(mask, start):
    r = _rotate(mask, start)
    top = jnp.where(r != 0, jnp.left_shift(np.uint32(1), np.uint32(31) - jax.lax.clz(r)), NOTHING)
    return _unrotate(top, start)


def _off_board(x):
    return (x < 0) | (x > 9)


# The packed 2-record lists (`layout.BULLET_RECORD`, `layout.DIVER_RECORD`) are unpacked into int32 (flags into
# bool) scalars, processed, and packed again: one output instead of one per field and record, which XLA's CPU
# backend would each recompute from the whole step.


def _unpack(word, layout):
    width, records = record_width(layout), []
    for k in range(2):
        record = {}
        for name, (offset, bits) in layout.items():
            value = (word >> (k * width + offset)) & ((1 << bits) - 1)
            record[name] = value == 1 if bits == 1 else value
        records.append(record)
    return records


def _pack(records, layout):
    width, word = record_width(layout), jnp.int32(0)
    for k, record in enumerate(records):
        for name, (offset, bits) in layout.items():
            value = record[name].astype(jnp.int32) & ((1 << bits) - 1)
            word = word | (value << (k * width + offset))
    return word


def _push(records, new, do):
    """Append `new` (a record without "alive") to a compacted 2-record list; returns (records, overflow)."""
    put = [do & ~records[0]["alive"], do & records[0]["alive"] & ~records[1]["alive"]]
    out = []
    for record, p in zip(records, put, strict=True):
        out.append(
            {name: (record[name] | p) if name == "alive" else jnp.where(p, new[name], v) for name, v in record.items()}
        )
    return out, do & records[0]["alive"] & records[1]["alive"]


def _compact(records):
    """Move record 1 to record 0 when record 0 is gone."""
    first, second = records
    shift = ~first["alive"] & second["alive"]
    return [
        {name: jnp.where(shift, second[name], v) for name, v in first.items()},
        dict(second, alive=first["alive"] & second["alive"]),
    ]


def _zeros(n):
    return tuple(jnp.uint32(0) for _ in range(n))


# --- one step, phase by phase in the reference's order ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Turn:
    """A step in progress: the state as far as the phases so far have taken it and what the step has earned and
    ended so far. Friendly bullets and divers are unpacked into their records and the sub's position is int32
    (the phases' arithmetic on it is int32) until the step ends, so each is converted once. Only lives while
    tracing: passing it from phase to phase costs nothing at run time."""

    game: SeaquestState
    bullets: list[dict]
    divers: list[dict]
    reward: jax.Array  # int32
    terminal: jax.Array  # bool
    oldest: jax.Array | None = None  # ring slot of the oldest enemy, fixed once the enemy spawn is done
    sub_row: jax.Array | None = None  # the enemy slots in the sub's row, fixed once the sub has moved

    def update(self, reward=None, terminal=None, **fields) -> _Turn:
        """This turn with game `fields` replaced, `reward` added and `terminal` or-ed in (where given: no
        operation is traced for what a phase leaves alone)."""
        return dataclasses.replace(
            self,
            game=dataclasses.replace(self.game, **fields),
            reward=self.reward if reward is None else self.reward + reward,
            terminal=self.terminal if terminal is None else self.terminal | terminal,
        )


def _enemies_on(game: SeaquestState, planes_x, x, y, valid) -> jax.Array:
    """Slots on (x, y) (x may be -1 or 10; y 0..8, row 0 holds no enemy)."""
    return _equals(planes_x, x + 1) & _equals(game.e_y, y - 1) & _fill(valid & (y > 0))


def _spawn_enemy(turn: _Turn, draws: SeaquestDraws) -> _Turn:
    """A fish or sub enters when the spawn timer is due, unless an enemy moving the other way holds its row (the
    draws are consumed either way)."""
    g = turn.game
    spawn = g.e_spawn_timer == 0
    lr = draws.e_lr < HALF
    row = draws.e_row.astype(jnp.int32)
    blocked = (g.e_alive & _equals(g.e_y, row - 1) & (g.e_lr ^ _fill(lr))) != 0
    here = jnp.left_shift(jnp.uint32(1), g.e_next.astype(jnp.uint32))
    busy = ((g.e_alive | g.b_alive) & here) != 0
    new = spawn & ~blocked
    put = here & _fill(new & ~busy)
    advance = new & ~busy
    e_next = jnp.where(advance, jnp.where(g.e_next == NUM_ENEMY_SLOTS - 1, jnp.int8(0), g.e_next + 1), g.e_next)
    e_next = e_next.astype(jnp.int8)
    # Spawn order starts at the slot the next spawn takes.
    turn = dataclasses.replace(turn, oldest=e_next.astype(jnp.uint32))
    return turn.update(
        overflow=g.overflow | (new & busy),
        e_alive=g.e_alive | put,
        e_sub=(g.e_sub & ~put) | (put & _fill(draws.e_sub < SUB_THRESHOLD)),
        e_lr=(g.e_lr & ~put) | (put & _fill(lr)),
        e_x=_assign(g.e_x, put, jnp.where(lr, 1, 10)),
        e_y=_assign(g.e_y, put, row - 1),
        e_move=_assign(g.e_move, put, g.move_speed),
        e_shot=_assign(g.e_shot, put, ENEMY_SHOT_INTERVAL),
        e_next=e_next,
        e_spawn_timer=jnp.where(spawn, g.e_spawn_speed, g.e_spawn_timer),
    )


def _spawn_diver(turn: _Turn, draws: SeaquestDraws) -> _Turn:
    """A diver enters from its side when the diver timer is due."""
    g = turn.game
    spawn = g.d_spawn_timer == 0
    lr = draws.d_lr < HALF
    new = {"lr": lr, "x": jnp.where(lr, 0, 9), "y": draws.d_row, "move": DIVER_MOVE_INTERVAL}
    divers, full = _push(turn.divers, new, spawn)
    turn = dataclasses.replace(turn, divers=divers)
    return turn.update(
        overflow=g.overflow | full, d_spawn_timer=jnp.where(spawn, jnp.int8(DIVER_SPAWN_SPEED), g.d_spawn_timer)
    )


def _act(turn: _Turn, action: jax.Array) -> _Turn:
    """The player fires (if the gun is ready) or moves; fire on cooldown does nothing."""
    g, i32 = turn.game, jnp.int32
    fire = (action == 5) & (g.shot_timer == 0)
    left, right = action == 1, action == 3
    sub_x = jnp.clip(g.sub_x.astype(i32) + right.astype(i32) - left.astype(i32), 0, 9)
    sub_y = jnp.clip(g.sub_y.astype(i32) + (action == 4).astype(i32) - (action == 2).astype(i32), 0, 8)
    sub_or = jnp.where(left, False, jnp.where(right, True, g.sub_or))
    bullets, full = _push(turn.bullets, {"dir": sub_or, "x": sub_x, "y": sub_y}, fire)
    sub_row = _equals(g.e_y, sub_y - 1) & _fill(sub_y > 0)
    turn = dataclasses.replace(turn, bullets=bullets, sub_row=sub_row)
    return turn.update(
        sub_x=sub_x,
        sub_y=sub_y,
        sub_or=sub_or,
        shot_timer=jnp.where(fire, jnp.int8(SHOT_COOL_DOWN), g.shot_timer),
        overflow=g.overflow | full,
    )


def _move_friendly_bullets(turn: _Turn) -> _Turn:
    """Friendly bullets, newest first: move, leave, or hit the oldest fish on their cell, else the oldest sub."""
    g = turn.game
    e_alive, bullets, kills = g.e_alive, list(turn.bullets), jnp.int32(0)
    for k in (1, 0):
        bullet = bullets[k]
        x = bullet["x"] + jnp.where(bullet["dir"], 1, -1)
        live = bullet["alive"] & ~_off_board(x)
        hit = e_alive & _enemies_on(g, g.e_x, x, bullet["y"], live)
        fish = hit & ~g.e_sub
        victim = _oldest(jnp.where(fish != 0, fish, hit), turn.oldest)
        e_alive = e_alive & ~victim
        bullets[k] = dict(bullet, alive=live & (victim == 0), x=x)
        kills = kills + (victim != 0).astype(jnp.int32)
    return dataclasses.replace(turn, bullets=bullets).update(reward=kills, e_alive=e_alive)


def _move_divers(turn: _Turn) -> _Turn:
    """Divers, newest first: picked up where they stand, else on their move (at most six on board the sub)."""
    g = turn.game
    count, divers = g.diver_count, list(turn.divers)
    for k in (1, 0):
        diver = divers[k]
        on_row = diver["y"] == g.sub_y
        pick = diver["alive"] & on_row & (diver["x"] == g.sub_x) & (count < 6)
        rest = diver["alive"] & ~pick
        move = rest & (diver["move"] == 0)
        x = jnp.where(move, diver["x"] + jnp.where(diver["lr"], 1, -1), diver["x"])
        off = move & _off_board(x)
        pick_on_move = move & ~off & on_row & (x == g.sub_x) & (count < 6)
        count = count + (pick | pick_on_move).astype(jnp.int32)
        divers[k] = dict(
            diver,
            alive=diver["alive"] & ~pick & ~off & ~pick_on_move,
            x=x,
            move=jnp.where(move, DIVER_MOVE_INTERVAL, jnp.where(rest, diver["move"] - 1, diver["move"])),
        )
    return dataclasses.replace(turn, divers=divers).update(diver_count=count)


def _move_enemies(turn: _Turn, movers: jax.Array) -> _Turn:
    """The enemies in `movers` (fish or subs) touch the sub, move when due, leave the board, or meet a friendly
    bullet: each mover, newest first, takes the oldest live friendly bullet on its cell."""
    g, bullets, in_sub_row, start = turn.game, turn.bullets, turn.sub_row, turn.oldest
    touched = (movers & in_sub_row & _equals(g.e_x, g.sub_x + 1)) != 0
    move = movers & _is_zero(g.e_move)
    e_x = _decrement(_increment(g.e_x, move & g.e_lr), move & ~g.e_lr)
    e_move = _decrement(_assign(g.e_move, move, g.move_speed), movers & ~move)
    off = move & (_is_zero(e_x) | _equals(e_x, 11))
    onto_sub = move & ~off & in_sub_row & _equals(e_x, g.sub_x + 1)
    shootable = move & ~off & ~onto_sub
    b0, b1 = bullets
    killer0 = _newest(shootable & _enemies_on(g, e_x, b0["x"], b0["y"], b0["alive"]), start)
    killer1 = _newest(shootable & ~killer0 & _enemies_on(g, e_x, b1["x"], b1["y"], b1["alive"]), start)
    bullets = [dict(b0, alive=b0["alive"] & (killer0 == 0)), dict(b1, alive=b1["alive"] & (killer1 == 0))]
    kills = (killer0 != 0).astype(jnp.int32) + (killer1 != 0).astype(jnp.int32)
    return dataclasses.replace(turn, bullets=bullets).update(
        reward=kills,
        terminal=touched | (onto_sub != 0),
        e_alive=g.e_alive & ~(off | killer0 | killer1),
        e_x=e_x,
        e_move=e_move,
    )


def _move_enemy_subs(turn: _Turn) -> _Turn:
    """Enemy subs move, then fire when their shot timer is due, even a sub that just left the board or was shot;
    the timer of a gone sub keeps counting while its bullet flies (the bullet's age, for ordering)."""
    subs = turn.game.e_alive & turn.game.e_sub
    turn = _move_enemies(turn, subs)
    g = turn.game
    shoot = subs & _is_zero(g.e_shot)
    return turn.update(
        overflow=g.overflow | ((shoot & g.b_alive) != 0),
        e_shot=_decrement(_assign(g.e_shot, shoot, ENEMY_SHOT_INTERVAL), (subs & ~shoot) | (g.b_alive & ~subs)),
        b_x=_select(shoot, _increment(g.e_x, ALL), g.b_x),
        b_alive=g.b_alive | shoot,
    )


def _enemy_bullets_hit_sub(turn: _Turn) -> jax.Array:
    """Whether a live enemy bullet shares the sub's cell."""
    g = turn.game
    return (g.b_alive & turn.sub_row & _equals(g.b_x, g.sub_x + 2)) != 0


def _move_enemy_bullets(turn: _Turn) -> _Turn:
    """Enemy bullets hit the sub before or after their move, or leave the board."""
    turn = turn.update(terminal=_enemy_bullets_hit_sub(turn))
    g = turn.game
    b_x = _decrement(_increment(g.b_x, g.b_alive & g.e_lr), g.b_alive & ~g.e_lr)
    # on the board: x + 2 in 2..11; off: 0, 1, 12, 13 (bit 1 clear and bits 3, 2 equal)
    turn = turn.update(b_x=b_x, b_alive=g.b_alive & (b_x[1] | (b_x[3] ^ b_x[2])))
    return turn.update(terminal=_enemy_bullets_hit_sub(turn))


def _move_fish(turn: _Turn) -> _Turn:
    """Fish move as subs do, without firing."""
    return _move_enemies(turn, turn.game.e_alive & ~turn.game.e_sub)


def _timers_oxygen_surfacing(turn: _Turn, params: EnvParams) -> _Turn:
    """Timers count down; oxygen is checked, then drains underwater; arriving at the surface with divers costs
    one (all six pay the oxygen bonus), refills oxygen and ramps the difficulty; with none it ends the game."""
    g, i8 = turn.game, jnp.int8
    out_of_oxygen = g.oxygen <= 0
    under = g.sub_y > 0
    oxygen = jnp.where(under, g.oxygen - 1, g.oxygen).astype(jnp.int16)
    arrive = ~under & ~g.surface
    count = g.diver_count
    no_divers = arrive & (count == 0)
    surfaced = arrive & (count != 0)
    rescue = surfaced & (count == 6)
    bonus = jnp.where(rescue, oxygen.astype(jnp.int32) * 10 // MAX_OXYGEN, 0)
    count = jnp.where(rescue, 0, count) - surfaced.astype(jnp.int32)
    ramp = surfaced & params.difficulty_ramping & ((g.e_spawn_speed > 1) | (g.move_speed > 2))
    move_speed = g.move_speed - (ramp & (g.move_speed > 2) & (g.ramp_index % 2 == 1)).astype(i8)
    return turn.update(
        reward=bonus,
        terminal=out_of_oxygen | no_divers,
        e_spawn_timer=g.e_spawn_timer - (g.e_spawn_timer > 0).astype(i8),
        d_spawn_timer=g.d_spawn_timer - (g.d_spawn_timer > 0).astype(i8),
        shot_timer=g.shot_timer - (g.shot_timer > 0).astype(i8),
        oxygen=jnp.where(surfaced, jnp.int16(MAX_OXYGEN), oxygen),
        diver_count=count,
        surface=jnp.where(under, False, g.surface | surfaced),
        e_spawn_speed=(g.e_spawn_speed - (ramp & (g.e_spawn_speed > 1)).astype(i8)).astype(i8),
        move_speed=move_speed.astype(i8),
        ramp_index=(g.ramp_index + ramp.astype(i8)).astype(i8),
    )


class Seaquest(Environment):
    """MinAtar Seaquest (`minatar.Environment('seaquest')`)."""

    name = "seaquest"
    gymnax_name = "Seaquest-MinAtar"
    settings = minatar_game(gymnax_max_steps=1000)
    num_game_actions = 6
    minimal_action_set = (0, 1, 2, 3, 4, 5)
    obs_shape = (10, 10, 10)
    obs_dtype = jnp.bool_
    num_reset_uniforms = 0
    num_step_uniforms = 5
    max_difficulty = MAX_LEVEL
    twin = "maxatar.games.seaquest.twin:SeaquestTwin"
    randomness = "No draw at reset; enemy and diver spawns draw their side, kind and row."
    looks = Looks(
        channels=(
            Channel("sub_front", (255, 225, 40), role="player"),
            Channel("sub_back", (190, 150, 20), role="player_rear"),
            Channel("friendly_bullet", (255, 255, 255), "hbar", role="player_shot"),
            TRAIL,
            Channel("enemy_bullet", (255, 90, 210), "hbar", role="enemy_shot"),
            Channel("enemy_fish", (230, 55, 55), role="enemy_alt"),
            Channel("enemy_sub", (150, 95, 255), role="enemy"),
            Channel("oxygen_gauge", (40, 200, 255), role="gauge"),
            Channel("diver_gauge", (50, 170, 80), role="gauge_alt"),
            Channel("diver", (150, 255, 170), role="goal"),
        ),
        draw_order=(
            "trail",
            "oxygen_gauge",
            "diver_gauge",
            "diver",
            "enemy_fish",
            "enemy_sub",
            "enemy_bullet",
            "friendly_bullet",
            "sub_back",
            "sub_front",
        ),
    )
    # The values a Seaquest episode reaches (`maxatar.checks`), by the names of `state_values`: the ring's bit-sliced
    # fields decoded per slot (as stored: x + 1, y - 1, bullet x + 2), the packed records' fields per record. Enemies
    # and bullets that left the board keep their last x; oxygen ends at -1; the diver count goes negative after a
    # full rescue (see the module docstring).
    states = States(
        ranges={
            "sub_x": range(10),
            "sub_y": range(9),
            "oxygen": range(-1, MAX_OXYGEN + 1),
            "diver_count": range(-(2**30), 7),
            "shot_timer": range(SHOT_COOL_DOWN + 1),
            "e_spawn_speed": range(1, INIT_SPAWN_SPEED + 1),
            "e_spawn_timer": range(INIT_SPAWN_SPEED + 1),
            "d_spawn_timer": range(DIVER_SPAWN_SPEED + 1),
            "move_speed": range(MIN_MOVE_SPEED, INIT_MOVE_SPEED + 1),
            "ramp_index": range(MAX_LEVEL + 1),
            "e_alive": range(int(ALL) + 1),
            "e_sub": range(int(ALL) + 1),
            "e_lr": range(int(ALL) + 1),
            "b_alive": range(int(ALL) + 1),
            "e_x planes": range(int(ALL) + 1),
            "e_y planes": range(int(ALL) + 1),
            "e_move planes": range(int(ALL) + 1),
            "e_shot planes": range(int(ALL) + 1),
            "b_x planes": range(int(ALL) + 1),
            "e_x": range(12),  # x + 1: -1 .. 10
            "e_y": range(8),  # y - 1: rows 1 .. 8
            "e_move": range(INIT_MOVE_SPEED + 1),
            "e_shot": range(ENEMY_SHOT_INTERVAL + 1),
            "b_x": range(14),  # x + 2: -2 .. 11
            "e_next": range(NUM_ENEMY_SLOTS),
            "f_bullets": range(2 ** (2 * record_width(BULLET_RECORD))),
            "f_bullets y": range(9),
            "divers": range(2 ** (2 * record_width(DIVER_RECORD))),
            "divers y": range(9),
            "divers move": range(DIVER_MOVE_INTERVAL + 1),
        },
    )

    def state_values(self, game: SeaquestState) -> dict[str, np.ndarray]:
        """The state's fields, the ring's bit planes both as stored and decoded per slot (..., 30), and the packed
        friendly bullets' and divers' fields per record (..., 2) (`maxatar.games.seaquest.layout`)."""
        g = jax.tree.map(np.asarray, game)
        values = {}
        for field in dataclasses.fields(g):
            value = getattr(g, field.name)
            if isinstance(value, tuple):
                values[f"{field.name} planes"] = np.stack(value, axis=-1)  # (..., planes)
                values[field.name] = slot_values(value)
            else:
                values[field.name] = value
        values["f_bullets y"] = record_fields(g.f_bullets, BULLET_RECORD)["y"]
        divers = record_fields(g.divers, DIVER_RECORD)
        values["divers y"], values["divers move"] = divers["y"], divers["move"]
        return values

    def state_rules(self, state) -> list[str]:
        """Live enemies, enemy bullets, friendly bullets and divers are on the board (divers on rows 1..8); an
        enemy bullet's slot holds a sub; the two-record lists are compacted; oxygen is -1 only once the episode
        ended; the intervals are those of the ramp's level."""
        values = self.state_values(state.game)
        e_alive, b_alive, e_sub = (slot_flags(values[name]) for name in ("e_alive", "b_alive", "e_sub"))
        problems = []
        if np.any(e_alive & ((values["e_x"] < 1) | (values["e_x"] > 10))):
            problems.append("a live enemy (game.e_alive) is off the board (game.e_x)")
        if np.any(b_alive & ((values["b_x"] < 2) | (values["b_x"] > 11))):
            problems.append("a live enemy bullet (game.b_alive) is off the board (game.b_x)")
        if np.any(b_alive & ~e_sub):
            problems.append("an enemy bullet (game.b_alive) belongs to a slot that holds no sub (game.e_sub)")
        for name, layout in (("f_bullets", BULLET_RECORD), ("divers", DIVER_RECORD)):
            records = record_fields(values[name], layout)
            alive = records["alive"] == 1  # (..., 2)
            if np.any(alive[..., 1] & ~alive[..., 0]):
                problems.append(f"game.{name} is not compacted (record 1 live, record 0 not)")
            if np.any(alive & (records["x"] > 9)):
                problems.append(f"a live record of game.{name} is off the board (x above 9)")
            if name == "divers" and np.any(alive & (records["y"] == 0)):
                problems.append("a live diver (game.divers) is on row 0")
        if np.any((values["oxygen"] < 0) & ~np.asarray(state.terminated)):
            problems.append("game.oxygen is -1 in an episode that has not ended")
        level = values["ramp_index"].astype(np.int32)
        move = INIT_MOVE_SPEED - np.minimum(level // 2, INIT_MOVE_SPEED - MIN_MOVE_SPEED)
        if np.any((values["e_spawn_speed"] != INIT_SPAWN_SPEED - level) | (values["move_speed"] != move)):
            problems.append("game.e_spawn_speed and game.move_speed are not those of ramp level game.ramp_index")
        return problems

    def init(self, draws: tuple, params: EnvParams) -> SeaquestState:
        """The sub on the surface, full oxygen, nothing else on the board (a reset draws nothing)."""
        i8 = jnp.int8
        return SeaquestState(
            sub_x=i8(5),
            sub_y=i8(0),
            sub_or=jnp.bool_(False),
            oxygen=jnp.int16(MAX_OXYGEN),
            diver_count=jnp.int32(0),
            shot_timer=i8(0),
            e_spawn_speed=i8(INIT_SPAWN_SPEED),
            e_spawn_timer=i8(INIT_SPAWN_SPEED),
            d_spawn_timer=i8(DIVER_SPAWN_SPEED),
            move_speed=i8(INIT_MOVE_SPEED),
            ramp_index=i8(0),
            surface=jnp.bool_(True),
            e_alive=jnp.uint32(0),
            e_sub=jnp.uint32(0),
            e_lr=jnp.uint32(0),
            e_x=_zeros(X_PLANES),
            e_y=_zeros(Y_PLANES),
            e_move=_zeros(MOVE_PLANES),
            e_shot=_zeros(SHOT_PLANES),
            e_next=i8(0),
            b_alive=jnp.uint32(0),
            b_x=_zeros(BULLET_X_PLANES),
            f_bullets=jnp.int32(0),
            divers=jnp.int32(0),
            overflow=jnp.bool_(False),
        )

    def at_difficulty(self, game: SeaquestState, level: jax.Array) -> SeaquestState:
        """The start at ramp level `level` (what `level` surfacings ramp): the enemy spawn interval drops every
        ramp, the move interval at every odd-indexed one down to 2; the spawn timer is loaded with the interval,
        as a reset loads the initial one."""
        spawn = (INIT_SPAWN_SPEED - level).astype(jnp.int8)
        move = (INIT_MOVE_SPEED - jnp.minimum(level // 2, INIT_MOVE_SPEED - MIN_MOVE_SPEED)).astype(jnp.int8)
        return dataclasses.replace(
            game, e_spawn_speed=spawn, e_spawn_timer=spawn, move_speed=move, ramp_index=level.astype(jnp.int8)
        )

    def step_draws(self, uniforms: jax.Array, game: SeaquestState, params: EnvParams) -> SeaquestDraws:
        """The enemy's and the diver's spawn variates, drawn every step whether or not a spawn is due."""
        return SeaquestDraws(
            e_lr=uniforms[0],
            e_sub=uniforms[1],
            e_row=uniform_to_int(uniforms[2], 1, 9),
            d_lr=uniforms[3],
            d_row=uniform_to_int(uniforms[4], 1, 9),
        )

    def game_step(self, game: SeaquestState, action: jax.Array, draws: SeaquestDraws, params: EnvParams):
        """The reference's step order, one phase per function below."""
        turn = _Turn(
            game=game,
            bullets=_unpack(game.f_bullets, BULLET_RECORD),
            divers=_unpack(game.divers, DIVER_RECORD),
            reward=jnp.int32(0),
            terminal=jnp.bool_(False),
        )
        turn = _spawn_enemy(turn, draws)
        turn = _spawn_diver(turn, draws)
        turn = _act(turn, action)
        turn = _move_friendly_bullets(turn)
        turn = _move_divers(turn)
        turn = _move_enemy_subs(turn)
        turn = _move_enemy_bullets(turn)
        turn = _move_fish(turn)
        turn = _timers_oxygen_surfacing(turn, params)
        next_game = dataclasses.replace(
            turn.game,
            sub_x=turn.game.sub_x.astype(jnp.int8),
            sub_y=turn.game.sub_y.astype(jnp.int8),
            f_bullets=_pack(_compact(turn.bullets), BULLET_RECORD),
            divers=_pack(_compact(turn.divers), DIVER_RECORD),
        )
        return next_game, turn.reward.astype(jnp.float32), materialize(turn.terminal)

    def game_observation(self, game: SeaquestState) -> jax.Array:
        """Channels: 0 sub front, 1 sub back, 2 friendly bullet, 3 trail, 4 enemy bullet, 5 fish, 6 enemy sub,
        7 oxygen gauge, 8 diver gauge, 9 diver.

        Each channel is first a (column,) vector of row masks: bit r of `cells[c, ch]` is cell (r, c, ch). The
        enemy channels get theirs from the ring's slot masks (bit r is on iff the column's slots and row r's
        slots intersect), the others from their few entities. The masks are then expanded into the 1000 bools
        with one AND per bool against a per-row constant, reading the masks as bytes along the contiguous
        (column, channel) axis: a form of this expansion that XLA's CPU backend vectorizes (an outer
        product of (row, channel) and (column, channel) masks compiles to a scalar loop)."""
        g = game
        u16 = jnp.uint16
        on_rows = [_equals(g.e_y, r - 1) for r in range(1, 9)]  # slot masks of rows 1..8 (8 scalars)
        enemy_rows = [m & g.e_alive for m in on_rows]
        enemy_cols = _equals(g.e_x, COLS + 1)  # (10,) slot masks
        trail_cols = (_equals(g.e_x, COLS + 2) & g.e_lr) | (_equals(g.e_x, COLS) & ~g.e_lr)

        def enemy_cells(cols, rows):
            """(10,) row masks of the cells where a slot in `cols[c]` is also in `rows[r - 1]`."""
            out = jnp.zeros(10, u16)
            for r, row in enumerate(rows, start=1):
                out = out | jnp.where((cols & row) != 0, u16(1 << r), u16(0))
            return out

        def entity_cells(cells, alive, x, y):
            """`cells` with the cell of one entity (if alive and on the board) added."""
            return cells | jnp.where(alive & (x == COLS), jnp.left_shift(u16(1), y.astype(u16)), u16(0))

        divers = _unpack(g.divers, DIVER_RECORD)
        bullets = _unpack(g.f_bullets, BULLET_RECORD)
        no_cells = jnp.zeros(10, u16)
        sub_row = jnp.left_shift(u16(1), g.sub_y.astype(u16))
        back_x = jnp.where(g.sub_or, g.sub_x - 1, g.sub_x + 1)
        bullet_cells, diver_cells, trail = no_cells, no_cells, enemy_cells(trail_cols, enemy_rows)
        for b in bullets:
            bullet_cells = entity_cells(bullet_cells, b["alive"], b["x"], b["y"])
        for d in divers:
            diver_cells = entity_cells(diver_cells, d["alive"], d["x"], d["y"])
            trail = entity_cells(trail, d["alive"], d["x"] - jnp.where(d["lr"], 1, -1), d["y"])
        bottom = u16(1 << 9)
        n_oxygen = jnp.maximum(g.oxygen, 0).astype(jnp.int32) * 10 // MAX_OXYGEN
        k = jnp.clip(g.diver_count, 0, 9)
        cells = jnp.stack(
            [
                jnp.where(COLS == g.sub_x, sub_row, u16(0)),
                jnp.where(COLS == back_x, sub_row, u16(0)),
                bullet_cells,
                trail,
                enemy_cells(_equals(g.b_x, COLS + 2) & g.b_alive, on_rows),
                enemy_cells(enemy_cols & ~g.e_sub, enemy_rows),
                enemy_cells(enemy_cols & g.e_sub, enemy_rows),
                jnp.where(COLS < n_oxygen, bottom, u16(0)),
                jnp.where((COLS >= 9 - k) & (COLS < 9), bottom, u16(0)),
                diver_cells,
            ],
            axis=-1,
        ).reshape(100)  # (column, channel) -> row mask
        # Rows 0-7 and 8-9 as bytes, computed once (XLA would otherwise recompute them for every bool).
        low_high = materialize(jnp.stack([cells, cells >> 8]).astype(jnp.uint8))
        low = (low_high[0][None, :] & ROW_BITS[:8, None]) != 0
        high = (low_high[1][None, :] & ROW_BITS[:2, None]) != 0
        return jnp.concatenate([low, high]).reshape(10, 10, 10)
