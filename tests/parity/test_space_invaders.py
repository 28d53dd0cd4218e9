"""Step-by-step parity of `maxatar.envs.space_invaders` with minatar 1.0.15's SpaceInvaders.

The reference is played with a scripted RandomState (it only ever draws the sticky-action uniform: the game
itself is deterministic); the logged draws are fed to one jitted `lax.scan` of `transition`, and after every
step the observation, reward, terminal flag, executed action and the game's internal state are compared.
Episodes come from three drivers: hypothesis-chosen action lists, compact segment recipes that cycle up to
thousands of steps, and a scripted policy (dodges bullets, fires when a shot would hit) that clears wave after
wave, so the difficulty ramp is exercised to its end. Named deterministic episodes pin the game's quirks.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import minatar
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minatar.environments.space_invaders import Env as ReferenceGame

from maxatar.core import Draws, EnvParams, check_params
from maxatar.envs.space_invaders import SpaceInvaders, unpack_rows
from tests.parity.scripted_random import UNIFORM32, HypothesisSource, ScriptedRandom, SeededSource, attach

ENV = SpaceInvaders()
CAP = 3000  # steps played before giving up on termination
AFTER = 3  # steps played after termination (the reference and core both freeze, the sticky draw continues)
PAD = CAP + AFTER  # fixed scan length: one compilation for every episode
FIELDS = (
    "pos",
    "alien_map",
    "f_bullet_map",
    "e_bullet_map",
    "alien_dir",
    "enemy_move_interval",
    "alien_move_timer",
    "alien_shot_timer",
    "ramp_index",
    "shot_timer",
)
STICKY = st.one_of(st.sampled_from([0.0, 0.1, 1.0]), UNIFORM32)

# --------------------------------------------------------------------------------------------------------------
# The reference side


@dataclasses.dataclass
class Trace:
    """One reference episode: per-step arrays (index t = after step t+1) plus the reset's view."""

    p: float
    ramping: bool
    actions: np.ndarray  # chosen (full-set) actions
    sticky: np.ndarray  # the sticky uniform consumed at each step (float32 values)
    executed: np.ndarray  # Environment.last_action after each step
    reward: np.ndarray
    terminal: np.ndarray
    obs: np.ndarray  # (T, 10, 10, 6)
    state: dict[str, np.ndarray]  # FIELDS -> (T, ...)
    reset_obs: np.ndarray
    reset_state: dict[str, np.ndarray]


def _snapshot(game) -> dict:
    return {f: np.array(getattr(game, f)) for f in FIELDS}


def _stack(snapshots: list[dict]) -> dict[str, np.ndarray]:
    """Per-field arrays; the reference's float 0/1 maps become booleans (checked to hold nothing else)."""
    out = {f: np.stack([s[f] for s in snapshots]) for f in FIELDS}
    for f in ("alien_map", "f_bullet_map", "e_bullet_map"):
        assert ((out[f] == 0) | (out[f] == 1)).all(), f"reference {f} holds values other than 0/1"
        out[f] = out[f].astype(bool)
    return out


def play_reference(choose: Callable[[int, object], int | None], source, p: float, ramping: bool) -> Trace:
    """Play until terminal (then AFTER more steps), until `choose` returns None, or CAP steps."""
    env = minatar.Environment("space_invaders", sticky_action_prob=p, difficulty_ramping=ramping)
    scripted = attach(env, ScriptedRandom(source))
    env.reset()
    assert scripted.take_log() == [], "space_invaders' reset draws nothing"
    reset_obs, reset_state = env.state(), {f: v[0] for f, v in _stack([_snapshot(env.env)]).items()}
    rows: list[tuple] = []
    after = 0
    for t in range(CAP + AFTER):
        action = choose(t, env.env) if not env.env.terminal else 0
        if action is None or (t >= CAP and not env.env.terminal):
            break
        reward, terminal = env.act(action)
        log = scripted.take_log()
        # The bridge: each step consumes exactly one float uniform, the sticky draw; the game draws nothing.
        assert [(c.method, c.args) for c in log] == [("rand", ())], f"step {t}: unexpected draws {log}"
        rows.append((action, log[0].value, env.last_action, reward, terminal, env.state(), _snapshot(env.env)))
        if terminal:
            after += 1
            if after > AFTER:
                break
    actions, sticky, executed, reward, terminal, obs, states = zip(*rows, strict=True)
    return Trace(
        p=p,
        ramping=ramping,
        actions=np.array(actions, np.int32),
        sticky=np.array(sticky, np.float32),
        executed=np.array(executed),
        reward=np.array(reward, np.float64),
        terminal=np.array(terminal),
        obs=np.stack(obs),
        state=_stack(states),
        reset_obs=reset_obs,
        reset_state=reset_state,
    )


# --------------------------------------------------------------------------------------------------------------
# The JAX side: one jitted scan of `transition` over a padded episode


def reference_view(game) -> dict[str, jax.Array]:
    """Our game state under the reference's attribute names (row masks unpacked into boolean grids)."""
    view = {f: getattr(game, f) for f in FIELDS if hasattr(game, f)}
    for name in ("alien", "f_bullet", "e_bullet"):
        view[f"{name}_map"] = unpack_rows(getattr(game, f"{name}_rows"))
    assert set(view) == set(FIELDS)
    return view


@jax.jit
def _run(actions, sticky, params):
    obs0, state0 = ENV.reset(jax.random.key(0), params)

    def body(state, xs):
        action, u = xs
        obs, state, reward, terminated, _, _ = ENV.transition(state, action, Draws(sticky=u, game=()), params)
        return state, (obs, reward, terminated, state.last_action, state.game)

    _, (obs, reward, terminated, executed, game) = jax.lax.scan(body, state0, (actions, sticky))
    return obs0, reference_view(state0.game), (obs, reward, terminated, executed, reference_view(game))


def run_jax(trace: Trace):
    n = len(trace.actions)
    assert n <= PAD
    actions = np.zeros(PAD, np.int32)
    actions[:n] = trace.actions
    sticky = np.full(PAD, 0.5, np.float32)
    sticky[:n] = trace.sticky
    # check_params stores the float64 probability as its float32 ceiling, which decides float32 draws exactly.
    p = check_params(EnvParams(sticky_action_prob=trace.p)).sticky_action_prob
    params = EnvParams(jnp.float32(p), jnp.bool_(trace.ramping), jnp.int32(0))
    return jax.device_get(_run(jnp.asarray(actions), jnp.asarray(sticky), params))


def assert_parity(trace: Trace) -> None:
    obs0, game0, (obs, reward, terminated, executed, game) = run_jax(trace)
    np.testing.assert_array_equal(obs0, trace.reset_obs, err_msg="observation after reset")
    for f in FIELDS:
        np.testing.assert_array_equal(game0[f], trace.reset_state[f], err_msg=f"state.{f} after reset")
    n = len(trace.actions)
    ours = {
        "observation": obs[:n],
        "reward": reward[:n],
        "terminal": terminated[:n],
        "executed action": executed[:n],
        **{f"state.{f}": game[f][:n] for f in FIELDS},
    }
    theirs = {
        "observation": trace.obs,
        "reward": trace.reward,
        "terminal": trace.terminal,
        "executed action": trace.executed,
        **{f"state.{f}": trace.state[f] for f in FIELDS},
    }
    first_bad = []
    for name, mine in ours.items():
        ref = np.asarray(theirs[name])
        assert mine.shape == ref.shape, f"{name}: shape {mine.shape} vs reference {ref.shape}"
        differs = (mine != ref).reshape(n, -1).any(axis=1)
        if differs.any():
            first_bad.append((int(np.argmax(differs)), name))
    if first_bad:
        t, name = min(first_bad)
        fields = ", ".join(nm for s, nm in sorted(first_bad) if s == t)
        raise AssertionError(
            f"step {t} (1-based {t + 1}, chosen action {trace.actions[t]}, executed {trace.executed[t]}): "
            f"{fields} differ(s); first: {name}\nours:\n{ours[name][t]}\nreference:\n{theirs[name][t]}"
        )


# --------------------------------------------------------------------------------------------------------------
# Action drivers


def from_list(actions) -> Callable:
    return lambda t, game: int(actions[t]) if t < len(actions) else None


def from_segments(segments) -> Callable:
    """A compact recipe: (action, repeat) segments cycled until the episode ends."""
    expanded = list(itertools.chain.from_iterable([a] * k for a, k in segments))
    return lambda t, game: expanded[t % len(expanded)]


_SIM = ReferenceGame()


def _shot_outcome(game) -> np.ndarray | None:
    """Simulate firing now (then idling) on a copy of the reference game: the alien map just after the new
    bullet kills, or None if it would miss."""
    for f in ("pos", "alien_dir", "enemy_move_interval", "alien_move_timer", "alien_shot_timer", "shot_timer"):
        setattr(_SIM, f, getattr(game, f))
    for f in ("alien_map", "e_bullet_map", "f_bullet_map"):
        setattr(_SIM, f, getattr(game, f).copy())
    col = game.pos
    for k in range(9):
        _SIM.terminal = False
        _SIM.act(5 if k == 0 else 0)
        if not _SIM.f_bullet_map[8 - k, col]:
            return _SIM.alien_map > 0
        if not _SIM.alien_map[: 8 - k].any():  # above every alien: aliens step down at most once meanwhile
            return None
    return None


def scripted_policy(seed: int, eps: float, fire: bool = True) -> Callable:
    """Dodge enemy bullets and low aliens, fire (if allowed) when the shot would hit, else chase the lowest alien
    (leading it when few are left and fast). With probability eps a uniformly random action instead."""
    rng = np.random.default_rng(seed)

    def choose(t, game):
        if rng.random() < eps:
            return int(rng.integers(6))
        pos = game.pos
        aliens, bullets = game.alien_map > 0, game.e_bullet_map > 0

        def danger(c):
            return c < 0 or c > 9 or bullets[6:9, c].any() or aliens[9, max(c - 1, 0) : c + 2].any() or aliens[8, c]

        if danger(pos):
            for c in (pos - 1, pos + 1):
                if not danger(c):
                    return 1 if c < pos else 3
        if fire and game.shot_timer == 0 and _shot_outcome(game) is not None:
            return 5
        rows, cols = np.nonzero(aliens)
        target = cols[np.argmin(-20 * rows + np.abs(cols - pos))]
        lead = 2 if len(rows) <= 4 else 1 if len(rows) <= 10 else 0
        target = int(np.clip(target + game.alien_dir * lead, 0, 9))
        if target < pos and not danger(pos - 1):
            return 1
        if target > pos and not danger(pos + 1):
            return 3
        return 0

    return choose


# --------------------------------------------------------------------------------------------------------------
# Hypothesis-driven episodes


@settings(max_examples=20)
@given(
    data=st.data(),
    p=STICKY,
    ramping=st.booleans(),
    actions=st.lists(st.integers(0, 5), min_size=1, max_size=250),
)
def test_random_episodes(data, p, ramping, actions):
    """Short episodes; every action and every sticky uniform chosen by hypothesis."""
    assert_parity(play_reference(from_list(actions), HypothesisSource(data), p, ramping))


def seeded_segments(seed: int, count: int, fire_weight: int, max_repeat: int) -> list[tuple[int, int]]:
    """`count` (action, repeat) segments; fire is `fire_weight` times as likely as each other action."""
    rng = np.random.default_rng(seed)
    weights = np.array([1, 1, 1, 1, 1, fire_weight], float)
    actions = rng.choice(6, size=count, p=weights / weights.sum())
    return [(int(a), int(rng.integers(1, max_repeat + 1))) for a in actions]


@settings(max_examples=12)
@given(
    seed=st.integers(0, 2**32 - 1),
    p=STICKY,
    ramping=st.booleans(),
    count=st.integers(1, 16),
    fire_weight=st.integers(0, 5),
    max_repeat=st.integers(1, 12),
)
def test_segment_recipes(seed, p, ramping, count, fire_weight, max_repeat):
    """Segment recipes (fire-heavy or not) cycled to termination or CAP steps; sticky uniforms from a seed."""
    segments = seeded_segments(seed, count, fire_weight, max_repeat)
    assert_parity(play_reference(from_segments(segments), SeededSource(seed), p, ramping))


@settings(max_examples=5)
@given(
    seed=st.integers(0, 2**32 - 1),
    eps=st.sampled_from([0.02, 0.0, 0.05, 0.2]),
    p=st.one_of(st.sampled_from([0.1, 0.0]), st.floats(0.0, 0.25, width=32)),
    ramping=st.sampled_from([True, False]),
)
def test_policy_episodes(seed, eps, p, ramping):
    """Long episodes from the scripted policy: several waves cleared, the move timer ramped down."""
    assert_parity(play_reference(scripted_policy(seed, eps), SeededSource(seed), p, ramping))


# --------------------------------------------------------------------------------------------------------------
# Named deterministic episodes, each checked for parity and for actually exercising its quirk


def _count(trace, t):
    return int(trace.state["alien_map"][t].sum()) if t >= 0 else int(trace.reset_state["alien_map"].sum())


def _before(trace, field, t):
    return trace.state[field][t - 1] if t > 0 else trace.reset_state[field]


def enemy_bullet_dodged_by_moving(trace) -> bool:
    """An enemy bullet reached row 9 at the cannon's old column, the cannon moved away and survived."""
    return any(
        trace.state["e_bullet_map"][t][9, _before(trace, "pos", t)]
        and trace.state["pos"][t] != _before(trace, "pos", t)
        and not trace.terminal[t]
        for t in range(len(trace.actions))
    )


def enemy_bullet_walked_into(trace) -> bool:
    """The cannon moved into a column whose enemy bullet reached row 9 this step, and died."""
    return any(
        trace.terminal[t]
        and trace.state["pos"][t] != _before(trace, "pos", t)
        and trace.state["e_bullet_map"][t][9, trace.state["pos"][t]]
        and not _before(trace, "e_bullet_map", t)[8, _before(trace, "pos", t)]
        for t in range(len(trace.actions))
    )


def shot_tie_went_left(trace) -> bool:
    """An alien shot while occupied columns sat at equal distance on both sides of the cannon: the left one fired.
    Only kill-free steps count, so the map after the step is the map the shot was chosen from."""
    for t in range(len(trace.actions)):
        if _before(trace, "alien_shot_timer", t) != 0 or trace.reward[t] or trace.terminal[t]:
            continue
        pos = int(trace.state["pos"][t])
        new = trace.state["e_bullet_map"][t] & ~np.roll(_before(trace, "e_bullet_map", t), 1, axis=0)
        cols = np.flatnonzero(new.any(axis=0))
        occupied = trace.state["alien_map"][t].any(axis=0)
        if len(cols) == 1 and cols[0] < pos and 2 * pos - cols[0] <= 9:
            left, right = int(cols[0]), 2 * pos - int(cols[0])
            if occupied[right] and not occupied[left + 1 : right].any():
                return True
    return False


def move_timer_from_alien_count(trace) -> bool:
    """The move timer was reloaded with the number of aliens (< interval)."""
    for t in range(len(trace.actions)):
        if _before(trace, "alien_move_timer", t) == 0 and not trace.terminal[t]:
            count = _count(trace, t - 1)
            if count < trace.state["enemy_move_interval"][t] and trace.state["alien_move_timer"][t] == count - 1:
                return True
    return False


def wave_respawn_keeps_timer(trace) -> bool:
    """A new 24-alien wave spawned and the move timer carried on instead of restarting."""
    for t in range(1, len(trace.actions)):
        if _count(trace, t - 1) < 24 and _count(trace, t) == 24 and not trace.terminal[t]:
            fresh = np.zeros((10, 10), bool)
            fresh[0:4, 2:8] = True
            if (trace.state["alien_map"][t] > 0).tolist() == fresh.tolist():
                if trace.state["alien_move_timer"][t] < trace.state["enemy_move_interval"][t] - 1:
                    return True
    return False


def bullet_swapped_with_alien(trace) -> bool:
    """A descending alien and a rising bullet swapped cells and both survived."""
    for t in range(1, len(trace.actions)):
        fb, ab = _before(trace, "f_bullet_map", t) > 0, _before(trace, "alien_map", t) > 0
        fa, aa = trace.state["f_bullet_map"][t] > 0, trace.state["alien_map"][t] > 0
        swapped = fb[1:] & ab[:-1] & fa[:-1] & aa[1:]
        if swapped.any():
            return True
    return False


def never_moved(trace) -> bool:
    """With sticky probability 1 the first executed action (noop, the initial last action) repeats forever."""
    return (trace.executed == 0).all() and (trace.state["pos"] == 5).all() and trace.terminal[-1]


def terminal_step_rewarded(trace) -> bool:
    return any(trace.terminal[t] and trace.reward[t] > 0 for t in range(len(trace.actions)))


def aliens_landed(trace) -> bool:
    """Terminal because an alien on row 9 hit the wall and the wave stepped down (wrapping to row 0)."""
    for t in range(len(trace.actions)):
        before = _before(trace, "alien_map", t) > 0
        after = trace.state["alien_map"][t] > 0
        if trace.terminal[t] and before[9].any() and after[0].any() and not before[0].any():
            return True
    return False


def ramped_to(level):
    def reached(trace) -> bool:
        return trace.state["ramp_index"].max() >= level

    reached.__name__ = f"ramp_index_reaches_{level}"
    return reached


def ramp_bottoms_out(trace) -> bool:
    """After six ramps the interval sits at 6 and further cleared waves no longer ramp."""
    interval, ramp = trace.state["enemy_move_interval"], trace.state["ramp_index"]
    return interval.min() == 6 and ramp.max() == 6 and trace.reward.sum() > 6 * 24


def waves_cleared_without_ramp(trace) -> bool:
    interval, ramp = trace.state["enemy_move_interval"], trace.state["ramp_index"]
    return trace.reward.sum() >= 48 and ramp.max() == 0 and (interval == 12).all()


def initial_wave_is_24(trace) -> bool:
    fresh = np.zeros((10, 10), bool)
    fresh[0:4, 2:8] = True
    return (trace.reset_state["alien_map"] > 0).tolist() == fresh.tolist()


def landing_policy() -> Callable:
    """Shoot only the lower aliens of the wave's three right columns (never a column's last alien), then park on
    the right: the wave keeps its width while its bottom row is narrow, so that row reaches row 9 and hits the
    left wall without ever sweeping over the cannon."""

    def choose(t, game):
        pos = game.pos
        aliens, bullets = game.alien_map > 0, game.e_bullet_map > 0

        def danger(c):
            return c < 0 or c > 9 or bullets[6:9, c].any() or aliens[9, max(c - 1, 0) : c + 2].any() or aliens[8, c]

        if danger(pos):
            for c in (pos + 1, pos - 1):
                if not danger(c):
                    return 1 if c < pos else 3
        left = np.flatnonzero(aliens.any(axis=0))[0]
        todo = [c for c in range(left + 3, min(left + 6, 10)) if aliens[:, c].sum() >= 2]
        if game.shot_timer == 0 and todo:
            after = _shot_outcome(game)
            if after is not None and after[:, pos].any() and pos - np.flatnonzero(after.any(axis=0))[0] >= 3:
                return 5
        target = min(todo, key=lambda c: abs(c - pos)) if todo else 9
        if target != pos and not danger(pos + np.sign(target - pos)):
            return 1 if target < pos else 3
        return 0

    return choose


@dataclasses.dataclass(frozen=True)
class Named:
    """A deterministic episode and the quirks it must exercise (checked, so it cannot silently stop doing so)."""

    driver: Callable[[], Callable]  # builds a fresh (possibly stateful) action chooser
    seed: int  # SeededSource seed for the sticky uniforms
    p: float
    ramping: bool
    quirks: tuple[Callable, ...]


NAMED = {
    # the first enemy shot (step 11, cannon in column 5) drops from (3, 5) and reaches row 9 on step 17
    "enemy_bullet_dodged_at_new_position": Named(
        lambda: from_list([0] * 16 + [1, 0]), 0, 0.0, True, (initial_wave_is_24, enemy_bullet_dodged_by_moving)
    ),
    "enemy_bullet_walked_into_at_new_position": Named(
        lambda: from_list([0] * 11 + [1] + [0] * 4 + [3, 0]), 0, 0.0, True, (enemy_bullet_walked_into,)
    ),
    "policy_clears_waves_ramping": Named(
        lambda: scripted_policy(0, 0.05),
        0,
        0.1,
        True,
        (
            ramped_to(2),
            ramp_bottoms_out,
            shot_tie_went_left,
            move_timer_from_alien_count,
            wave_respawn_keeps_timer,
            enemy_bullet_dodged_by_moving,
        ),
    ),
    "policy_clears_waves_no_ramping": Named(
        lambda: scripted_policy(1, 0.05), 1, 0.1, False, (waves_cleared_without_ramp, wave_respawn_keeps_timer)
    ),
    "bullet_and_alien_swap_cells": Named(
        lambda: from_segments([(1, 5), (5, 5), (3, 4), (5, 2), (3, 2), (5, 4), (3, 3), (5, 7)]),
        180,
        0.1,
        True,
        (bullet_swapped_with_alien,),
    ),
    "terminal_step_still_rewarded": Named(
        lambda: from_segments([(1, 6), (3, 5), (3, 5), (3, 1), (1, 5), (5, 7), (1, 3), (5, 1)]),
        21,
        0.1,
        True,
        (terminal_step_rewarded,),
    ),
    "aliens_land_flip_and_descend": Named(landing_policy, 0, 0.0, True, (aliens_landed,)),
    "always_sticky_never_moves": Named(lambda: from_segments([(5, 3), (3, 2), (1, 1)]), 5, 1.0, True, (never_moved,)),
}


@pytest.mark.parametrize("name", list(NAMED))
def test_named_episode(name):
    spec = NAMED[name]
    trace = play_reference(spec.driver(), SeededSource(spec.seed), spec.p, spec.ramping)
    missing = [q.__name__ for q in spec.quirks if not q(trace)]
    assert not missing, f"episode {name!r} no longer exercises {missing}"
    assert_parity(trace)


# --------------------------------------------------------------------------------------------------------------
# Draws: when and how


def test_draws_match_reference_timing():
    """The reference draws exactly one uniform per step (the sticky one) and none at reset, at every step,
    terminal or not; `sample_draws` produces exactly that: one float32 sticky scalar and no game variates."""
    # idle until the first enemy bullet lands (step 17), then AFTER frozen steps: play_reference checks each log
    trace = play_reference(from_list([0] * 40), SeededSource(7), 0.1, True)
    assert len(trace.actions) == 17 + AFTER and trace.terminal[16:].all() and not trace.terminal[:16].any()
    params = ENV.default_params()
    assert ENV.num_reset_uniforms == 0 and ENV.num_step_uniforms == 0 and ENV.num_draws == 1
    assert jax.tree.leaves(jax.eval_shape(ENV.sample_reset_draws, jax.random.key(1), params)) == []
    draws = jax.eval_shape(lambda k: ENV.sample_draws(k, ENV.reset(k, params)[1], params), jax.random.key(2))
    assert jax.tree.structure(draws) == jax.tree.structure(Draws(sticky=jnp.float32(0.0), game=()))
    assert draws.sticky.shape == () and draws.sticky.dtype == jnp.float32


def test_draw_distributions():
    params = ENV.default_params()
    keys = jax.random.split(jax.random.key(3), 20_000)
    sample = jax.jit(jax.vmap(lambda k: ENV.sample_draws(k, ENV.reset(k, params)[1], params).sticky))
    u = np.asarray(sample(keys))
    assert ((u >= 0) & (u < 1)).all()
    assert abs(u.mean() - 0.5) < 0.01
    assert abs((u < 0.1).mean() - 0.1) < 0.01
    assert abs(np.histogram(u, bins=10, range=(0, 1))[0] / len(u) - 0.1).max() < 0.01


# --------------------------------------------------------------------------------------------------------------
# Static facts


def test_static_configuration():
    reference = minatar.Environment("space_invaders")
    assert ENV.minimal_action_set == tuple(reference.minimal_action_set())
    assert ENV.obs_shape == tuple(reference.state_shape())
    assert ENV.num_game_actions == reference.num_actions()
    state = jax.eval_shape(ENV.reset, jax.random.key(0))[1].game
    for f in dataclasses.fields(state):
        leaf = getattr(state, f.name)
        assert leaf.dtype in (jnp.int8, jnp.uint16), f"{f.name}: {leaf.dtype}"
        assert leaf.shape == ((10,) if f.name.endswith("_rows") else ()), f"{f.name}: {leaf.shape}"
