"""Asterix parity with minatar 1.0.15, step by step.

The shared harness (`tests/parity/harness.py`) plays the reference with a scripted RandomState, replays its
logged draws through `Asterix.transition` and compares observation, reward, terminal flag, last executed
action and every field of the game's internal state after every step; this file holds Asterix's adapter
(slot i is row i + 1; x, lr and gold compared where a slot is occupied), its strategies and named quirks.
Draws the reference did not make are filled with random values, so every comparison also proves the game
ignores them. Long episodes use a dodging policy that reads the reference's state, so they reach the fastest
difficulty (spawn and move interval 1) and run past the point where ramping stops.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import minatar
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from maxatar.core import EnvParams, EnvState
from maxatar.games.asterix.rules import GOLD_THRESHOLD, Asterix, AsterixDraws
from maxatar.games.asterix.twin import AsterixTwin
from tests.parity import harness
from tests.parity.harness import PROBS, SMALL_PROBS, from_list
from tests.parity.scripted_random import UNIFORM32, SeededSource
from tests.tiers import examples

ENV = Asterix()
LENGTH = 1200  # steps of the long episodes
SCALARS = ("player_x", "player_y", "spawn_speed", "spawn_timer", "move_speed", "move_timer", "ramp_timer", "ramp_index")
SLOTS = ("active", "x", "lr", "gold")
# (spawn_speed, move_speed) after ramps 1..9 (docs/reference-quirks.md, confirmed by the oracle below)
RAMP_TABLE = [(9, 5), (8, 4), (7, 4), (6, 3), (5, 3), (4, 2), (3, 2), (2, 1), (1, 1)]


# --- the adapter ----------------------------------------------------------------------------------------------


@jax.jit
def reset_state(params):
    return ENV.reset_from_draws((), params)[1]


TWIN = AsterixTwin(ENV, ENV.default_params())  # for its converter only


def game_from_start(start: dict | None) -> EnvState:
    """The JAX state of a crafted start, through the twin's converter (the twin's game is a list: the player,
    the slots' active, x, lr and gold, then the timers in `SCALARS` order)."""
    if start is None:
        return jax.device_get(reset_state(ENV.default_params()))
    ents = start["entities"]
    slots = [
        [e is not None for e in ents],
        [0 if e is None else e[0] for e in ents],
        [e is not None and e[1] for e in ents],
        [e is not None and e[2] for e in ents],
    ]
    game = TWIN.to_pure([start["player_x"], start["player_y"], *slots, *(start[name] for name in SCALARS[2:])])
    return EnvState(game=game, last_action=np.int32(0), time=np.int32(0), terminated=np.bool_(False))


class AsterixParity(harness.GameAdapter):
    """Slot i is row i + 1; x, lr and gold are compared where a slot is occupied (they are free elsewhere)."""

    env = ENV

    def port_start(self, start):
        return game_from_start(start)

    def snapshot(self, game) -> dict:
        assert game.shot_timer == 0
        slots = np.zeros((4, 8), np.int64)
        for i, entity in enumerate(game.entities):
            if entity is not None:
                assert entity[1] == i + 1, "slot i always holds row i + 1"
                slots[:, i] = (1, entity[0], entity[2], entity[3])
        return {name: int(getattr(game, name)) for name in SCALARS} | dict(zip(SLOTS, slots, strict=True))

    def port_fields(self, state: EnvState) -> dict:
        """The scalars, and the slots with x, lr and gold zeroed where a slot is empty (they are free there)."""
        game = state.game
        slots = {name: jnp.where(game.active, getattr(game, name), 0) for name in SLOTS[1:]}
        return {name: getattr(game, name) for name in SCALARS} | {"active": game.active} | slots

    def apply_start(self, ref, start: dict) -> None:
        """Put a crafted state into the reference game."""
        game = ref.env
        for name in SCALARS:
            setattr(game, name, start[name])
        game.entities = [None if e is None else [e[0], i + 1, e[1], e[2]] for i, e in enumerate(start["entities"])]

    def game_draws(self, logs, rng, length) -> AsterixDraws:
        """The spawn calls as draws; what the reference did not draw is filled at random."""
        lr = rng.random(length, np.float32)
        gold = rng.random(length, np.float32)
        slot = rng.integers(0, 8, length).astype(np.int32)
        for t, calls in enumerate(logs):
            if calls:
                lr[t], gold[t] = calls[0].value, calls[1].value
            if len(calls) > 2:
                slot[t] = calls[2].value
        return AsterixDraws(lr=lr, gold=gold, slot=slot)

    def step_calls(self, pre: EnvState, episode) -> list:
        """Besides the sticky uniform: the two spawn uniforms iff the game is live and its spawn timer is 0;
        randint(n_free) iff also a slot is free."""
        spawn = ~pre.terminated & (pre.game.spawn_timer == 0)
        n_free = 8 - pre.game.active.sum(-1)
        calls = []
        for t in range(episode.n):
            expected = []
            if spawn[t]:
                expected += [("rand", ()), ("rand", ())]
                if n_free[t] > 0:
                    expected.append(("randint", (0, int(n_free[t]), None)))
            calls.append(expected)
        return calls


ASTERIX = AsterixParity()


def make_params(p: float, ramping: bool) -> EnvParams:
    return EnvParams(sticky_action_prob=np.float32(p), difficulty_ramping=np.bool_(ramping), max_steps=np.int32(0))


# play(source, p, ramping, policy, n_steps, start=None): until 2 steps past termination at the most
play = functools.partial(harness.play, ASTERIX, after_terminal=2)


def run_parity(episode: harness.Episode, filler_seed=0) -> harness.Replay:
    """Replay `episode` in JAX and compare after every step; returns the port's side."""
    port = harness.check_parity(ASTERIX, episode, filler_seed=filler_seed)
    newly_terminal = episode.terminal[1:] & ~episode.terminal[:-1]
    assert not (newly_terminal & (episode.rewards > 0)).any(), "one entity per row: gold and enemy never coincide"
    return port


# --- policies -----------------------------------------------------------------------------------------------

MOVES = {0: (0, 0), 1: (-1, 0), 2: (0, -1), 3: (1, 0), 4: (0, 1), 5: (0, 0)}  # action -> (dx, dy)


def scripted(actions):
    return from_list(actions)


def _bits(cells) -> int:
    return sum(1 << (10 * y + x) for x, y in cells)


BOARD = _bits((x, y) for x in range(10) for y in range(1, 9))  # rows 1..8: where the player can be
CENTRE = _bits((x, y) for x in range(2, 8) for y in range(1, 9))
NOT_COL0 = _bits((x, y) for x in range(1, 10) for y in range(10))
NOT_COL9 = _bits((x, y) for x in range(9) for y in range(10))


def dodging(rng: np.random.Generator, noise: float, horizon: int = 8):
    """A survival policy read off the reference's state: keep a path clear of enemies for `horizon` steps
    (ignoring unseen spawns; preferring columns 2..7, which fresh spawns cannot reach in one step), robust to
    the chosen action being repeated next step by stickiness. With probability `noise` a random action.
    Cell sets are bitboards (bit 10 * y + x of a Python int)."""

    def result(x, y, a):
        dx, dy = MOVES[a]
        return min(max(x + dx, 0), 9), min(max(y + dy, 1), 8)

    def policy(t, game):
        if rng.random() < noise:
            return int(rng.integers(6))
        enemies = [(e[0], e[1], 1 if e[2] else -1) for e in game.entities if e is not None and not e[3]]
        danger = []  # danger[k]: cells where ending step k + 1 is fatal
        timer = game.move_timer
        for _ in range(horizon):
            cells = [(x, y) for x, y, _ in enemies]
            if timer == 0:
                enemies = [(x + d, y, d) for x, y, d in enemies]
                cells += [(x, y) for x, y, _ in enemies]
                timer = game.move_speed
            timer -= 1
            danger.append(_bits((x, y) for x, y in cells if 0 <= x <= 9))

        def layers(allowed):
            safe = [allowed & ~danger[-1]]
            for k in range(horizon - 2, -1, -1):
                s = safe[0]
                reach = s | ((s << 1) & NOT_COL0) | ((s >> 1) & NOT_COL9) | (s << 10) | (s >> 10)
                safe.insert(0, allowed & ~danger[k] & reach)
            return safe

        x, y = game.player_x, game.player_y
        for safe in (layers(CENTRE), layers(BOARD)):
            ok = [a for a in range(6) if safe[0] >> _index(*result(x, y, a)) & 1]
            robust = [a for a in ok if safe[1] >> _index(*result(*result(x, y, a), a)) & 1]
            if robust or ok:
                return int(rng.choice(robust or ok))
        return int(rng.integers(6))

    return policy


def _index(x, y):
    return 10 * y + x


# --- strategies ---------------------------------------------------------------------------------------------

FORCED = st.dictionaries(st.integers(0, 150), UNIFORM32, max_size=8)
ACTIONS = st.integers(1, 200).flatmap(lambda n: st.lists(st.integers(0, 5), min_size=n, max_size=n))


@st.composite
def start_states(draw):
    """Crafted states within the reference's domain (any timer or ramp phase, any row occupancy)."""
    n_active = draw(st.integers(0, 8))
    occupied = set(draw(st.permutations(range(8)))[:n_active])
    entity = st.tuples(st.integers(0, 9), st.booleans(), st.booleans())
    spawn_speed = draw(st.integers(1, 10))
    move_speed = draw(st.integers(1, 5))
    return dict(
        player_x=draw(st.integers(0, 9)),
        player_y=draw(st.integers(1, 8)),
        entities=[draw(entity) if i in occupied else None for i in range(8)],
        spawn_speed=spawn_speed,
        spawn_timer=draw(st.integers(0, spawn_speed)),
        move_speed=move_speed,
        move_timer=draw(st.integers(0, move_speed)),
        ramp_timer=draw(st.integers(-1, 3) | st.integers(-1, 100)),
        ramp_index=draw(st.integers(0, 9)),
    )


def start(entities, player=(5, 5), spawn=(10, 9), move=(5, 4), ramp=(100, 0)):
    """A named crafted start: entities maps slot -> (x, lr, gold)."""
    return dict(
        player_x=player[0],
        player_y=player[1],
        entities=[entities.get(i) for i in range(8)],
        spawn_speed=spawn[0],
        spawn_timer=spawn[1],
        move_speed=move[0],
        move_timer=move[1],
        ramp_timer=ramp[0],
        ramp_index=ramp[1],
    )


# --- what named examples must exercise (checked on the reference's own record) ------------------------------


def spawn_calls(episode):
    return [calls for calls in episode.logs if len(calls) > 1]


def ramps(episode):
    """(step, spawn_speed, move_speed) at every step whose ramp_index increased."""
    f = episode.fields
    steps = np.nonzero(np.diff(f["ramp_index"]))[0] + 1
    return [(int(s), int(f["spawn_speed"][s]), int(f["move_speed"][s])) for s in steps]


def _reaches_fastest(ep):
    got = ramps(ep)
    assert [(s, a, m) for s, a, m in got] == [(102 * (i + 1), a, m) for i, (a, m) in enumerate(RAMP_TABLE)]
    f = ep.fields
    assert (f["spawn_speed"][918:] == 1).all() and (f["move_speed"][918:] == 1).all()
    assert ep.n >= 1100 and not ep.terminal[1100], "the episode must run well past the last ramp (step 1020 would ramp)"
    assert (f["ramp_timer"][919:] == 100).all(), "ramping stops at (1, 1)"
    return True


EXPECT = {
    "fastest": _reaches_fastest,
    "full_rows": lambda ep: any(len(c) == 3 for c in spawn_calls(ep)),
    "one_free_slot": lambda ep: any(len(c) == 4 and c[3].args[1] == 1 for c in spawn_calls(ep)),
    "no_ramp": lambda ep: (
        ep.n >= 600
        and (ep.fields["spawn_speed"] == 10).all()
        and (ep.fields["move_speed"] == 5).all()
        and (ep.fields["ramp_timer"] == 100).all()
    ),
    "gold": lambda ep: ep.rewards.sum() >= 3,
    "sticky": lambda ep: any(ep.last_action[t + 1] != ep.actions[t] for t in range(ep.n)),
    "off_board": lambda ep: any((ep.fields["active"][t] > ep.fields["active"][t + 1]).any() for t in range(ep.n)),
    "terminal": lambda ep: ep.terminal[-1],
    "reward": lambda ep: ep.rewards.sum() >= 1,
}


def check_expectations(episode, expect):
    for label in expect:
        assert EXPECT[label](episode), f"this example must exercise {label!r}"


# --- the parity properties ----------------------------------------------------------------------------------


@settings(max_examples=examples(40))
@given(data=st.data())
def test_episodes_from_reset_match_reference(data):
    """Short episodes from reset: hypothesis chooses every action, every draw, p and ramping."""
    episode = harness.play_drawn(ASTERIX, data, PROBS, ACTIONS, after_terminal=2)
    run_parity(episode, filler_seed=episode.n)


@settings(max_examples=examples(6))
@given(
    seed=st.integers(0, 2**32 - 1),
    p=SMALL_PROBS,
    ramping=st.booleans(),
    noise=st.sampled_from([0.0, 0.01]),
    expect=st.just(()),
)
# every ramp on schedule with the docs/reference-quirks.md speeds, (1, 1) reached and held, rows full / one row free
@example(seed=4, p=0.1, ramping=True, noise=0.0, expect=("fastest", "full_rows", "one_free_slot", "gold", "sticky"))
@example(seed=0, p=0.0, ramping=True, noise=0.0, expect=("fastest", "full_rows", "one_free_slot"))
# difficulty_ramping off: (10, 5) for 1200 steps
@example(seed=0, p=0.1, ramping=False, noise=0.0, expect=("no_ramp", "off_board", "gold", "sticky"))
def test_long_episodes_match_reference(seed, p, ramping, noise, expect):
    """Episodes up to 1200 steps with a surviving policy: every ramp, the fastest speeds, rows filling up."""
    rng = np.random.default_rng(seed)
    episode = play(SeededSource(seed), p, ramping, dodging(rng, noise), LENGTH)
    run_parity(episode, filler_seed=seed)
    check_expectations(episode, expect)


# Named crafted starts. Slots are rows - 1; (x, lr, gold).
ALL_FULL = {i: (3 + (i % 4), bool(i % 2), i == 2) for i in range(8)}
SEVEN_FULL = {i: e for i, e in ALL_FULL.items() if i != 5}


@settings(max_examples=examples(40))
@given(
    **harness.crafted_inputs(
        start_states(),
        FORCED,
        st.integers(1, 40).flatmap(lambda n: st.lists(st.integers(0, 5), min_size=n, max_size=n)),
    )
)
# all eight rows occupied at a spawn: rand, rand, no randint, nothing overwritten (earlier ports overwrote)
@example(start=start(ALL_FULL, player=(0, 1), spawn=(1, 0)), seed=0, forced={}, p=0.0, ramping=True, actions=[0] * 3)
# exactly one free row: randint(1) always picks it (earlier ports missed it 1/8 of the time)
@example(start=start(SEVEN_FULL, player=(0, 1), spawn=(1, 0)), seed=1, forced={}, p=0.0, ramping=True, actions=[0] * 3)
# enemy walks into the player (collision after the move), the step still ramps and moves the other entities
@example(
    start=start({4: (6, False, False), 0: (2, True, False)}, move=(3, 0), ramp=(-1, 1)),
    seed=2,
    forced={},
    p=0.0,
    ramping=True,
    actions=[0],
)
# player walks into an enemy (collision before the move), while gold elsewhere leaves the board
@example(
    start=start({4: (6, True, False), 7: (9, True, True)}, move=(5, 0)),
    seed=3,
    forced={},
    p=0.0,
    ramping=True,
    actions=[3],
)
# gold picked up before and after a move, entities off both edges removed
@example(
    start=start({4: (4, False, True), 5: (6, False, True), 0: (0, False, False), 1: (9, True, False)}, move=(1, 0)),
    seed=4,
    forced={},
    p=0.0,
    ramping=True,
    actions=[1, 4, 0, 0],
)
# ramp stops at (1, 1) with the ramp timer expired; ramping off freezes it in any phase
@example(start=start({}, spawn=(1, 0), move=(1, 0), ramp=(-1, 9)), seed=5, forced={}, p=0.0, ramping=True, actions=[0])
@example(start=start({}, spawn=(4, 0), move=(2, 0), ramp=(-1, 5)), seed=6, forced={}, p=0.0, ramping=False, actions=[0])
# move interval 2 -> 1 only on odd ramp indices; spawn interval keeps shrinking alone when moves are at 1
@example(start=start({}, spawn=(3, 1), move=(2, 1), ramp=(-1, 7)), seed=7, forced={}, p=0.0, ramping=True, actions=[0])
@example(start=start({}, spawn=(3, 1), move=(2, 1), ramp=(-1, 6)), seed=8, forced={}, p=0.0, ramping=True, actions=[0])
@example(
    start=start({}, spawn=(3, 1), move=(1, 0), ramp=(0, 7)), seed=9, forced={}, p=0.0, ramping=True, actions=[0] * 3
)
def test_crafted_states_match_reference(start, seed, forced, p, ramping, actions):
    """Short episodes from crafted states: late difficulty, full rows and every ramp phase without the wait."""
    episode = play(SeededSource(seed, forced), p, ramping, scripted(actions), len(actions), start=start)
    run_parity(episode, filler_seed=seed)


def test_named_crafted_examples_exercise_their_quirk():
    """The crafted @examples above really hit what their comments claim (checked on the reference)."""
    full = play(SeededSource(0), 0.0, True, scripted([0]), 1, start=start(ALL_FULL, player=(0, 1), spawn=(1, 0)))
    assert [c.method for c in full.logs[0]] == ["rand", "rand", "rand"]
    assert (full.fields["active"][1] == 1).all()
    assert all((full.fields[name][1] == full.fields[name][0]).all() for name in SLOTS[1:])
    assert spawn_calls(full) and not full.terminal[-1]
    one = play(SeededSource(1), 0.0, True, scripted([0]), 1, start=start(SEVEN_FULL, player=(0, 1), spawn=(1, 0)))
    assert one.logs[0][3].args[1] == 1 and one.fields["active"][0, 5] == 0 and one.fields["active"][1, 5] == 1
    post = play(
        SeededSource(2),
        0.0,
        True,
        scripted([0]),
        1,
        start=start({4: (6, False, False), 0: (2, True, False)}, move=(3, 0), ramp=(-1, 1)),
    )
    assert post.terminal[1] and post.fields["x"][1, 0] == 3 and ramps(post) == [(1, 9, 2)]
    pre = play(
        SeededSource(3),
        0.0,
        True,
        scripted([3]),
        1,
        start=start({4: (6, True, False), 7: (9, True, True)}, move=(5, 0)),
    )
    assert pre.terminal[1] and pre.fields["x"][1, 4] == 7 and pre.fields["active"][1, 7] == 0
    gold = play(
        SeededSource(4),
        0.0,
        True,
        scripted([1, 4, 0, 0]),
        4,
        start=start({4: (4, False, True), 5: (6, False, True), 0: (0, False, False), 1: (9, True, False)}, move=(1, 0)),
    )
    assert list(gold.rewards) == [1, 1, 0, 0] and gold.fields["active"][1, [0, 1]].sum() == 0
    stop = play(SeededSource(5), 0.0, True, scripted([0]), 1, start=start({}, spawn=(1, 0), move=(1, 0), ramp=(-1, 9)))
    assert stop.fields["ramp_timer"][1] == -1 and ramps(stop) == []


def test_enemy_hit_step_completes():
    """docs/reference-quirks.md: "a gold picked in the same step [as an enemy hit] still counts". Slot i is always row
    i + 1 and only the player's row can collide, so the reference never has gold and an enemy on the player in
    one step (`run_parity` asserts this on every recorded step). What remains checkable is that the step hitting
    an enemy completes: entities still move, timers still run. The JAX game computes the reward independently of
    the hit, so a pickup would count."""
    begin = start({4: (6, True, False), 1: (3, False, True)}, move=(5, 0))
    ep = play(SeededSource(11), 0.0, True, scripted([3]), 1, start=begin)
    assert ep.terminal[1] and ep.rewards[0] == 0
    assert ep.fields["x"][1, 1] == 2 and ep.fields["move_timer"][1] == 4
    run_parity(ep)


# --- draws: when and how they are sampled -------------------------------------------------------------------


N_SAMPLES = 20_000


@jax.jit
def _sample_and_step(seed, games, params):
    keys = jax.random.split(jax.random.key(seed), N_SAMPLES)

    def one(key, game):
        state = EnvState(game=game, last_action=jnp.int32(0), time=jnp.int32(0), terminated=jnp.bool_(False))
        draws = ENV.sample_draws(key, state, params)
        return draws, ENV.transition(state, jnp.int32(0), draws, params)[1].game

    return jax.vmap(one)(keys, games)


def sample_and_step(seed, games, params):
    """`sample_draws`, then `transition` with a noop (together: `step`), for N_SAMPLES live states, one key each.
    Every draw test goes through this one compilation."""
    return jax.device_get(_sample_and_step(np.int32(seed), games, params))


def batch(game):
    return jax.tree.map(lambda a: np.broadcast_to(a, (N_SAMPLES, *np.shape(a))), game)


def test_sample_draws_mirror_reference_calls_along_an_episode():
    """Along a long episode, at every step the reference's calls are exactly those the state implies (checked in
    run_parity), and `sample_draws` gives a slot index in range for that state's number of free rows."""
    episode = play(SeededSource(1), 0.0, True, dodging(np.random.default_rng(1), 0.0), LENGTH)
    states = run_parity(episode, filler_seed=1).states  # row t + 1: after step t
    n_free = 8 - np.asarray(states.game.active).sum(-1)[1:]
    assert {0, 1}.issubset(set(n_free)), "the episode must visit full rows and a single free row"
    games = jax.tree.map(lambda a: np.resize(a[1:], (N_SAMPLES, *a.shape[1:])), states.game)
    draws, _ = sample_and_step(1, games, make_params(0.0, True))
    assert ((draws.game.slot >= 0) & (draws.game.slot < np.maximum(np.resize(n_free, N_SAMPLES), 1))).all()


@pytest.mark.parametrize("free", [(), (5,), (0, 3, 7), tuple(range(8))])
def test_sample_draws_distribution(free):
    game = game_from_start(None).game
    game = dataclasses.replace(game, active=np.array([i not in free for i in range(8)]))
    draws, _ = sample_and_step(len(free), batch(game), make_params(0.1, True))
    sticky, lr, gold, slot = draws.sticky, draws.game.lr, draws.game.gold, draws.game.slot
    for u in (sticky, lr, gold):
        assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
        assert abs(u.mean() - 0.5) < 0.01 and abs(np.mean(u < 0.1) - 0.1) < 0.01
    assert abs(np.mean(lr < 0.5) - 0.5) < 0.015 and abs(np.mean(gold < GOLD_THRESHOLD) - 1 / 3) < 0.015
    k = max(len(free), 1)
    counts = np.bincount(slot, minlength=8)
    assert counts[k:].sum() == 0
    assert np.allclose(counts[:k] / N_SAMPLES, 1 / k, atol=0.015)
    assert ENV.sample_reset_draws(jax.random.key(0), make_params(0.1, True)) == ()


def test_spawn_placement_distribution_through_step():
    """Through a sampled step: a spawn lands uniformly in the free rows only, right-moving 1/2, gold 1/3."""
    ents = {0: (3, True, False), 2: (4, False, True), 4: (6, True, False), 5: (2, True, False), 6: (5, False, False)}
    before = game_from_start(start(ents, player=(5, 8), spawn=(10, 0))).game
    _, game = sample_and_step(7, batch(before), make_params(0.0, True))
    new = game.active & ~np.asarray(before.active)
    assert (new.sum(-1) == 1).all() and game.active[:, list(ents)].all()
    assert np.allclose(new[:, [1, 3, 7]].mean(0), 1 / 3, atol=0.015)
    rows = np.arange(N_SAMPLES), new.argmax(-1)
    lr = game.lr[rows]
    assert abs(lr.mean() - 0.5) < 0.015 and abs(game.gold[rows].mean() - 1 / 3) < 0.015
    assert (game.x[rows] == np.where(lr, 0, 9)).all()


def test_thresholds_match_float64_reference():
    """`u < 0.5` and `u < 1/3` on a float32 u give the float64 answers for every float32."""
    harness.assert_thresholds_exact(((0.5, np.float32(0.5)), (1 / 3, GOLD_THRESHOLD)))


def test_static_configuration():
    ref = minatar.Environment("asterix")
    assert ENV.num_game_actions == ref.num_actions() == 6
    assert list(Asterix(minimal_actions=True).action_set) == ref.minimal_action_set() == [0, 1, 2, 3, 4]
    assert ENV.obs_shape == tuple(ref.state_shape()) and ENV.obs_dtype == jnp.bool_
    params = ENV.default_params()
    assert (params.sticky_action_prob, params.difficulty_ramping, params.max_steps) == (0.1, True, 0)
