"""Side-by-side parity of `maxatar.games.breakout.rules.Breakout` with the MinAtar 1.0.15 reference.

The reference plays with a scripted random generator; its logged draws are fed into one jitted `lax.scan` of
`transition`, and observation, reward, terminal flag, the sticky action and every internal field of the
game are compared after every step.

Episodes come from four generators:
* hypothesis-chosen action lists with hypothesis-chosen draws (short, random play);
* explicit action strings with seeded draws, including the named quirk scenarios below;
* a ball-tracking policy with seeded draws, which keeps the ball alive for hundreds of steps, so the wall
  of bricks is cleared and refilled (random play ends after about 11 steps);
* crafted game states (any wall, ball position and strike flag) followed by a few hypothesis-chosen steps.
Each named scenario is also checked to still exercise its quirk, read off the reference's own states.
"""

from __future__ import annotations

import functools
import logging

import jax
import jax.numpy as jnp
import minatar
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from maxatar.core import EnvState
from maxatar.games.breakout.rules import FULL_WALL, Breakout, BreakoutState
from maxatar.games.breakout.twin import BreakoutTwin
from tests.parity import harness
from tests.parity.harness import from_list
from tests.parity.scripted_random import HypothesisSource, SeededSource
from tests.tiers import examples

logging.getLogger().setLevel(logging.ERROR)  # minatar warns about matplotlib when an env is built

ENV = Breakout()
PAD = 2048  # the longest tracked episode
ACTIONS = "nlurdf"  # full action set, as in the reference
FIELDS = ("ball_x", "ball_y", "ball_dir", "pos", "strike", "last_x", "last_y")
# Sticky probabilities, float64 as the reference takes them (tiny ones included: see prng.float32_ceiling).
STICKY = st.one_of(st.sampled_from([0.0, 0.1, 1 / 3, 1.0, 1e-308]), st.floats(0.0, 1.0), st.floats(0.0, 1.0, width=32))


# --- the adapter ------------------------------------------------------------------------------------------


TWIN = BreakoutTwin(ENV, ENV.default_params())  # for its converter only
TWIN_ORDER = ("ball_x", "ball_y", "ball_dir", "pos", "bricks", "strike", "last_x", "last_y")  # the twin's game list


def game_from_start(start: dict) -> BreakoutState:
    """The JAX game state of a crafted start, through the twin's converter."""
    return TWIN.to_pure([start[name] for name in TWIN_ORDER])


class BreakoutParity(harness.GameAdapter):
    """The ball, paddle and strike flag as ints, the packed bricks as the reference's 10x10 map; the reset
    consumes exactly one `randint(2)`, its value the game's reset draw; a step draws only the sticky uniform."""

    env = ENV
    reset_calls = (("randint", (0, 2, None)),)

    def reset_draws(self, log):
        return jnp.int32(log[0].value)

    def snapshot(self, game) -> dict:
        values = {name: int(getattr(game, name)) for name in FIELDS}
        values["brick_map"] = game.brick_map.astype(bool)
        return values

    def port_fields(self, state: EnvState) -> dict:
        return {name: getattr(state.game, name) for name in FIELDS} | {"brick_map": Breakout.brick_map(state.game)}

    def apply_start(self, ref, start: dict) -> None:
        """Put a crafted state into the reference."""
        for name in FIELDS:
            setattr(ref.env, name, start[name])
        ref.env.brick_map = np.asarray(Breakout.brick_map(game_from_start(start)), float)  # its map holds 0/1 floats
        ref.last_action = start["last_action"]

    def port_start(self, start: dict) -> EnvState:
        return EnvState(
            game=game_from_start(start),
            last_action=jnp.int32(start["last_action"]),
            time=jnp.int32(0),
            terminated=jnp.bool_(False),
        )


BREAKOUT = BreakoutParity()


play = functools.partial(harness.play, BREAKOUT)  # (source, sticky_prob, ramping, policy, steps, start=None, ...)
check_parity = functools.partial(harness.check_parity, BREAKOUT)


# --- a ball-tracking policy, to keep the ball alive long enough to clear and refill the wall -------------


def _advance(x: int, dx: int) -> tuple[int, int]:
    x += dx
    if x < 0:
        return 0, 1
    if x > 9:
        return 9, -1
    return x, dx


def tracker(rng: np.random.Generator, lead: float):
    """A policy reading the reference's game: follow the ball while it rises; while it falls, head for one of
    the two columns that catch it (under its row-8 cell: straight bounce; under its row-9 cell: reversal),
    switching between them now and then (probability `lead`/5) to exercise both kinds of catch. Idle steps
    pick a random non-moving action."""

    def policy(t, game) -> int:
        dx = 1 if game.ball_dir in (1, 2) else -1
        if game.ball_dir >= 2:  # falling
            x = game.ball_x
            for _ in range(8 - game.ball_y):
                x, dx = _advance(x, dx)
            catch = sorted({x, _advance(x, dx)[0]})
            if game.pos in catch and not (len(catch) == 2 and rng.random() < lead * 0.2):
                return int(rng.choice([0, 2, 4, 5]))
            if game.pos < catch[0]:
                target = catch[0]
            elif game.pos > catch[-1]:
                target = catch[-1]
            else:
                target = catch[1] if game.pos == catch[0] else catch[0]
        else:
            target = game.ball_x
        if game.pos < target:
            return 3
        if game.pos > target:
            return 1
        return int(rng.choice([0, 2, 4, 5]))

    return policy


# --- named quirk scenarios ----------------------------------------------------------------------------------
# Explicit scenarios: (ball start 0 = left / 1 = right, actions as letters of "nlurdf"), no sticky actions.

SCENARIOS = {
    # The paddle sits under the ball's previous column when the ball reaches row 9: straight bounce up.
    "paddle_bounce": (1, "unfdlr"),
    # The paddle sits under the ball's new column only: the ball is sent back the way it came.
    "paddle_reverse": (0, "runrud"),
    # The ball is clamped into the edge column for one step when it meets a side wall.
    "side_wall_clamp": (1, "unfdlrllll"),
    # A brick broken in the same step as a side-wall clamp.
    "side_wall_brick": (0, "rdurndnllllfnnffrrrrrnnnufllllllrrrnfnrrrrr"),
    # A second brick in a row: no reward, the brick stays and the ball enters its cell.
    "strike_through": (1, "ndndlfurrrrfdlrnlllllffnndrrrrrrlllfulfrrrrllnfulllllrrnuurrrrrrul"),
    # The paddle misses: the terminal observation shows the ball on row 9.
    "terminal_on_row_9": (1, "rnllln"),
    # Actions after the end: the state stays frozen, the sticky draw is still consumed.
    "frozen_after_terminal": (0, "nnnnnnrrll"),
}
# Tracking-policy scenarios: (seed, lead, ball start, steps), no sticky actions.
TRACKED = {
    # All 30 bricks broken, then the refill happens only when the ball next reaches row 9.
    "delayed_refill": (54, 0.40122574799263144, 0, 336),
    # Side wall and top wall in one step: the ball stays in the corner cell.
    "corner": (40, 0.46382436008336725, 1, 176),
}
# Crafted-state scenarios: (game values, actions), no sticky actions.
CRAFTED = {
    # No bricks left when the ball reaches row 9 and the paddle misses: the wall is refilled in that same
    # terminal step, so the terminal observation shows a full wall and the ball on row 9.
    "refill_on_miss": (
        dict(ball_x=3, ball_y=8, ball_dir=2, pos=0, bricks=0, strike=False, last_x=2, last_y=7, last_action=0),
        "n",
    ),
    # Into the corner, then side and top wall at once: the ball stays on (0, 0) for a step.
    "corner": (
        dict(ball_x=1, ball_y=1, ball_dir=0, pos=4, bricks=FULL_WALL, strike=False, last_x=2, last_y=2, last_action=0),
        "nnn",
    ),
    # The strike flag stays set while the ball keeps landing on bricks (not reachable from a reset, where a
    # strike-through is always followed by an empty cell, but it pins the rule).
    "strike_tunnel": (
        dict(ball_x=5, ball_y=4, ball_dir=0, pos=4, bricks=FULL_WALL, strike=True, last_x=6, last_y=5, last_action=3),
        "nnnnnn",
    ),
}
START_UNIFORM = {0: 0.25, 1: 0.75}  # a reset uniform giving randint(2) == start


def scenario_episode(start: int, letters: str, sticky_prob=0.0, ramping=True, seed=0) -> harness.Episode:
    source = SeededSource(seed, {0: START_UNIFORM[start]})
    return play(source, sticky_prob, ramping, from_list([ACTIONS.index(c) for c in letters]), len(letters))


def tracked_episode(seed: int, lead: float, start: int, steps: int, sticky_prob=0.0, ramping=True):
    """Up to `steps` steps of the tracking policy, stopping 3 steps after the end."""
    assert steps <= PAD
    source = SeededSource(seed, {0: START_UNIFORM[start]})
    policy = tracker(np.random.default_rng(seed), lead)
    return play(source, sticky_prob, ramping, policy, steps, after_terminal=3)


def events(episode: harness.Episode) -> dict[str, int]:
    """The quirks a reference episode went through (name -> first step), read off its recorded states."""
    f, obs, terminal = episode.fields, episode.obs, episode.terminal
    seen = {}
    through_at = -2
    for t in range(episode.n):
        row = t + 1  # the state after step t; row t is the state before it
        x, y, lx, ly, pos = (f[k][row] for k in ("ball_x", "ball_y", "last_x", "last_y", "pos"))
        bricks_before, bricks = f["brick_map"][t], f["brick_map"][row]
        if terminal[t]:
            if obs[row].tobytes() == obs[t].tobytes():
                seen.setdefault("frozen_after_terminal", t)
            continue
        if terminal[row] and y == 9 and obs[row][9, x, 1]:
            seen.setdefault("terminal_on_row_9", t)
        if not terminal[row] and x == lx and x in (0, 9):
            seen.setdefault("side_wall_clamp", t)
            if episode.rewards[t]:
                seen.setdefault("side_wall_brick", t)
            if y == ly == 0:
                seen.setdefault("corner", t)
        if not terminal[row] and y == ly == 8:
            seen.setdefault("paddle_bounce" if lx == pos else "paddle_reverse", t)
        if episode.rewards[t] == 0 and bricks_before[y, x] and bricks[y, x] and f["strike"][row]:
            seen.setdefault("strike_through", t)
            if through_at == t - 1:
                seen.setdefault("strike_tunnel", t)
            through_at = t
        if bricks.sum() > bricks_before.sum():
            assert bricks_before.sum() == 0 and (y == 9 or y == ly == 8)
            seen.setdefault("refill_on_miss" if terminal[row] else "delayed_refill", t)
    return seen


def crafted_episode(start: dict, letters: str, sticky_prob=0.0, ramping=True, seed=0) -> harness.Episode:
    actions = [ACTIONS.index(c) for c in letters]
    return play(SeededSource(seed), sticky_prob, ramping, from_list(actions), len(actions), start=start)


@pytest.mark.parametrize(
    "kind, name",
    [("scripted", k) for k in SCENARIOS] + [("tracked", k) for k in TRACKED] + [("crafted", k) for k in CRAFTED],
)
def test_scenario_exercises_its_quirk_and_matches(kind, name):
    make, table = {"scripted": (scenario_episode, SCENARIOS), "tracked": (tracked_episode, TRACKED)}.get(
        kind, (crafted_episode, CRAFTED)
    )
    episode = make(*table[name])
    assert name in events(episode), f"scenario {name} no longer exercises its quirk"
    check_parity(episode)


# --- hypothesis-driven episodes ------------------------------------------------------------------------------


@settings(max_examples=examples(60))
@given(st.data())
def test_short_episodes_with_hypothesis_draws(data):
    """Random play with every draw chosen by hypothesis; actions continue past the end (frozen state)."""
    actions = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=40), label="actions")
    sticky_prob = data.draw(STICKY, label="sticky_prob")
    ramping = data.draw(st.booleans(), label="ramping")
    check_parity(play(HypothesisSource(data), sticky_prob, ramping, from_list(actions), len(actions)))


def _named(name):
    start, letters = SCENARIOS[name]
    return example(start=start, letters=letters, sticky_prob=0.0, ramping=True, seed=0)


@settings(max_examples=examples(25))
@given(
    start=st.integers(0, 1),
    letters=st.text(alphabet=ACTIONS, min_size=1, max_size=120),
    sticky_prob=STICKY,
    ramping=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@_named("paddle_bounce")
@_named("paddle_reverse")
@_named("side_wall_clamp")
@_named("side_wall_brick")
@_named("strike_through")
@_named("terminal_on_row_9")
@_named("frozen_after_terminal")
@example(start=1, letters="rrrrrrrrrrrrrrrrrrrrrrrrrrrrrr", sticky_prob=1.0, ramping=False, seed=7)  # always noop
def test_scripted_episodes(start, letters, sticky_prob, ramping, seed):
    check_parity(scenario_episode(start, letters, sticky_prob, ramping, seed))


def _tracked(name, ramping):
    seed, lead, start, steps = TRACKED[name]
    return example(seed=seed, lead=lead, start=start, steps=steps, sticky_prob=0.0, ramping=ramping)


@settings(max_examples=examples(20))
@given(
    seed=st.integers(0, 2**32 - 1),
    lead=st.floats(0.0, 1.0),
    start=st.integers(0, 1),
    steps=st.integers(64, PAD),
    sticky_prob=st.sampled_from([0.0, 0.0, 0.02, 0.05, 0.1]),
    ramping=st.booleans(),
)
@_tracked("delayed_refill", ramping=True)
@_tracked("corner", ramping=False)
@example(seed=54, lead=0.40122574799263144, start=0, steps=PAD, sticky_prob=0.0, ramping=True)  # many refills
def test_tracked_long_episodes(seed, lead, start, steps, sticky_prob, ramping):
    check_parity(tracked_episode(seed, lead, start, steps, sticky_prob, ramping))


def _bits(cells):
    return sum(1 << c for c in set(cells))


BRICKS = st.one_of(
    st.sampled_from([0, FULL_WALL]),
    st.integers(0, FULL_WALL),
    st.lists(st.integers(0, 29), max_size=3).map(_bits),
    st.lists(st.integers(0, 29), max_size=3).map(lambda cells: FULL_WALL ^ _bits(cells)),
)
STATES = st.fixed_dictionaries(
    dict(
        ball_x=st.integers(0, 9),
        ball_y=st.integers(0, 8),
        ball_dir=st.integers(0, 3),
        pos=st.integers(0, 9),
        bricks=BRICKS,
        strike=st.booleans(),
        last_x=st.integers(0, 9),
        last_y=st.integers(0, 9),
        last_action=st.integers(0, 5),
    )
)


@settings(max_examples=examples(80))
@given(st.data())
def test_from_arbitrary_states(data):
    """Short episodes from any live game state (ball above row 9, any wall, strike on or off)."""
    start = data.draw(STATES, label="start")
    actions = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=12), label="actions")
    sticky_prob = data.draw(STICKY, label="sticky_prob")
    check_parity(play(HypothesisSource(data), sticky_prob, True, from_list(actions), len(actions), start=start))


# --- draws: when and how they are sampled ---------------------------------------------------------------


def test_draws_match_the_reference_calls():
    """The reference draws `randint(2)` at reset and one `rand()` per step, before and after the end;
    `sample_draws` draws exactly the sticky uniform and nothing for the game."""
    episode = scenario_episode(0, "nnnnnnnnnn", sticky_prob=0.1)
    assert episode.terminal[-1]
    # asserts the single randint(2) at reset and a single rand() per step, terminal steps included
    harness.check_draw_calls(BREAKOUT, episode, check_parity(episode))
    assert (ENV.num_reset_uniforms, ENV.num_step_uniforms, ENV.num_draws) == (1, 0, 1)
    params = ENV.default_params()
    _, state = ENV.reset(jax.random.key(0), params)
    draws = ENV.sample_draws(jax.random.key(1), state, params)
    assert jax.tree.leaves(draws.game) == [] and jnp.shape(draws.sticky) == ()
    reset = ENV.sample_reset_draws(jax.random.key(2), params)
    assert jnp.shape(reset) == () and jnp.issubdtype(reset.dtype, jnp.integer)
    # The reset map reads a uniform as randint(2) does: [0, 0.5) -> 0, [0.5, 1) -> 1.
    edges = np.array([0.0, np.nextafter(np.float32(0.5), np.float32(0)), 0.5, np.nextafter(np.float32(1), 0)])
    got = [int(ENV.reset_draws(jnp.asarray([u], jnp.float32), params)) for u in edges]
    assert got == [0, 0, 1, 1]


def test_draw_distributions():
    params = ENV.default_params()
    keys = jax.random.split(jax.random.key(123), 20_000)
    _, states = jax.vmap(lambda k: ENV.reset(k, params))(keys)
    starts = np.asarray(jax.vmap(lambda k: ENV.sample_reset_draws(k, params))(keys))
    assert set(np.unique(starts)) == {0, 1} and abs(starts.mean() - 0.5) < 0.015
    ball_x = np.asarray(states.game.ball_x)
    assert set(np.unique(ball_x)) == {0, 9} and abs((ball_x == 9).mean() - 0.5) < 0.015
    draws = jax.vmap(lambda k, s: ENV.sample_draws(k, s, params))(keys, states)
    sticky = np.asarray(draws.sticky)
    assert sticky.min() >= 0.0 and sticky.max() < 1.0
    assert abs(sticky.mean() - 0.5) < 0.01 and abs((sticky < 0.1).mean() - 0.1) < 0.01


def test_minimal_action_set_matches_reference():
    ref = minatar.Environment("breakout")
    assert tuple(ref.minimal_action_set()) == Breakout.minimal_action_set == Breakout(minimal_actions=True).action_set
