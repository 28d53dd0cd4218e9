"""Seaquest parity with minatar 1.0.15, step by step.

The shared harness (`tests/parity/harness.py`) plays the reference with a scripted RandomState, replays its
logged draws through `Seaquest.transition` and compares, after every step, the observation, reward, terminal
flag, last executed action and the game's whole internal state: this file's adapter gives the scalars and the
five entity lists in the reference's order (the JAX slots are turned back into ordered lists by the twin's
converter, `SeaquestTwin.from_pure`, which also builds the crafted starts with `to_pure`), and asserts
that the port's fixed buffers never overflow. Draws the reference did not make are filled with random values,
so every comparison also proves the game ignores them, and the log proves when the reference draws.

Long episodes use a policy that reads the reference's state: it dives for divers, surfaces with six (the
diver counter becomes -1), then bobs between the surface and row 1 so that every surfacing ramps the
difficulty, until enemies spawn every step with move interval 2, for thousands of steps.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import minatar
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from maxatar.core import Draws, EnvParams, EnvState
from maxatar.games.seaquest.layout import BULLET_RECORD, DIVER_RECORD, NUM_ENEMY_SLOTS, record_fields, slot_flags
from maxatar.games.seaquest.rules import SUB_THRESHOLD, Seaquest, SeaquestDraws
from maxatar.games.seaquest.twin import (
    SCALARS,  # the state's scalar fields, named once
    SeaquestTwin,
)
from tests.parity import harness
from tests.parity.harness import CHUNK, PROBS, SMALL_PROBS, from_list
from tests.parity.scripted_random import UNIFORM32, ScriptedRandom, SeededSource, attach
from tests.tiers import examples

ENV = Seaquest()
LONG = 3000  # steps of the long late-game episodes
LISTS = ("f_bullets", "e_bullets", "e_fish", "e_subs", "divers")
NOOP, LEFT, UP, RIGHT, DOWN, FIRE = range(6)


# --- JAX side -----------------------------------------------------------------------------------------------
# The JAX state's storage (bit-sliced ring, packed records) is read and written only through the twin's
# converters: `TWIN.from_pure` gives the ring slots, the live enemies in spawn order, the live enemy bullets and
# the two friendly bullet and diver records; `TWIN.to_pure` packs them back.


def make_params(p: float, ramping: bool) -> EnvParams:
    return EnvParams(sticky_action_prob=jnp.float32(p), difficulty_ramping=jnp.bool_(ramping), max_steps=jnp.int32(0))


TWIN = SeaquestTwin(ENV, make_params(0.0, True))  # for its converters only


def twin_rows(game) -> list:
    """The twin game of every row of numpy JAX game states with a leading time axis."""
    leaves, tree = jax.tree.flatten(game)
    return [TWIN.from_pure(tree.unflatten([leaf[t] for leaf in leaves])) for t in range(len(leaves[0]))]


def twin_lists(g) -> tuple:
    """The reference's five lists (`LISTS` order) from a twin game (`TWIN.from_pure` of a JAX state)."""
    fish = tuple((e.x, e.y, int(e.lr), e.move) for e in g.enemies if not e.sub)
    subs = tuple((e.x, e.y, int(e.lr), e.move, e.shot) for e in g.enemies if e.sub)
    # older bullets first (their sub's shot timer counts 10 down from the shot), then the newer sub's first
    fired = sorted(g.shots, key=lambda s: (s.shot, -((s.index - g.e_next) % NUM_ENEMY_SLOTS)))
    bullets = tuple((s.bx, s.y, int(s.lr)) for s in fired)
    friendly = tuple((x, y, int(right)) for alive, right, x, y in g.bullets if alive)
    divers = tuple((x, y, int(lr), move) for alive, lr, x, y, move in g.divers if alive)
    return friendly, bullets, fish, subs, divers


def _compacted(g) -> bool:
    """The two-record lists are compacted: the first record is alive whenever the second is."""
    return all(records[0][0] or not records[1][0] for records in (g.bullets, g.divers))


# --- reference side -----------------------------------------------------------------------------------------


def as_tuples(items) -> tuple:
    """A list of entities as the adapter compares them: a tuple of int tuples."""
    return tuple(tuple(int(v) for v in item) for item in items)


def state_from_start(start: dict | None) -> EnvState:
    """The JAX state of a crafted start: subs then fish in ring slots 0.., then one gone sub's slot per enemy
    bullet (its row, direction, and shot timer 10 - age for the list order), the next spawn after them."""
    game = ENV.init((), None)
    if start is not None:
        g = TWIN.from_pure(jax.device_get(game))  # the empty ring, every slot as an object
        for name in SCALARS:
            setattr(g, name, start[name])
        for s in g.slots:
            s.x = 0  # free slots hold x 0 (a spawn rewrites it)
        slots = iter(g.slots)
        for kind, items in ((True, start["e_subs"]), (False, start["e_fish"])):
            for item in items:
                s = next(slots)
                s.alive, s.sub = True, kind
                s.x, s.y, s.lr, s.move = item[:4]
                s.shot = item[4] if kind else 0
        bullets = start["e_bullets"]
        for j, (x, y, lr) in enumerate(bullets):
            # shot timers 10 - age, older first, and no lower than the steps the bullet has left to fly
            age = len(bullets) - 1 - j
            assert (10 - x if lr else x + 1) <= 10 - age, "crafted enemy bullet flies longer than its age allows"
            s = next(slots)
            s.y, s.lr, s.shot, s.firing, s.bx = y, lr, 10 - age, True, x
        g.e_next = len(start["e_subs"]) + len(start["e_fish"]) + len(bullets)
        assert g.e_next < NUM_ENEMY_SLOTS

        def records(items, record, dead):
            return [record(*item) for item in items] + [dead[:] for _ in range(2 - len(items))]

        g.bullets = records(start["f_bullets"], lambda x, y, d: [True, d, x, y], [False, False, 0, 0])
        g.divers = records(start["divers"], lambda x, y, lr, m: [True, lr, x, y, m], [False, False, 0, 0, 0])
        game = TWIN.to_pure(g)
        # read back through the converter: every value fits its bits
        assert twin_lists(TWIN.from_pure(game)) == tuple(as_tuples(start[name]) for name in LISTS), (
            "crafted start does not fit the JAX state"
        )
    return EnvState(game=game, last_action=jnp.int32(0), time=jnp.int32(0), terminated=jnp.bool_(False))


# --- the bridge: logged calls -> Draws ----------------------------------------------------------------------

ENEMY_CALLS = [("rand", ()), ("rand", ()), ("randint", (1, 9, None))]
DIVER_CALLS = [("rand", ()), ("randint", (1, 9, None))]


class SeaquestParity(harness.GameAdapter):
    """The scalars and the five entity lists in the reference's order; the port's fixed buffers never overflow."""

    env = ENV
    _rows: tuple | None = None  # (states, their twin games) of the last replay

    def port_start(self, start):
        return state_from_start(start)

    def snapshot(self, game) -> dict:
        scalars = {name: int(getattr(game, name)) for name in SCALARS}
        return scalars | {name: as_tuples(getattr(game, name)) for name in LISTS}

    def port_fields(self, state: EnvState) -> dict:
        return {name: getattr(state.game, name) for name in SCALARS}

    def port_records(self, states: EnvState) -> dict:
        """The slots turned back into the reference's five ordered lists, row by row."""
        rows = [twin_lists(g) for g in self.twin_games(states)]
        return {name: harness.stack_rows([row[i] for row in rows]) for i, name in enumerate(LISTS)}

    def port_faults(self, states: EnvState) -> dict:
        """The fixed buffers never overflow, and the packed two-record lists stay compacted (first record alive
        whenever the second is)."""
        compacted = [_compacted(g) for g in self.twin_games(states)]
        return {"overflow": np.asarray(states.game.overflow), "compaction": ~np.array(compacted)}

    def twin_games(self, states: EnvState) -> list:
        """`twin_rows` of the states' games, kept for the last `states` (read by both hooks above)."""
        if self._rows is None or self._rows[0] is not states:
            self._rows = states, twin_rows(states.game)
        return self._rows[1]

    def apply_start(self, ref, start: dict) -> None:
        """Put a crafted state into the reference game."""
        game = ref.env
        for name in SCALARS:
            value = start[name]
            setattr(game, name, bool(value) if name in ("sub_or", "surface") else int(value))
        for name in LISTS:
            setattr(game, name, [[int(v) if i != 2 else bool(v) for i, v in enumerate(item)] for item in start[name]])

    def game_draws(self, logs, rng, length) -> SeaquestDraws:
        """The spawn calls as draws; what the reference did not draw is filled at random."""
        e_lr, e_sub, d_lr = rng.random((3, length), np.float32)
        e_row, d_row = rng.integers(1, 9, (2, length)).astype(np.int32)
        for t, calls in enumerate(logs):
            rest = calls
            if [(c.method, c.args) for c in rest[:3]] == ENEMY_CALLS:
                e_lr[t], e_sub[t], e_row[t] = rest[0].value, rest[1].value, rest[2].value
                rest = rest[3:]
            if rest:
                d_lr[t], d_row[t] = rest[0].value, rest[1].value
        return SeaquestDraws(e_lr=e_lr, e_sub=e_sub, e_row=e_row, d_lr=d_lr, d_row=d_row)

    def step_calls(self, pre: EnvState, episode) -> list:
        """Besides the sticky uniform: the three enemy variates iff the game is live and e_spawn_timer is 0; the two
        diver variates iff also d_spawn_timer is 0 (always all of them, even when the enemy's row turns out to be
        blocked)."""
        live = ~pre.terminated
        enemy = live & (pre.game.e_spawn_timer == 0)
        diver = live & (pre.game.d_spawn_timer == 0)
        return [ENEMY_CALLS * bool(enemy[t]) + DIVER_CALLS * bool(diver[t]) for t in range(episode.n)]


SEAQUEST = SeaquestParity()


# play(source, p, ramping, policy, n_steps, start=None): until 2 steps past termination at the most
play = functools.partial(harness.play, SEAQUEST, after_terminal=2)
run_parity = functools.partial(harness.check_parity, SEAQUEST)


# --- policies -----------------------------------------------------------------------------------------------

MOVES = {NOOP: (0, 0), LEFT: (-1, 0), UP: (0, -1), RIGHT: (1, 0), DOWN: (0, 1), FIRE: (0, 0)}


def scripted(actions):
    return from_list(actions)


def _moved(x, y, a):
    dx, dy = MOVES[a]
    return min(max(x + dx, 0), 9), min(max(y + dy, 0), 8)


def danger_map(game, horizon: int) -> np.ndarray:
    """fatal[k, y, x]: ending step k + 1 on (x, y) may be fatal: an enemy or enemy bullet there before or after
    its move in that step (bullets that subs will fire included), or a board edge when an enemy may spawn."""
    fatal = np.zeros((horizon, 10, 10), bool)
    ents = game.e_subs + game.e_fish
    ex, ey, et = (np.array([e[i] for e in ents], np.int64) for i in (0, 1, 3))
    ed = np.array([1 if e[2] else -1 for e in ents], np.int64)
    es = np.array([e[4] for e in game.e_subs] + [-1] * len(game.e_fish), np.int64)
    bx, by = (np.array([b[i] for b in game.e_bullets], np.int64) for i in (0, 1))
    bd = np.array([1 if b[2] else -1 for b in game.e_bullets], np.int64)
    timer = game.e_spawn_timer
    for k in range(horizon):
        f = fatal[k]
        if timer == 0:
            f[1:9, 0] = f[1:9, 9] = True
            timer = game.e_spawn_speed
        timer -= 1
        f[ey, ex] = True
        move = et == 0
        ex, et = ex + np.where(move, ed, 0), np.where(move, game.move_speed, et - 1)
        fire = es == 0
        es = np.where(fire, 10, np.where(es > 0, es - 1, es))
        bx, by, bd = np.concatenate([bx, ex[fire]]), np.concatenate([by, ey[fire]]), np.concatenate([bd, ed[fire]])
        on = (ex >= 0) & (ex <= 9)
        ex, ey, ed, et, es = ex[on], ey[on], ed[on], et[on], es[on]
        f[ey, ex] = True
        on = (bx >= 0) & (bx <= 9)
        f[by[on], bx[on]] = True
        bx = bx + bd
        on = (bx >= 0) & (bx <= 9)
        bx, by, bd = bx[on], by[on], bd[on]
        f[by, bx] = True
    return fatal


def late_game(rng: np.random.Generator, noise: float = 0.0, horizon: int = 5):
    """Read the reference's state: fetch divers (waiting at the surface when none is around, never surfacing
    empty-handed), surface with six or when oxygen runs low, and after the full rescue (diver counter < 0) bob
    between the surface and row 1, where every surfacing ramps the difficulty. Moves are chosen among those
    that stay clear of enemies for `horizon` steps (also if the action is repeated by stickiness); it fires at
    enemies ahead in its row. With probability `noise` a random action instead."""

    def policy(t, game):
        if rng.random() < noise:
            return int(rng.integers(6))
        fatal = danger_map(game, horizon)
        fatal[:, 9, :] = True
        safe = [~fatal[-1]]
        for k in range(horizon - 2, -1, -1):
            nxt = safe[0]
            reach = nxt.copy()
            reach[:, 1:] |= nxt[:, :-1]
            reach[:, :-1] |= nxt[:, 1:]
            reach[1:] |= nxt[:-1]
            reach[:-1] |= nxt[1:]
            safe.insert(0, ~fatal[k] & reach)
        x, y, count = game.sub_x, game.sub_y, game.diver_count
        if count == 6 or (count >= 1 and game.oxygen < 3 * y + 12):
            target = (x, 0)
        elif count < 0:
            target = (x, 1 if y == 0 else 0)
        elif game.divers:
            target = min(((d[0], d[1]) for d in game.divers), key=lambda d: abs(d[0] - x) + abs(d[1] - y))
        elif y == 0:
            target = (x, 0)
        else:
            target = (4 + (t // 40) % 2, 4)

        def allowed(a):
            cx, cy = _moved(x, y, a)
            return safe[0][cy, cx] and not (cy == 0 and y > 0 and count == 0)

        def cost(a):
            cx, cy = _moved(x, y, a)
            return abs(cx - target[0]) + abs(cy - target[1])

        acts = [a for a in range(6) if allowed(a)]
        robust = [a for a in acts if safe[1][_moved(*_moved(x, y, a), a)[::-1]]]
        cands = robust or acts or list(range(6))
        best = min(cost(a) for a in cands)
        cands = [a for a in cands if cost(a) == best]
        if FIRE in cands and game.shot_timer == 0:
            if any(e[1] == y and (e[0] > x) == game.sub_or for e in game.e_subs + game.e_fish):
                return FIRE
        return int(rng.choice([a for a in cands if a != FIRE] or cands))

    return policy


# --- what examples must exercise (checked on the reference's own record) ------------------------------------


def _fastest(ep):
    """Spawns every step with move interval 2 (ramp_index 19), and many steps played there."""
    late = (ep.fields["e_spawn_speed"] == 1) & (ep.fields["move_speed"] == 2)
    return late.sum() >= 1000 and ep.fields["ramp_index"].max() == 19


def _rescued(ep):
    """A surfacing with six divers: reward oxygen * 10 // 200, counter 6 -> -1."""
    count = ep.fields["diver_count"]
    return any(count[t] == 6 and count[t + 1] == -1 and ep.rewards[t] >= 1 for t in range(ep.n))


EXPECT = {
    "fastest": _fastest,
    "rescue": _rescued,
    "negative_divers": lambda ep: ep.fields["diver_count"].min() <= -20,
    "crowded": lambda ep: (
        max(len(a) + len(b) for a, b in zip(ep.fields["e_fish"], ep.fields["e_subs"], strict=True)) >= 18
    ),
    "kills": lambda ep: (ep.rewards == 1).sum() >= 3,
    "no_ramp": lambda ep: (ep.fields["e_spawn_speed"] == 20).all() and (ep.fields["move_speed"] == 5).all(),
    "long": lambda ep: ep.n >= 1500,
    "sticky": lambda ep: any(ep.last_action[t + 1] != ep.actions[t] for t in range(ep.n)),
    "terminal": lambda ep: ep.terminal[-1],
}


def check_expectations(episode, expect):
    for label in expect:
        assert EXPECT[label](episode), f"this example must exercise {label!r}"


# --- crafted starts -----------------------------------------------------------------------------------------


def start(
    sub=(5, 0, False),
    oxygen=200,
    divers_on_board=0,
    shot_timer=0,
    spawn=(20, 20),
    d_spawn_timer=30,
    move_speed=5,
    ramp_index=0,
    **lists,
):
    """A named crafted start; `surface` follows the sub's row as in reachable play."""
    return dict(
        sub_x=sub[0],
        sub_y=sub[1],
        sub_or=sub[2],
        surface=sub[1] == 0,
        oxygen=oxygen,
        diver_count=divers_on_board,
        shot_timer=shot_timer,
        e_spawn_speed=spawn[0],
        e_spawn_timer=spawn[1],
        d_spawn_timer=d_spawn_timer,
        move_speed=move_speed,
        ramp_index=ramp_index,
        **{name: lists.get(name, []) for name in LISTS},
    )


@st.composite
def start_states(draw):
    """Crafted states in the reachable domain: entities on the board, one direction per row, enemy bullets in
    the direction of their row, no enemy on a friendly bullet's cell, `surface` iff on row 0, the gun not ready
    while two shots are alive."""
    move_speed = draw(st.integers(2, 5))
    spawn_speed = draw(st.integers(1, 20))
    lr = draw(st.lists(st.booleans(), min_size=9, max_size=9))
    row = st.integers(1, 8)
    subs = draw(st.lists(st.tuples(st.integers(0, 9), row, st.integers(0, move_speed), st.integers(0, 10)), max_size=8))
    fish = draw(st.lists(st.tuples(st.integers(0, 9), row, st.integers(0, move_speed)), max_size=10))
    enemy_cells = {(x, y) for x, y, *_ in subs + fish}
    friendly = draw(
        st.lists(
            st.tuples(st.integers(0, 9), st.integers(0, 8), st.booleans()).filter(lambda b: b[:2] not in enemy_cells),
            max_size=2,
        )
    )
    # enemy bullets on the far half of their way (at most 5 steps left), as reachable bullets old enough
    bullets = draw(st.lists(st.tuples(st.integers(0, 4), row), max_size=6))
    bullets = [(x if not lr[y] else 9 - x, y) for x, y in bullets]
    divers = draw(
        st.lists(st.tuples(st.integers(0, 9), row, st.booleans(), st.integers(0, 5)), max_size=2, unique=True)
    )
    # Divers spawn every 30 steps and leave the board at most 59 steps later, so the older of two divers on board
    # leaves before the next spawn: a spawn is never due with two divers. The older (first) diver first moves
    # after `move + 1` steps and then every 6 steps; the spawn comes at step `d_spawn_timer + 1`.
    d_spawn_low = 0
    if len(divers) == 2:
        x, _, rightward, move = divers[0]
        leaves_at = move + 1 + 6 * ((10 - x if rightward else x + 1) - 1)
        d_spawn_low = leaves_at
        if leaves_at > 30:  # no reachable state has this older diver next to a second one
            divers, d_spawn_low = divers[1:], 0
    shot_timer = draw(st.integers(len(friendly) // 2, 5))  # two live shots: the gun fired < 5 steps ago
    if len(friendly) == 2:
        # The older shot (first) was fired at least 5 steps before the younger, so it leaves the board before
        # the gun is ready again (after `shot_timer` moves): a third live shot is unreachable.
        x, _, rightward = friendly[0]
        assume(10 - x <= shot_timer if rightward else x + 1 <= shot_timer)
    sub_or = draw(st.booleans())
    sub_x = draw(st.integers(1, 9) if sub_or else st.integers(0, 8))
    return start(
        sub=(sub_x, draw(st.integers(0, 8)), sub_or),
        oxygen=draw(st.sampled_from([200, 1, 0]) | st.integers(0, 200)),
        divers_on_board=draw(st.integers(-3, 6)),
        shot_timer=shot_timer,
        spawn=(spawn_speed, draw(st.integers(0, spawn_speed))),
        d_spawn_timer=draw(st.integers(d_spawn_low, 30)),
        move_speed=move_speed,
        ramp_index=draw(st.integers(0, 19)),
        e_subs=[(x, y, lr[y], m, s) for x, y, m, s in subs],
        e_fish=[(x, y, lr[y], m) for x, y, m in fish],
        f_bullets=friendly,
        e_bullets=[(x, y, lr[y]) for x, y in bullets],
        divers=divers,
    )


# --- strategies ---------------------------------------------------------------------------------------------

FORCED = st.dictionaries(st.integers(0, 60), UNIFORM32, max_size=8)
# random actions that dive for a while before coming up, so episodes last past the first spawns
ACTIONS = st.lists(st.sampled_from([NOOP, LEFT, UP, RIGHT, DOWN, FIRE, DOWN, FIRE, LEFT, RIGHT]), max_size=150)


# --- the parity properties ----------------------------------------------------------------------------------


@settings(max_examples=examples(30))
@given(data=st.data())
def test_episodes_from_reset_match_reference(data):
    """Short episodes from reset: hypothesis chooses every action, every draw, p and ramping."""
    run_parity(harness.play_drawn(SEAQUEST, data, PROBS, ACTIONS.filter(bool), after_terminal=2))


@settings(max_examples=examples(1))
@given(
    seed=st.integers(0, 2**32 - 1),
    p=SMALL_PROBS,
    ramping=st.booleans(),
    noise=st.sampled_from([0.0, 0.01, 0.03]),
    expect=st.just(()),
)
# the late game: a full rescue (counter -1), then bobbing down to -400 and beyond, ramp_index 19 (spawn every
# step, move interval 2) held for well over a thousand steps with ~20 enemies on the board, kills, stickiness
@example(
    seed=1,
    p=0.1,
    ramping=True,
    noise=0.0,
    expect=("rescue", "fastest", "negative_divers", "crowded", "kills", "long", "sticky"),
)
@example(
    seed=3, p=0.0, ramping=True, noise=0.01, expect=("rescue", "fastest", "negative_divers", "crowded", "terminal")
)
# difficulty_ramping off: spawn interval 20 and move interval 5 throughout
@example(seed=5, p=0.1, ramping=False, noise=0.0, expect=("rescue", "no_ramp", "negative_divers", "long", "terminal"))
def test_long_episodes_match_reference(seed, p, ramping, noise, expect):
    """Late-game episodes of up to LONG steps played by a policy reading the reference's state."""
    rng = np.random.default_rng(seed)
    episode = play(SeededSource(seed), p, ramping, late_game(rng, noise), LONG)
    run_parity(episode, filler_seed=seed)
    check_expectations(episode, expect)


# Named crafted starts (lists in the reference's order; enemies (x, y, lr, move_timer[, shot_timer]), bullets
# (x, y, direction), divers (x, y, lr, move_timer)).
OXYGEN_OUT = start(sub=(4, 3, False), oxygen=1, divers_on_board=2)
FULL_RESCUE = start(sub=(4, 1, False), oxygen=119, divers_on_board=6)
RESCUE_AT_ZERO_OXYGEN = start(sub=(4, 1, False), oxygen=0, divers_on_board=6)
SURFACE_EMPTY = start(sub=(4, 1, False), oxygen=150, divers_on_board=0)
RAMP_LAST = start(sub=(4, 1, False), divers_on_board=-5, spawn=(2, 2), move_speed=2, ramp_index=18)
RAMP_ODD = start(sub=(4, 1, False), divers_on_board=3, spawn=(15, 15), move_speed=3, ramp_index=5)
DEAD_SUBS_FIRE = start(
    sub=(4, 6, False),
    e_subs=[(4, 3, True, 0, 0), (9, 5, True, 0, 0), (0, 7, False, 0, 0), (2, 2, True, 3, 0)],
    f_bullets=[(6, 3, False)],
)
NEWEST_TAKES_BULLET = start(
    sub=(4, 7, False), e_fish=[(3, 4, True, 0), (3, 4, True, 0), (2, 4, True, 0)], f_bullets=[(5, 4, False)]
)
OLDEST_FISH_FIRST = start(
    sub=(4, 8, False),
    e_fish=[(5, 2, True, 3), (5, 2, True, 2)],
    e_subs=[(5, 2, True, 3, 5), (6, 6, False, 2, 5), (6, 6, False, 2, 6)],
    f_bullets=[(4, 2, True), (7, 6, False)],
)
DIVERS_NEWEST_FIRST = start(sub=(4, 5, False), divers_on_board=5, divers=[(4, 5, True, 3), (4, 5, False, 2)])
IDENTICAL_ENEMY_BULLETS = start(sub=(4, 1, False), e_subs=[(9, 5, True, 1, 0), (9, 5, True, 0, 0)])
# fire, run right with the shot for 4 steps, fire again: the new bullet moves onto the old one, which sits on
# the right edge where a fish has just spawned (forced draws of step 6: left-mover, fish, row 3)
LINED_UP = start(sub=(4, 3, True), spawn=(20, 5))
LINED_UP_ACTIONS = [FIRE, RIGHT, RIGHT, RIGHT, RIGHT, FIRE, NOOP]
LINED_UP_FORCED = {6: 0.75, 7: 0.9, 8: 0.3125}


@settings(max_examples=examples(40))
@given(**harness.crafted_inputs(start_states(), FORCED, st.lists(st.integers(0, 5), min_size=1, max_size=40)))
# oxygen 1 underwater: the next step leaves 0 (not terminal), the one after terminates (1.0.11+ rule)
@example(start=OXYGEN_OUT, seed=0, forced={}, p=0.0, ramping=True, actions=[NOOP] * 3)
# six divers: bonus 119 * 10 // 200 = 5, counter 6 -> -1; later surfacings -2, -3 without the no-diver death;
# the first surfacing keeps move interval 5 (odd ramp_index tested before the increment), the second gives 4
@example(start=FULL_RESCUE, seed=1, forced={}, p=0.0, ramping=True, actions=[UP, DOWN, UP, DOWN, UP, NOOP])
# oxygen 0 while surfacing with six: terminal from the oxygen check, and the rescue still happens (bonus 0)
@example(start=RESCUE_AT_ZERO_OXYGEN, seed=2, forced={}, p=0.0, ramping=True, actions=[UP, NOOP])
@example(start=SURFACE_EMPTY, seed=3, forced={}, p=0.0, ramping=True, actions=[UP, NOOP])
# the ramp stops at (1, 2); the move interval drops on odd ramp indices only
@example(start=RAMP_LAST, seed=4, forced={}, p=0.0, ramping=True, actions=[UP, DOWN, UP])
@example(start=RAMP_ODD, seed=5, forced={}, p=0.0, ramping=True, actions=[UP])
@example(start=RAMP_ODD, seed=5, forced={}, p=0.0, ramping=False, actions=[UP])
# subs shot while moving or leaving the board still fire; new enemy bullets move in the step they are fired
@example(start=DEAD_SUBS_FIRE, seed=6, forced={}, p=0.0, ramping=True, actions=[NOOP, NOOP])
# two identical fish move onto one bullet's cell: the newest takes it (removal by value removes the mover)
@example(start=NEWEST_TAKES_BULLET, seed=7, forced={}, p=0.0, ramping=True, actions=[NOOP, NOOP])
# a bullet hits the oldest fish on its cell before any sub; with subs only, the oldest sub
@example(start=OLDEST_FISH_FIRST, seed=8, forced={}, p=0.0, ramping=True, actions=[NOOP, NOOP])
# five divers on board, two divers on the sub's cell: the newest is picked up, the older keeps moving
@example(start=DIVERS_NEWEST_FIRST, seed=9, forced={}, p=0.0, ramping=True, actions=[NOOP, NOOP])
# two subs fire at the right edge in one step, one from off the board: equal enemy bullets, removed by value
@example(start=IDENTICAL_ENEMY_BULLETS, seed=10, forced={}, p=0.0, ramping=True, actions=[NOOP, NOOP])
# two equal friendly bullets: removal by value drops the older, the newer is moved again off the board
@example(start=LINED_UP, seed=11, forced=LINED_UP_FORCED, p=0.0, ramping=True, actions=LINED_UP_ACTIONS)
def test_crafted_states_match_reference(start, seed, forced, p, ramping, actions):
    """Short episodes from crafted states: any difficulty, crowded boards, and each quirk without the wait."""
    episode = play(SeededSource(seed, forced), p, ramping, scripted(actions), len(actions), start=start)
    run_parity(episode, filler_seed=seed)


def play_named(begin, actions, seed=0, forced=None, ramping=True):
    return play(SeededSource(seed, forced), 0.0, ramping, scripted(actions), len(actions), start=begin)


def test_named_crafted_examples_exercise_their_quirk():
    """The crafted @examples above really hit what their comments claim (checked on the reference)."""
    ep = play_named(OXYGEN_OUT, [NOOP] * 3)
    assert list(ep.fields["oxygen"][:3]) == [1, 0, -1] and list(ep.terminal[:3]) == [False, False, True]
    assert not ep.obs[1, 9, :, 7].any()

    ep = play_named(FULL_RESCUE, [UP, DOWN, UP, DOWN, UP, NOOP])
    assert ep.rewards[0] == 119 * 10 // 200 == 5 and not ep.terminal.any()
    assert list(ep.fields["diver_count"]) == [6, -1, -1, -2, -2, -3, -3]
    assert list(ep.fields["ramp_index"][[1, 3, 5]]) == [1, 2, 3]
    assert list(ep.fields["move_speed"][[1, 3, 5]]) == [5, 4, 4] and list(ep.fields["e_spawn_speed"][[1, 3]]) == [
        19,
        18,
    ]
    assert not ep.obs[1:, 9, :, 8].any(), "the diver gauge shows nothing below zero"

    ep = play_named(RESCUE_AT_ZERO_OXYGEN, [UP, NOOP])
    assert ep.terminal[1] and ep.fields["oxygen"][1] == 200 and ep.fields["diver_count"][1] == -1
    assert ep.rewards[0] == 0
    ep = play_named(SURFACE_EMPTY, [UP, NOOP])
    assert ep.terminal[1] and ep.fields["diver_count"][1] == 0

    ep = play_named(RAMP_LAST, [UP, DOWN, UP])
    assert list(ep.fields["ramp_index"]) == [18, 19, 19, 19] and ep.fields["e_spawn_speed"][-1] == 1
    ep = play_named(RAMP_ODD, [UP])
    assert ep.fields["move_speed"][1] == 2 and ep.fields["e_spawn_speed"][1] == 14
    ep = play_named(RAMP_ODD, [UP], ramping=False)
    assert ep.fields["move_speed"][1] == 3 and ep.fields["ramp_index"][1] == 5

    ep = play_named(DEAD_SUBS_FIRE, [NOOP, NOOP])
    f_bullets, e_bullets, e_subs = (ep.fields[name][1] for name in ("f_bullets", "e_bullets", "e_subs"))
    assert ep.rewards[0] == 1 and f_bullets == () and e_subs == ((2, 2, 1, 2, 10),)
    assert e_bullets == ((3, 2, 1), (6, 3, 1)), "the shot sub fired at its cell; both bullets moved at once"
    assert ep.obs[1, 3, 6, 4] and not ep.obs[1, 3, 5, 6]

    ep = play_named(NEWEST_TAKES_BULLET, [NOOP, NOOP])
    assert (
        ep.rewards[0] == 1
        and ep.fields["e_fish"][1] == ((4, 4, 1, 5), (3, 4, 1, 5))
        and ep.fields["f_bullets"][1] == ()
    )

    ep = play_named(OLDEST_FISH_FIRST, [NOOP, NOOP])
    assert ep.rewards[0] == 2 and ep.fields["e_fish"][1] == ((5, 2, 1, 1),)
    assert ep.fields["e_subs"][1] == ((5, 2, 1, 2, 4), (6, 6, 0, 1, 5))

    ep = play_named(DIVERS_NEWEST_FIRST, [NOOP, NOOP])
    assert ep.fields["diver_count"][1] == 6 and ep.fields["divers"][1] == ((4, 5, 1, 2),)

    ep = play_named(IDENTICAL_ENEMY_BULLETS, [NOOP, NOOP])
    assert ep.fields["e_bullets"][1] == () and ep.fields["e_subs"][1] == ((9, 5, 1, 0, 10),)


class RecordingList(list):
    """A list that records, for each `remove`, the index it removed and whether that was not the only equal."""

    def __init__(self, items, removals):
        super().__init__(items)
        self.removals = removals

    def remove(self, value):
        index = self.index(value)
        self.removals.append((index, self.count(value)))
        super().remove(value)


def test_lined_up_friendly_bullets_are_removed_by_value():
    """The LINED_UP @example on the oracle: at step 6 the two friendly bullets are equal, the bullet that hits
    the fresh fish is the newer (index 1), the reference removes index 0 and then moves the newer one off the
    board. JAX drops the newer and moves the older off the board: the same lists, checked by run_parity."""
    ref = minatar.Environment("seaquest", sticky_action_prob=0.0)
    attach(ref, ScriptedRandom(SeededSource(11, LINED_UP_FORCED)))
    ref.reset()
    SEAQUEST.apply_start(ref, LINED_UP)
    removals = []
    for t, action in enumerate(LINED_UP_ACTIONS[:6]):
        if t == 5:
            assert ref.env.f_bullets == [[9, 3, True]] and ref.env.e_fish == []
            ref.env.f_bullets = RecordingList(ref.env.f_bullets, removals)
        reward, terminal = ref.act(action)
    assert reward == 1 and not terminal and ref.env.f_bullets == [] and ref.env.e_fish == []
    assert removals == [(0, 2), (0, 1)], "first the older of two equal bullets, then the re-moved newer one"


def test_divers_picked_newest_first_when_only_one_fits():
    """With room for one diver, of two on the sub's cell the newer is taken; JAX agrees (run_parity)."""
    ep = play_named(DIVERS_NEWEST_FIRST, [NOOP])
    assert ep.fields["divers"][0] == ((4, 5, 1, 3), (4, 5, 0, 2)) and ep.fields["divers"][1] == ((4, 5, 1, 2),)
    run_parity(ep)


# --- the fixed buffers never overflow -----------------------------------------------------------------------

STRESS_CHUNKS = 40


def _most_live(words, layout=None) -> int:
    """The most live slots (of slot masks) or live records (of packed words, given their layout) in one row, read
    with the layout's decoders (cheaper than a whole `from_pure` per row)."""
    live = slot_flags(words) if layout is None else record_fields(words, layout)["alive"]
    return int(live.sum(axis=-1).max())


def stress(begin: dict, bob: bool, seed: int) -> dict:
    """JAX alone, STRESS_CHUNKS x CHUNK steps from `begin` (restarted there after a terminated chunk) with
    seeded draws, through the harness's compiled chunk scan: bobbing between rows 0 and 1 (DOWN, UP, ...; a quarter of
    the actions random) or, with `bob` off, resting on the surface, where nothing can hit the sub and every
    enemy lives its whole crossing. Returns the largest counts seen and whether overflow was ever set."""
    rng = np.random.default_rng(seed)
    params = make_params(0.0, True)
    state = state_from_start(begin)
    seen = dict(overflow=False, enemies=0, bullets=0, divers=0, friendly=0, ramp=0)
    for _ in range(STRESS_CHUNKS):
        actions = np.where(np.arange(CHUNK) % 2 == 0, DOWN, UP) if bob else np.full(CHUNK, NOOP)
        noise = rng.random(CHUNK) < 0.25
        actions = np.where(noise & bob, rng.integers(0, 6, CHUNK), actions).astype(np.int32)
        u = rng.random((6, CHUNK), np.float32)
        draws = Draws(
            sticky=jnp.asarray(u[0]),
            game=SeaquestDraws(
                e_lr=jnp.asarray(u[1]),
                e_sub=jnp.asarray(u[2]),
                e_row=jnp.asarray(rng.integers(1, 9, CHUNK), jnp.int32),
                d_lr=jnp.asarray(u[3]),
                d_row=jnp.asarray(rng.integers(1, 9, CHUNK), jnp.int32),
            ),
        )
        state, (_, states, _, _, _) = harness.run_chunk(SEAQUEST, state, actions, draws, params)
        g = jax.device_get(states.game)
        seen["overflow"] |= bool(g.overflow.any())
        seen["enemies"] = max(seen["enemies"], _most_live(g.e_alive))
        seen["bullets"] = max(seen["bullets"], _most_live(g.b_alive))
        seen["divers"] = max(seen["divers"], _most_live(g.divers, DIVER_RECORD))
        seen["friendly"] = max(seen["friendly"], _most_live(g.f_bullets, BULLET_RECORD))
        seen["ramp"] = max(seen["ramp"], int(g.ramp_index.max()))
        if bool(states.terminated[-1]):
            state = state_from_start(begin)
    return seen


LATE = dict(divers_on_board=-30, spawn=(1, 1), move_speed=2, ramp_index=19)


@pytest.mark.parametrize(
    "label, begin, bob",
    [
        # fastest possible ramp from the start speeds: a surfacing every other step right after a full rescue
        ("bob from the start", start(divers_on_board=-1), True),
        # the densest board: spawns every step at move interval 2, nothing ever shot or removed early
        ("rest at the top", start(**LATE), False),
        ("bob late", start(**LATE), True),
    ],
)
def test_buffers_never_overflow_in_late_game_play(label, begin, bob):
    """JAX alone, 10k steps per case: the overflow flag never fires while the board fills up (the
    reference-driven long episodes above assert it at every step too)."""
    seen = stress(begin, bob, seed=len(label))
    assert not seen["overflow"], f"{label}: overflow"
    assert seen["enemies"] <= NUM_ENEMY_SLOTS and seen["divers"] <= 2 and seen["friendly"] <= 2
    assert seen["enemies"] >= 20 and seen["bullets"] >= 5 and seen["divers"] >= 1, seen
    assert seen["ramp"] == 19, seen


def test_ring_slot_is_free_again_when_its_turn_comes():
    """The bound behind NUM_ENEMY_SLOTS, on the oracle: with move interval 2 an enemy spawned in step s is
    removed in step s + 29 and a sub's bullets (fired at ages 10 and 21) are gone by then, so with at most one
    spawn per step its ring slot (and bullet slot) is free when spawn s + 30 comes."""
    begin = start(sub=(5, 0, False), spawn=(20, 0), move_speed=2, ramp_index=19)
    ref = minatar.Environment("seaquest", sticky_action_prob=0.0)
    attach(ref, ScriptedRandom(SeededSource(0, {1: 0.1, 2: 0.1, 3: 0.0})))  # step 0: right-moving sub, row 1
    ref.reset()
    SEAQUEST.apply_start(ref, begin)
    ref.act(NOOP)
    sub = ref.env.e_subs[0]
    alive, fired = [], []
    for _ in range(1, 31):
        before = len(ref.env.e_bullets)
        ref.act(NOOP)
        alive.append(any(s is sub for s in ref.env.e_subs))
        fired.append(len(ref.env.e_bullets) > before)
    assert alive.index(False) + 1 == 29, "alive after steps 0..28, removed in step 29"
    assert [t + 1 for t, f in enumerate(fired) if f] == [10, 21]
    assert not any(b[1] == 1 for b in ref.env.e_bullets), "its bullets are gone"


# --- draws: when and how they are sampled -------------------------------------------------------------------


@jax.jit
def _sample_many(keys, state, params):
    return jax.vmap(lambda k: ENV.sample_draws(k, state, params))(keys)


def test_sample_draws_distribution():
    """Five variates per step with the reference's meaning: uniforms for the rand() calls, rows 1..8."""
    n = 20_000
    draws = _sample_many(jax.random.split(jax.random.key(0), n), state_from_start(None), make_params(0.1, True))
    g = draws.game
    for u in (draws.sticky, g.e_lr, g.e_sub, g.d_lr):
        u = np.asarray(u)
        assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
        assert abs(u.mean() - 0.5) < 0.01 and abs(np.mean(u < 0.1) - 0.1) < 0.01
    assert abs(np.mean(np.asarray(g.e_sub) < SUB_THRESHOLD) - 1 / 3) < 0.015
    for rows in (np.asarray(g.e_row), np.asarray(g.d_row)):
        counts = np.bincount(rows, minlength=10)
        assert counts[[0, 9]].sum() == 0 and np.allclose(counts[1:9] / n, 1 / 8, atol=0.01)
    # the five variates are independent draws
    assert abs(np.corrcoef(np.asarray(g.e_lr), np.asarray(g.e_sub))[0, 1]) < 0.03
    assert abs(np.corrcoef(np.asarray(g.e_row), np.asarray(g.d_row))[0, 1]) < 0.03
    assert ENV.sample_reset_draws(jax.random.key(0), make_params(0.1, True)) == ()


def test_thresholds_match_float64_reference():
    """`u < 0.5` and `u < 1/3` on a float32 u give the float64 answers for every float32."""
    harness.assert_thresholds_exact(((0.5, np.float32(0.5)), (1 / 3, SUB_THRESHOLD)))
    # and the integer map agrees with SeededSource's forced integers (low + int(u * (high - low)))
    for u in (0.0, 0.124999, 0.125, 0.3125, 0.99999994):
        assert int(jax.jit(lambda v: ENV.step_draws(jnp.full(5, v, jnp.float32), None, None).e_row)(u)) == 1 + int(
            np.float32(u) * 8
        )


def test_static_configuration():
    ref = minatar.Environment("seaquest")
    assert ENV.num_game_actions == ref.num_actions() == 6
    assert list(Seaquest(minimal_actions=True).action_set) == ref.minimal_action_set() == [0, 1, 2, 3, 4, 5]
    assert ENV.obs_shape == tuple(ref.state_shape()) and ENV.obs_dtype == jnp.bool_
    params = ENV.default_params()
    assert (params.sticky_action_prob, params.difficulty_ramping, params.max_steps) == (0.1, True, 0)
    assert ENV.num_step_uniforms == 5 and ENV.num_reset_uniforms == 0
