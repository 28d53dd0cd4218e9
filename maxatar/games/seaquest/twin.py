"""Seaquest's twin (see `maxatar.games.seaquest.rules` for the rules, the reference quirks and the JAX storage).

The JAX state is bit-sliced (`layout.py`): a ring of 30 enemy slots (one uint32 per flag, one per bit of each
small field), each slot owning one enemy-bullet slot, and two packed 2-record lists for friendly bullets and
divers; `to_pure` and `from_pure` convert through the layout's encoder and decoder. The step is the JAX step's
phases, with the same names in the same order (the enemies' walk is shared by subs and fish likewise). The twin
keeps one mutable `_Slot` object per ring slot, plus the live ones in lists (enemies oldest first, live enemy
bullets), so a step only walks the live entities, and `to_pure` packs the 30 slots back into the same bits. A
dead slot keeps whatever the JAX step leaves in it: its enemy's last fields (an enemy that moved off the board
keeps x = -1 or 10), its bullet's last x, and a shot timer that keeps counting while the slot's bullet flies.
A spawn rewrites every enemy field of its slot but not the bullet's x. The two-record lists keep their dead
records too: the JAX step moves a friendly bullet record every step, dead or alive (x wraps in its 4 bits),
and compaction copies record 1 into record 0, leaving record 1's fields behind, dead.
"""

from __future__ import annotations

import numpy as np

from maxatar.games.seaquest.layout import (
    BULLET_RECORD,
    BULLET_X_PLANES,
    DIVER_RECORD,
    MOVE_PLANES,
    NUM_ENEMY_SLOTS,
    SHOT_PLANES,
    X_PLANES,
    Y_PLANES,
    pack_records,
    record_fields,
    slot_flags,
    slot_mask,
    slot_planes,
    slot_values,
)
from maxatar.games.seaquest.rules import (
    DIVER_MOVE_INTERVAL,
    DIVER_SPAWN_SPEED,
    ENEMY_SHOT_INTERVAL,
    INIT_MOVE_SPEED,
    INIT_SPAWN_SPEED,
    MAX_OXYGEN,
    MIN_MOVE_SPEED,
    SHOT_COOL_DOWN,
    SUB_THRESHOLD,
    SeaquestState,
)
from maxatar.twin import Twin, randint

_SUB = float(SUB_THRESHOLD)  # float32(1/3) as a Python float: `u < _SUB` is the JAX step's float32 comparison
_SHAPE = (10, 10, 10)


class _Slot:
    """One enemy ring slot and its enemy-bullet slot. x is the board column (-1 or 10 once moved off), y the row
    (1..8), `move` and `shot` the move and shot timers; `firing`: the slot's enemy bullet is alive, at column
    `bx` in row y, moving the way `lr` says."""

    __slots__ = ("index", "alive", "sub", "lr", "x", "y", "move", "shot", "firing", "bx")

    def __init__(self, index):
        # the JAX ring starts with every plane zero: x + 1 = 0, y - 1 = 0, bullet x + 2 = 0
        self.index, self.alive, self.sub, self.lr = index, False, False, False
        self.x, self.y, self.move, self.shot, self.firing, self.bx = -1, 1, 0, 0, False, -2


# SeaquestState's scalar fields before the enemy ring, which `_Game` keeps as Python ints and bools
SCALARS = (
    "sub_x",
    "sub_y",
    "sub_or",
    "oxygen",
    "diver_count",
    "shot_timer",
    "e_spawn_speed",
    "e_spawn_timer",
    "d_spawn_timer",
    "move_speed",
    "ramp_index",
    "surface",
)


class _Game:
    """A Seaquest state. The scalars are SeaquestState's. `slots`: the 30 ring slots (`_Slot`, or None while no
    enemy has used it); `enemies`: the live ones in spawn order, oldest first; `shots`: the slots whose enemy
    bullet is alive (any order).
    `bullets`: two friendly bullet records [alive, right, x, y]; `divers`: two diver records
    [alive, lr, x, y, move timer]; record 0 is the older, x is stored as in its 4 bits (0..15).
    `reward` and `terminal`: what the step in progress has earned and ended so far (as the JAX step's `_Turn`)."""

    __slots__ = (*SCALARS, "e_next", "overflow", "slots", "enemies", "shots", "bullets", "divers", "reward", "terminal")


def _records(word, layout) -> list[list]:
    """The two records of a packed word as the twin keeps them: [alive, direction, x, y(, move timer)]."""
    records = np.stack(list(record_fields(word, layout).values()), axis=-1).tolist()
    for record in records:
        record[0], record[1] = record[0] == 1, record[1] == 1  # alive and the direction are flags
    return records


def _push(records, new) -> bool:
    """Put `new` into the first free of two records (record 0 the older); True if both are taken (overflow),
    as the JAX step's `_push`."""
    if not records[0][0]:
        records[0] = new
    elif not records[1][0]:
        records[1] = new
    else:
        return True
    return False


# --- one step, phase by phase with the JAX step's phase names (`rules.py`), each mutating the game in place and
# adding to its `reward` and `terminal` ---------------------------------------------------------------------


def _spawn_enemy(g, uniforms) -> None:
    """The spawn timer being due, a fish or sub enters, unless a live enemy moving the other way holds its row."""
    g.e_spawn_timer = g.e_spawn_speed
    lr = uniforms[0] < 0.5
    row = randint(uniforms[2], 1, 9)
    for e in g.enemies:
        if e.y == row and e.lr != lr:
            return
    s = g.slots[g.e_next]
    if s is None:
        s = g.slots[g.e_next] = _Slot(g.e_next)
    if s.alive or s.firing:  # never in reachable play: the slot is kept, the flag set
        g.overflow = True
        return
    s.alive, s.sub, s.lr, s.x, s.y = True, uniforms[1] < _SUB, lr, 0 if lr else 9, row
    s.move, s.shot = g.move_speed, ENEMY_SHOT_INTERVAL
    g.enemies.append(s)
    g.e_next = 0 if g.e_next == NUM_ENEMY_SLOTS - 1 else g.e_next + 1


def _spawn_diver(g, uniforms) -> None:
    """The diver timer being due, a diver enters from its side, into the first free record."""
    g.d_spawn_timer = DIVER_SPAWN_SPEED
    lr = uniforms[3] < 0.5
    if _push(g.divers, [True, lr, 0 if lr else 9, randint(uniforms[4], 1, 9), DIVER_MOVE_INTERVAL]):
        g.overflow = True


def _act(g, action) -> None:
    """The player fires (if the gun is ready) or moves."""
    if action == 5:
        if g.shot_timer == 0:
            g.shot_timer = SHOT_COOL_DOWN
            if _push(g.bullets, [True, g.sub_or, g.sub_x, g.sub_y]):
                g.overflow = True
    elif action == 1:
        g.sub_x -= g.sub_x > 0
        g.sub_or = False
    elif action == 3:
        g.sub_x += g.sub_x < 9
        g.sub_or = True
    elif action == 2:
        g.sub_y -= g.sub_y > 0
    elif action == 4:
        g.sub_y += g.sub_y < 8


def _move_friendly_bullets(g) -> None:
    """Friendly bullets, newest first: every record moves (its x wraps in 4 bits); a live one on the board hits
    the oldest fish on its cell, else the oldest sub."""
    for b in (g.bullets[1], g.bullets[0]):
        x = b[2] + (1 if b[1] else -1)
        b[2] = x & 15
        if b[0]:
            if 0 <= x <= 9:
                y = b[3]
                victim = None
                for e in g.enemies:
                    if e.x == x and e.y == y:
                        if not e.sub:
                            victim = e
                            break
                        if victim is None:
                            victim = e
                if victim is not None:
                    victim.alive = b[0] = False
                    g.enemies.remove(victim)
                    g.reward += 1
            else:
                b[0] = False


def _move_divers(g) -> None:
    """Divers, newest first: picked up where they stand, else on their move (at most six on board the sub)."""
    count, sub_x, sub_y = g.diver_count, g.sub_x, g.sub_y
    for d in (g.divers[1], g.divers[0]):
        if d[0]:
            on_row = d[3] == sub_y
            if on_row and d[2] == sub_x and count < 6:
                d[0] = False
                count += 1
            elif d[4] == 0:
                x = d[2] + (1 if d[1] else -1)
                d[2], d[4] = x & 15, DIVER_MOVE_INTERVAL
                if not 0 <= x <= 9:
                    d[0] = False
                elif on_row and x == sub_x and count < 6:
                    d[0] = False
                    count += 1
            else:
                d[4] -= 1
    g.diver_count = count


def _move_enemies(g, movers) -> None:
    """The enemies in `movers` (the live fish or subs, oldest first) touch the sub, move when due, leave the
    board, or meet a friendly bullet: each mover, newest first, takes the oldest live friendly bullet on its
    cell."""
    sub_x, sub_y, move_speed = g.sub_x, g.sub_y, g.move_speed
    dead, moved = False, []
    for e in movers:
        x = e.x
        if x == sub_x and e.y == sub_y:  # on the sub before its move
            g.terminal = True
        if e.move == 0:
            x = e.x = x + 1 if e.lr else x - 1
            e.move = move_speed
            if not 0 <= x <= 9:
                e.alive = False
                dead = True
            elif x == sub_x and e.y == sub_y:  # onto the sub: it stays, the game ends
                g.terminal = True
            else:
                moved.append(e)
        else:
            e.move -= 1
    b0, b1 = g.bullets
    if moved and (b0[0] or b1[0]):
        k0 = k1 = None
        for e in reversed(moved):
            if b0[0] and k0 is None and e.x == b0[2] and e.y == b0[3]:
                k0 = e
            elif b1[0] and k1 is None and e.x == b1[2] and e.y == b1[3]:
                k1 = e
        for k, b in ((k0, b0), (k1, b1)):
            if k is not None:
                k.alive = b[0] = False
                dead = True
                g.reward += 1
    if dead:
        g.enemies = [e for e in g.enemies if e.alive]


def _move_enemy_subs(g) -> None:
    """Enemy subs move, then fire when their shot timer is due, even a sub that just left the board or was shot;
    the timer of a gone sub keeps counting while its bullet flies (the JAX state's bullet age, wrapping in its
    4 bits)."""
    for s in g.shots:
        if not (s.alive and s.sub):
            s.shot = (s.shot - 1) & 15
    subs = [e for e in g.enemies if e.sub]
    _move_enemies(g, subs)
    for e in subs:  # from where it now is
        if e.shot == 0:
            e.shot, e.bx = ENEMY_SHOT_INTERVAL, e.x
            if e.firing:  # never in reachable play: the bullet is moved back to its sub
                g.overflow = True
            else:
                e.firing = True
                g.shots.append(e)
        else:
            e.shot -= 1


def _move_enemy_bullets(g) -> None:
    """Enemy bullets (those just fired included) hit the sub before or after their move, or leave the board."""
    flying = []
    for s in g.shots:
        x = s.bx
        hit_row = s.y == g.sub_y
        if hit_row and x == g.sub_x:
            g.terminal = True
        x = s.bx = x + 1 if s.lr else x - 1
        if 0 <= x <= 9:
            flying.append(s)
            if hit_row and x == g.sub_x:
                g.terminal = True
        else:
            s.firing = False
    g.shots = flying


def _move_fish(g) -> None:
    """Fish move as subs do, without firing."""
    _move_enemies(g, [e for e in g.enemies if not e.sub])


def _timers_oxygen_surfacing(g, ramping: bool) -> None:
    """Timers count down; oxygen is checked, then drains underwater; arriving at the surface with divers costs
    one (all six pay the oxygen bonus), refills oxygen and ramps the difficulty; with none it ends the game."""
    if g.e_spawn_timer > 0:
        g.e_spawn_timer -= 1
    if g.d_spawn_timer > 0:
        g.d_spawn_timer -= 1
    if g.shot_timer > 0:
        g.shot_timer -= 1
    if g.oxygen <= 0:
        g.terminal = True
    if g.sub_y > 0:
        g.oxygen -= 1
        g.surface = False
    elif not g.surface:  # arriving at the surface
        if g.diver_count == 0:
            g.terminal = True
        else:
            if g.diver_count == 6:
                g.reward += g.oxygen * 10 // MAX_OXYGEN
                g.diver_count = 0
            g.diver_count -= 1
            g.oxygen = MAX_OXYGEN
            g.surface = True
            if ramping and (g.e_spawn_speed > 1 or g.move_speed > 2):
                if g.move_speed > 2 and g.ramp_index % 2 == 1:
                    g.move_speed -= 1
                if g.e_spawn_speed > 1:
                    g.e_spawn_speed -= 1
                g.ramp_index += 1


def _compact(g) -> None:
    """In both two-record lists, record 1 moves to a dead record 0, leaving its fields behind, dead."""
    for records in (g.bullets, g.divers):
        if not records[0][0] and records[1][0]:
            records[0] = records[1][:]
            records[1][0] = False


class SeaquestTwin(Twin):
    """State: a `_Game` (scalars, the 30 enemy slots as `_Slot` objects or None, the live enemies oldest first,
    the live enemy bullets, the two friendly bullet and two diver records). `step` mutates it in place."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self.ramping = bool(params.difficulty_ramping)
        self._gauges: dict[tuple[int, int], bytes] = {}  # (oxygen cells, diver cells) -> row 9 of the observation

    def reset(self, uniforms):
        """The start state (Seaquest's reset draws nothing)."""
        g = _Game()
        g.sub_x, g.sub_y, g.sub_or, g.oxygen, g.diver_count, g.shot_timer = 5, 0, False, MAX_OXYGEN, 0, 0
        g.e_spawn_speed, g.e_spawn_timer, g.d_spawn_timer = INIT_SPAWN_SPEED, INIT_SPAWN_SPEED, DIVER_SPAWN_SPEED
        g.move_speed, g.ramp_index, g.surface, g.e_next, g.overflow = INIT_MOVE_SPEED, 0, True, 0, False
        g.slots = [None] * NUM_ENEMY_SLOTS  # a slot is made when an enemy first spawns into it: resets stay cheap
        g.enemies, g.shots = [], []
        g.bullets = [[False, False, 0, 0], [False, False, 0, 0]]
        g.divers = [[False, False, 0, 0, 0], [False, False, 0, 0, 0]]
        return g

    def step(self, g, action, uniforms):
        """One step, phase by phase as `Seaquest.game_step` (the reference's order and phase names). A phase is
        called only when it has work: a step moves few entities, so calls would be much of its cost."""
        g.reward, g.terminal = 0, False
        if g.e_spawn_timer == 0:
            _spawn_enemy(g, uniforms)
        if g.d_spawn_timer == 0:
            _spawn_diver(g, uniforms)
        _act(g, action)
        _move_friendly_bullets(g)
        if g.divers[0][0] or g.divers[1][0]:
            _move_divers(g)
        if g.enemies or g.shots:
            _move_enemy_subs(g)
        if g.shots:
            _move_enemy_bullets(g)
        if g.enemies:
            _move_fish(g)
        _timers_oxygen_surfacing(g, self.ramping)
        _compact(g)
        return g, float(g.reward), g.terminal

    def observation(self, g):
        """A fresh (10, 10, 10) bool array over a bytearray: cell (y, x) of channel c is byte 100 y + 10 x + c."""
        cells = bytearray(1000)
        x, i = g.sub_x, 100 * g.sub_y + 10 * g.sub_x
        cells[i] = 1  # 0: the sub's front
        if g.sub_or:  # 1: its back (not drawn off the board)
            if x > 0:
                cells[i - 9] = 1
        elif x < 9:
            cells[i + 11] = 1
        for b in g.bullets:
            if b[0]:
                cells[100 * b[3] + 10 * b[2] + 2] = 1  # 2: friendly bullet
        for e in g.enemies:
            x, i = e.x, 100 * e.y + 10 * e.x
            cells[i + 5 + e.sub] = 1  # 5: fish, 6: enemy sub
            if e.lr:  # 3: trail, the cell it came from
                if x > 0:
                    cells[i - 7] = 1
            elif x < 9:
                cells[i + 13] = 1
        for s in g.shots:
            cells[100 * s.y + 10 * s.bx + 4] = 1  # 4: enemy bullet
        for d in g.divers:
            if d[0]:
                x, i = d[2], 100 * d[3] + 10 * d[2]
                cells[i + 9] = 1  # 9: diver, and its trail
                if d[1]:
                    if x > 0:
                        cells[i - 7] = 1
                elif x < 9:
                    cells[i + 13] = 1
        # row 9: the oxygen gauge (7) and the diver gauge (8), from a cache of the few distinct rows
        key = max(g.oxygen, 0) * 10 // MAX_OXYGEN, min(max(g.diver_count, 0), 9)
        gauges = self._gauges.get(key)
        if gauges is None:
            gauges = self._gauges[key] = self._gauge_row(*key)
        cells[900:] = gauges
        return np.ndarray(_SHAPE, np.bool_, cells)

    @staticmethod
    def _gauge_row(oxygen, divers):
        """Row 9 of the observation: oxygen gauge columns < `oxygen`, diver gauge columns 9 - `divers` .. 8."""
        row = bytearray(100)
        for c in range(oxygen):
            row[10 * c + 7] = 1
        for c in range(9 - divers, 9):
            row[10 * c + 8] = 1
        return bytes(row)

    def to_pure(self, g):
        """The JAX `SeaquestState`: the slots bit-sliced into their planes, the records packed."""
        slots = [_Slot(i) if s is None else s for i, s in enumerate(g.slots)]
        i8 = np.int8
        return SeaquestState(
            sub_x=i8(g.sub_x),
            sub_y=i8(g.sub_y),
            sub_or=np.bool_(g.sub_or),
            oxygen=np.int16(g.oxygen),
            diver_count=np.int32(g.diver_count),
            shot_timer=i8(g.shot_timer),
            e_spawn_speed=i8(g.e_spawn_speed),
            e_spawn_timer=i8(g.e_spawn_timer),
            d_spawn_timer=i8(g.d_spawn_timer),
            move_speed=i8(g.move_speed),
            ramp_index=i8(g.ramp_index),
            surface=np.bool_(g.surface),
            e_alive=slot_mask([s.alive for s in slots]),
            e_sub=slot_mask([s.sub for s in slots]),
            e_lr=slot_mask([s.lr for s in slots]),
            e_x=slot_planes([(s.x + 1) & 15 for s in slots], X_PLANES),
            e_y=slot_planes([s.y - 1 for s in slots], Y_PLANES),
            e_move=slot_planes([s.move for s in slots], MOVE_PLANES),
            e_shot=slot_planes([s.shot for s in slots], SHOT_PLANES),
            e_next=i8(g.e_next),
            b_alive=slot_mask([s.firing for s in slots]),
            b_x=slot_planes([(s.bx + 2) & 15 for s in slots], BULLET_X_PLANES),
            f_bullets=pack_records(g.bullets, BULLET_RECORD),
            divers=pack_records(g.divers, DIVER_RECORD),
            overflow=np.bool_(g.overflow),
        )

    def from_pure(self, state):
        """The twin state of a JAX `SeaquestState` (the inverse of `to_pure`)."""
        g = _Game()
        for name in SCALARS:
            setattr(g, name, bool(getattr(state, name)) if name in ("sub_or", "surface") else int(getattr(state, name)))
        g.e_next, g.overflow = int(state.e_next), bool(state.overflow)
        fields = {
            "alive": slot_flags(state.e_alive),
            "sub": slot_flags(state.e_sub),
            "lr": slot_flags(state.e_lr),
            "x": slot_values(state.e_x) - 1,
            "y": slot_values(state.e_y) + 1,
            "move": slot_values(state.e_move),
            "shot": slot_values(state.e_shot),
            "firing": slot_flags(state.b_alive),
            "bx": slot_values(state.b_x) - 2,
        }
        g.slots = [_Slot(i) for i in range(NUM_ENEMY_SLOTS)]
        for name, values in fields.items():
            for s, v in zip(g.slots, values.tolist(), strict=True):  # Python ints and bools
                setattr(s, name, v)
        order = sorted(g.slots, key=lambda s: (s.index - g.e_next) % NUM_ENEMY_SLOTS)  # spawn order
        g.enemies = [s for s in order if s.alive]
        g.shots = [s for s in g.slots if s.firing]
        g.bullets = _records(state.f_bullets, BULLET_RECORD)
        g.divers = _records(state.divers, DIVER_RECORD)
        return g

    def at_difficulty(self, g, level):
        """`Seaquest.at_difficulty`: the level's spawn and move intervals, the spawn timer loaded with the former."""
        g.e_spawn_speed = g.e_spawn_timer = INIT_SPAWN_SPEED - level
        g.move_speed = INIT_MOVE_SPEED - min(level // 2, INIT_MOVE_SPEED - MIN_MOVE_SPEED)
        g.ramp_index = level
        return g
