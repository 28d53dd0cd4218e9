"""Seaquest's twin against its JAX step where random play from reset rarely goes (`tests/test_twins.py` covers
that): crafted states (the parity suite's strategy and named quirk starts, also with the ring rotated so that
spawns wrap around it and land on busy slots), and long late-game episodes played by the parity suite's
surviving policy reading the twin's state (full rescue, the negative diver counter, the whole difficulty ramp,
crowded boards).

The twin plays first (a policy may read its state); the JAX step then replays the same uniforms and executed
actions through `transition`, in fixed-length chunks of one compiled scan, and everything is compared at every
step: observation, reward, terminated, truncated and the whole state."""

from __future__ import annotations

import dataclasses
from functools import partial
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import maxatar
from maxatar.core import EnvState
from maxatar.episode import TwinEnv
from maxatar.twin import load_twin
from tests.parity.test_seaquest import (
    DEAD_SUBS_FIRE,
    DIVERS_NEWEST_FIRST,
    FULL_RESCUE,
    IDENTICAL_ENEMY_BULLETS,
    LATE,
    LINED_UP,
    LINED_UP_ACTIONS,
    NEWEST_TAKES_BULLET,
    OLDEST_FISH_FIRST,
    OXYGEN_OUT,
    RAMP_LAST,
    RAMP_ODD,
    RESCUE_AT_ZERO_OXYGEN,
    SURFACE_EMPTY,
    late_game,
    start,
    start_states,
    state_from_start,
)
from tests.test_twins import assert_same_state
from tests.tiers import examples

ENV_ID = "maxatar/Seaquest-v0"
CHUNK = 64  # one compiled scan length; long episodes are replayed chunk by chunk
NOOP, LEFT, UP, RIGHT, DOWN, FIRE = range(6)


@partial(jax.jit, static_argnums=0)
def jax_chunk(env, state, rows, actions, params):
    def body(state, inputs):
        row, action = inputs
        draws = env.draws_from_uniforms(row, state, params)
        obs, state, reward, terminated, truncated, _ = env.transition(state, action, draws, params)
        return state, (obs, reward, terminated, truncated, state)

    return jax.lax.scan(body, state, (rows, actions))


def play_and_compare(state: EnvState, steps: int, policy, seed: int, sticky=0.0, ramping=True, forced=None):
    """Play `steps` steps from `state` with the twin (`policy(t, game)` gives actions), then replay them in
    JAX and compare step by step; returns the twin's per-step (pure state, reward, terminated)."""
    env, params = maxatar.make(ENV_ID, sticky_action_prob=sticky, difficulty_ramping=ramping, max_steps=0)
    n = -(-steps // CHUNK) * CHUNK
    rng = np.random.default_rng(seed)
    rows = rng.random((n, env.num_draws), dtype=np.float32)  # multiples of 2**-24, as jax.random draws
    for (t, column), value in (forced or {}).items():
        rows[t, column] = value
    twin = load_twin(env, params)
    runner = TwinEnv(env, params, twin)
    runner.game = twin.from_pure(jax.device_get(state.game))
    assert_same_state(state.game, twin.to_pure(runner.game), "start")
    np.testing.assert_array_equal(twin.observation(runner.game), env.observation(state), err_msg="start")
    runner.last_action, runner.time, runner.terminated = int(state.last_action), int(state.time), False
    actions, out = np.zeros(n, np.int32), []
    for t, row in enumerate(rows.tolist()):
        actions[t] = policy(t, runner.game) if t < steps else NOOP
        obs, reward, terminated, truncated = runner.step(int(actions[t]), row)
        out.append((obs, reward, terminated, truncated, runner.numpy_state()))

    for c in range(n // CHUNK):
        part = slice(c * CHUNK, (c + 1) * CHUNK)
        state, chunk = jax_chunk(env, state, jnp.asarray(rows[part]), jnp.asarray(actions[part]), params)
        obs, reward, terminated, truncated, states = jax.device_get(chunk)
        for i in range(CHUNK):
            t = c * CHUNK + i
            where = f"step {t + 1} (action {actions[t]})"
            o, r, te, tr, s = out[t]
            np.testing.assert_array_equal(o, obs[i], err_msg=where)
            assert o.dtype == obs.dtype and o.shape == obs.shape[1:], where
            assert type(r) is float and r == float(reward[i]), f"{where}: reward {r} != {reward[i]}"
            assert (te, tr) == (bool(terminated[i]), bool(truncated[i])), where
            expected = jax.tree.map(lambda x, i=i: x[i], states)
            assert_same_state(expected, s, where)
    return [(s.game, r, te) for _, r, te, _, s in out[:steps]]


def random_policy(seed):
    rng = np.random.default_rng(seed)
    return lambda t, game: int(rng.integers(6))


def scripted(actions):
    return lambda t, game: actions[t] if t < len(actions) else NOOP


def reference_view(game):
    """The twin's state as the reference's game attributes and lists (`ref.env`), for the parity suite's policy."""
    return SimpleNamespace(
        **{name: getattr(game, name) for name in ("sub_x", "sub_y", "sub_or", "oxygen", "diver_count")},
        **{name: getattr(game, name) for name in ("shot_timer", "e_spawn_timer", "e_spawn_speed", "move_speed")},
        e_subs=[(e.x, e.y, e.lr, e.move, e.shot) for e in game.enemies if e.sub],
        e_fish=[(e.x, e.y, e.lr, e.move) for e in game.enemies if not e.sub],
        e_bullets=[(s.bx, s.y, s.lr) for s in game.shots],
        divers=[(d[2], d[3], d[1], d[4]) for d in game.divers if d[0]],
    )


def surviving_policy(seed, noise):
    policy = late_game(np.random.default_rng(seed), noise)
    return lambda t, game: policy(t, reference_view(game))


# --- crafted states -------------------------------------------------------------------------------------------


def at_start(game) -> EnvState:
    """A crafted game as a fresh episode's state (step 0, action 0, not terminated), as `reset` would wrap it."""
    return EnvState(game=game, last_action=jnp.int32(0), time=jnp.int32(0), terminated=jnp.bool_(False))


@st.composite
def rotated(draw, begin):
    """The JAX state of a crafted start, optionally with the ring rotated (`e_next` anywhere: the spawn order
    starts elsewhere and a spawn may find its slot busy, which sets `overflow`) and the spawn timers due."""
    game = state_from_start(begin).game
    if draw(st.booleans()):
        game = dataclasses.replace(game, e_next=jnp.int8(draw(st.integers(0, 29))))
    if draw(st.booleans()):
        game = dataclasses.replace(game, d_spawn_timer=jnp.int8(0), e_spawn_timer=jnp.int8(0))
    return at_start(game)


# LINED_UP's fish: the enemy spawn of step 6 is a left-moving fish on row 3 (row columns: sticky, e_lr, e_sub,
# e_row, d_lr, d_row)
LINED_UP_ROWS = {(5, 1): 0.75, (5, 2): 0.9, (5, 3): 0.3125}


named = state_from_start


@settings(max_examples=examples(30), deadline=None)
@given(
    state=start_states().flatmap(rotated),
    seed=st.integers(0, 2**31 - 1),
    sticky=st.sampled_from([0.0, 0.1, 0.5]),
    ramping=st.booleans(),
    actions=st.none() | st.lists(st.integers(0, 5), max_size=CHUNK),
)
@example(state=named(OXYGEN_OUT), seed=0, sticky=0.0, ramping=True, actions=[NOOP] * 3)
@example(state=named(FULL_RESCUE), seed=1, sticky=0.0, ramping=True, actions=[UP, DOWN, UP, DOWN, UP, NOOP])
@example(state=named(RESCUE_AT_ZERO_OXYGEN), seed=2, sticky=0.0, ramping=True, actions=[UP, NOOP])
@example(state=named(SURFACE_EMPTY), seed=3, sticky=0.0, ramping=True, actions=[UP, NOOP])
@example(state=named(RAMP_LAST), seed=4, sticky=0.0, ramping=True, actions=[UP, DOWN, UP])
@example(state=named(RAMP_ODD), seed=5, sticky=0.0, ramping=True, actions=[UP])
@example(state=named(RAMP_ODD), seed=5, sticky=0.0, ramping=False, actions=[UP])
@example(state=named(DEAD_SUBS_FIRE), seed=6, sticky=0.0, ramping=True, actions=[NOOP, NOOP])
@example(state=named(NEWEST_TAKES_BULLET), seed=7, sticky=0.0, ramping=True, actions=[NOOP, NOOP])
@example(state=named(OLDEST_FISH_FIRST), seed=8, sticky=0.0, ramping=True, actions=[NOOP, NOOP])
@example(state=named(DIVERS_NEWEST_FIRST), seed=9, sticky=0.0, ramping=True, actions=[NOOP, NOOP])
@example(state=named(IDENTICAL_ENEMY_BULLETS), seed=10, sticky=0.0, ramping=True, actions=[NOOP, NOOP])
def test_twin_matches_jax_from_crafted_states(state, seed, sticky, ramping, actions):
    """A chunk of steps from a crafted state: scripted actions (then NOOP), or random ones if `actions` is None."""
    policy = random_policy(seed) if actions is None else scripted(actions)
    play_and_compare(state, CHUNK, policy, seed, sticky, ramping)


def test_lined_up_friendly_bullets():
    """The parity suite's LINED_UP: two equal friendly bullets, the newer hitting the fish spawned on the edge."""
    out = play_and_compare(named(LINED_UP), CHUNK, scripted(LINED_UP_ACTIONS), 11, forced=LINED_UP_ROWS)
    game = out[5][0]
    assert out[5][1] == 1.0 and int(game.f_bullets) & (1 | 1 << 10) == 0 and int(game.e_alive) == 0


@pytest.mark.parametrize("entity", ["enemy", "enemy bullet", "diver", "friendly bullet"])
def test_overflow_paths(entity):
    """Unreachable in play, but a JAX state all the same: a spawn or shot finding no free slot or record sets
    `overflow` (a sub firing while its bullet flies moves its bullet back to itself)."""
    begin = start(sub=(4, 3, False), spawn=(20, 20), d_spawn_timer=30, shot_timer=1, e_subs=[(5, 2, True, 3, 0)])
    if entity == "diver":
        begin.update(d_spawn_timer=0, divers=[(1, 7, True, 4), (8, 8, False, 2)])
    if entity == "friendly bullet":
        begin.update(shot_timer=0, f_bullets=[(2, 5, False), (3, 6, False)])
    game = state_from_start(begin).game
    if entity == "enemy":  # the next spawn's slot is the live sub's, the spawn due and moving its way
        game = dataclasses.replace(game, e_next=jnp.int8(0), e_spawn_timer=jnp.int8(0))
    if entity == "enemy bullet":  # the sub's own bullet flies (at x = 7: x + 2 = 9 in its planes)
        game = dataclasses.replace(game, b_alive=jnp.uint32(1), b_x=tuple(jnp.uint32(9 >> b & 1) for b in range(4)))
    out = play_and_compare(at_start(game), CHUNK, scripted([FIRE]), 12, forced={(0, 1): 0.25})
    assert bool(out[0][0].overflow)


# --- long late-game episodes ----------------------------------------------------------------------------------


def counts(states, name):
    return np.array([int(getattr(s, name)) for s, _, _ in states])


def test_late_game_from_reset():
    """From reset: divers fetched, a full rescue (counter 6 -> -1, oxygen bonus), then bobbing up to the end
    of the ramp (a spawn every step, move interval 2) and on for over a thousand steps, crowded, until a
    repeated (sticky) action kills the sub."""
    env, params = maxatar.make(ENV_ID)
    _, state = env.reset_from_uniforms(jnp.zeros(0), params)
    out = play_and_compare(state, 2000, surviving_policy(3, 0.0), seed=3, sticky=0.1)
    count, rewards = counts(out, "diver_count"), np.array([r for _, r, _ in out])
    assert any(count[t] == 6 and count[t + 1] == -1 and rewards[t + 1] >= 1 for t in range(len(out) - 1))
    end = [te for _, _, te in out].index(True)
    assert count[end] <= -300 and counts(out, "ramp_index")[end] == 19
    late = (counts(out, "e_spawn_speed") == 1) & (counts(out, "move_speed") == 2)
    assert late[:end].sum() >= 1000
    assert max(bin(int(s.e_alive)).count("1") for s, _, _ in out) >= 18


def test_late_game_crowded_and_without_ramp():
    """The densest board from the start (a spawn every step, move interval 2, ~20 enemies and 5 enemy
    bullets on the board); then from reset with the ramp off (spawn interval 20 and move interval 5
    throughout), past many surfacings to the end."""
    env, params = maxatar.make(ENV_ID)
    out = play_and_compare(named(start(**LATE)), 1000, surviving_policy(3, 0.02), seed=3)
    assert max(bin(int(s.e_alive)).count("1") for s, _, _ in out) >= 20
    assert max(bin(int(s.b_alive)).count("1") for s, _, _ in out) >= 5
    _, state = env.reset_from_uniforms(jnp.zeros(0), params)
    out = play_and_compare(state, 1500, surviving_policy(5, 0.0), seed=5, sticky=0.1, ramping=False)
    assert (counts(out, "e_spawn_speed") == 20).all() and (counts(out, "move_speed") == 5).all()
    assert counts(out, "diver_count").min() <= -300 and any(te for _, _, te in out)
