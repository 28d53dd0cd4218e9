"""Step-by-step parity of `maxatar.games.space_invaders.rules` with minatar 1.0.15's SpaceInvaders.

The shared harness (`tests/parity/harness.py`) plays the reference with a scripted RandomState (it only ever
draws the sticky-action uniform: the game itself is deterministic), replays the logged draws through
`transition` and compares, after every step, the observation, reward, terminal flag, executed action and the
game's internal state (the port's row masks unpacked into the reference's boolean maps).
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

from maxatar.core import Draws
from maxatar.games.space_invaders.rules import SpaceInvaders, unpack_rows
from tests.parity import harness
from tests.parity.harness import from_list
from tests.parity.scripted_random import UNIFORM32, HypothesisSource, SeededSource
from tests.tiers import examples

ENV = SpaceInvaders()
CAP = 3000  # steps played before giving up on termination
AFTER = 3  # steps played after termination (the reference and core both freeze, the sticky draw continues)
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
# The adapter (the game draws nothing: each step the reference draws only the sticky uniform, its reset nothing)


def reference_view(game) -> dict[str, jax.Array]:
    """Our game state under the reference's attribute names (row masks unpacked into boolean grids)."""
    view = {f: getattr(game, f) for f in FIELDS if hasattr(game, f)}
    for name in ("alien", "f_bullet", "e_bullet"):
        view[f"{name}_map"] = unpack_rows(getattr(game, f"{name}_rows"))
    assert set(view) == set(FIELDS)
    return view


class SpaceInvadersParity(harness.GameAdapter):
    """The reference's fields, with the port's row masks unpacked into its boolean maps."""

    env = ENV

    def port_fields(self, state):
        return reference_view(state.game)

    def snapshot(self, game) -> dict:
        """The reference's fields; its float 0/1 maps become booleans (checked to hold nothing else)."""
        values = {f: np.array(getattr(game, f)) for f in FIELDS}
        for f in ("alien_map", "f_bullet_map", "e_bullet_map"):
            assert ((values[f] == 0) | (values[f] == 1)).all(), f"reference {f} holds values other than 0/1"
            values[f] = values[f].astype(bool)
        return values


SPACE_INVADERS = SpaceInvadersParity()


def play_reference(choose: Callable[[int, object], int | None], source, p: float, ramping: bool) -> harness.Episode:
    """Play until terminal (then AFTER more steps, with noops), until `choose` returns None, or CAP steps."""

    def policy(t, game):
        if game.terminal:
            return 0
        return None if t >= CAP else choose(t, game)

    return harness.play(SPACE_INVADERS, source, p, ramping, policy, CAP + AFTER, after_terminal=AFTER)


def assert_parity(episode: harness.Episode) -> None:
    harness.check_parity(SPACE_INVADERS, episode)


# --------------------------------------------------------------------------------------------------------------
# Action drivers


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


@settings(max_examples=examples(20))
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


@settings(max_examples=examples(12))
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


@settings(max_examples=examples(5))
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


# In the predicates below, for step t: `f[name][t]` is the state before it, `f[name][t + 1]` after it.


def _count(episode, row):
    return int(episode.fields["alien_map"][row].sum())


def _fresh_wave() -> np.ndarray:
    fresh = np.zeros((10, 10), bool)
    fresh[0:4, 2:8] = True
    return fresh


def enemy_bullet_dodged_by_moving(episode) -> bool:
    """An enemy bullet reached row 9 at the cannon's old column, the cannon moved away and survived."""
    f = episode.fields
    return any(
        f["e_bullet_map"][t + 1][9, f["pos"][t]] and f["pos"][t + 1] != f["pos"][t] and not episode.terminal[t + 1]
        for t in range(episode.n)
    )


def enemy_bullet_walked_into(episode) -> bool:
    """The cannon moved into a column whose enemy bullet reached row 9 this step, and died."""
    f = episode.fields
    return any(
        episode.terminal[t + 1]
        and f["pos"][t + 1] != f["pos"][t]
        and f["e_bullet_map"][t + 1][9, f["pos"][t + 1]]
        and not f["e_bullet_map"][t][8, f["pos"][t]]
        for t in range(episode.n)
    )


def shot_tie_went_left(episode) -> bool:
    """An alien shot while occupied columns sat at equal distance on both sides of the cannon: the left one fired.
    Only kill-free steps count, so the map after the step is the map the shot was chosen from."""
    f = episode.fields
    for t in range(episode.n):
        if f["alien_shot_timer"][t] != 0 or episode.rewards[t] or episode.terminal[t + 1]:
            continue
        pos = int(f["pos"][t + 1])
        new = f["e_bullet_map"][t + 1] & ~np.roll(f["e_bullet_map"][t], 1, axis=0)
        cols = np.flatnonzero(new.any(axis=0))
        occupied = f["alien_map"][t + 1].any(axis=0)
        if len(cols) == 1 and cols[0] < pos and 2 * pos - cols[0] <= 9:
            left, right = int(cols[0]), 2 * pos - int(cols[0])
            if occupied[right] and not occupied[left + 1 : right].any():
                return True
    return False


def move_timer_from_alien_count(episode) -> bool:
    """The move timer was reloaded with the number of aliens (< interval)."""
    f = episode.fields
    for t in range(episode.n):
        if f["alien_move_timer"][t] == 0 and not episode.terminal[t + 1]:
            count = _count(episode, t)
            if count < f["enemy_move_interval"][t + 1] and f["alien_move_timer"][t + 1] == count - 1:
                return True
    return False


def wave_respawn_keeps_timer(episode) -> bool:
    """A new 24-alien wave spawned and the move timer carried on instead of restarting."""
    f = episode.fields
    for t in range(1, episode.n):
        if _count(episode, t) < 24 and _count(episode, t + 1) == 24 and not episode.terminal[t + 1]:
            if (f["alien_map"][t + 1] > 0).tolist() == _fresh_wave().tolist():
                if f["alien_move_timer"][t + 1] < f["enemy_move_interval"][t + 1] - 1:
                    return True
    return False


def bullet_swapped_with_alien(episode) -> bool:
    """A descending alien and a rising bullet swapped cells and both survived."""
    f = episode.fields
    for t in range(1, episode.n):
        fb, ab = f["f_bullet_map"][t] > 0, f["alien_map"][t] > 0
        fa, aa = f["f_bullet_map"][t + 1] > 0, f["alien_map"][t + 1] > 0
        swapped = fb[1:] & ab[:-1] & fa[:-1] & aa[1:]
        if swapped.any():
            return True
    return False


def never_moved(episode) -> bool:
    """With sticky probability 1 the first executed action (noop, the initial last action) repeats forever."""
    return (episode.last_action[1:] == 0).all() and (episode.fields["pos"][1:] == 5).all() and episode.terminal[-1]


def terminal_step_rewarded(episode) -> bool:
    return any(episode.terminal[t + 1] and episode.rewards[t] > 0 for t in range(episode.n))


def aliens_landed(episode) -> bool:
    """Terminal because an alien on row 9 hit the wall and the wave stepped down (wrapping to row 0)."""
    f = episode.fields
    for t in range(episode.n):
        before = f["alien_map"][t] > 0
        after = f["alien_map"][t + 1] > 0
        if episode.terminal[t + 1] and before[9].any() and after[0].any() and not before[0].any():
            return True
    return False


def ramped_to(level):
    def reached(episode) -> bool:
        return episode.fields["ramp_index"][1:].max() >= level

    reached.__name__ = f"ramp_index_reaches_{level}"
    return reached


def ramp_bottoms_out(episode) -> bool:
    """After six ramps the interval sits at 6 and further cleared waves no longer ramp."""
    interval, ramp = episode.fields["enemy_move_interval"][1:], episode.fields["ramp_index"][1:]
    return interval.min() == 6 and ramp.max() == 6 and episode.rewards.sum() > 6 * 24


def waves_cleared_without_ramp(episode) -> bool:
    interval, ramp = episode.fields["enemy_move_interval"][1:], episode.fields["ramp_index"][1:]
    return episode.rewards.sum() >= 48 and ramp.max() == 0 and (interval == 12).all()


def initial_wave_is_24(episode) -> bool:
    return (episode.fields["alien_map"][0] > 0).tolist() == _fresh_wave().tolist()


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
    episode = play_reference(spec.driver(), SeededSource(spec.seed), spec.p, spec.ramping)
    missing = [q.__name__ for q in spec.quirks if not q(episode)]
    assert not missing, f"episode {name!r} no longer exercises {missing}"
    assert_parity(episode)


# --------------------------------------------------------------------------------------------------------------
# Draws: when and how


def test_draws_match_reference_timing():
    """The reference draws exactly one uniform per step (the sticky one) and none at reset, at every step,
    terminal or not; `sample_draws` produces exactly that: one float32 sticky scalar and no game variates."""
    # idle until the first enemy bullet lands (step 17), then AFTER frozen steps; check_parity checks each log
    episode = play_reference(from_list([0] * 40), SeededSource(7), 0.1, True)
    assert episode.n == 17 + AFTER and episode.terminal[17:].all() and not episode.terminal[:17].any()
    harness.check_draw_calls(SPACE_INVADERS, episode, harness.check_parity(SPACE_INVADERS, episode))
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
