"""SpaceInvaders' twin against the JAX step where random play does not go (`tests/test_twins.py` covers random
play): long episodes in which the parity suite's surviving policy clears wave after wave (respawns keeping the
move timer, alien speed-ups as the wave thins, the whole difficulty ramp, or none without ramping), and the
parity suite's named quirk episodes (aliens landing and wrapping, a bullet swapping cells with an alien, a
rewarded terminal step).

The reference game plays each episode (the policies read its state); its actions and sticky uniforms then form
a tape that `TwinEnv` and the JAX game replay (`tests.test_twins`), followed by a reset and random play to the
tape's fixed length; both must agree at every step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxatar
from tests.parity.harness import Episode
from tests.parity.test_space_invaders import NAMED, SeededSource, play_reference, scripted_policy
from tests.test_twins import assert_twin_plays_as_jax
from tests.tiers import examples

STEPS = 3100  # the parity suite's cap on an episode (3000 steps) and some play after the reset


def assert_twin_replays(episode: Episode, seed: int) -> None:
    """Replay the reference episode (up to its end), a reset and random play through the twin and the JAX game."""
    env, params = maxatar.make(
        "maxatar/SpaceInvaders-v0", sticky_action_prob=episode.sticky_prob, difficulty_ramping=episode.ramping
    )
    terminal = episode.terminal[1:]  # step t's flag is state row t + 1's
    assert all(len(log) == 1 for log in episode.logs), "a SpaceInvaders step draws only the sticky uniform"
    sticky = np.array([log[0].value for log in episode.logs], np.float32)
    end = int(np.argmax(terminal)) + 1 if terminal.any() else episode.n
    rng = np.random.default_rng(seed)
    rows = rng.random((STEPS + 1, env.num_draws), dtype=np.float32)  # row 0 resets (SpaceInvaders draws nothing)
    rows[1 : end + 1, 0] = sticky[:end]
    actions = rng.integers(0, env.num_actions, STEPS).astype(np.int32)
    actions[:end] = episode.actions[:end]

    _, reward, terminated, *_ = assert_twin_plays_as_jax(env, params, rows, actions)
    # the replay is the reference episode: same rewards and the same end
    np.testing.assert_array_equal(reward[:end], episode.rewards[:end])
    assert terminated[end - 1] == terminal[end - 1]


@pytest.mark.parametrize(
    "name",
    [
        "policy_clears_waves_ramping",  # ramp_index to 6, interval down to 6, then no more ramps
        "policy_clears_waves_no_ramping",
        "aliens_land_flip_and_descend",
        "bullet_and_alien_swap_cells",
        "terminal_step_still_rewarded",
    ],
)
def test_named_episodes(name):
    spec = NAMED[name]
    episode = play_reference(spec.driver(), SeededSource(spec.seed), spec.p, spec.ramping)
    missing = [q.__name__ for q in spec.quirks if not q(episode)]
    assert not missing, f"episode {name!r} no longer exercises {missing}"
    assert_twin_replays(episode, spec.seed)


@settings(max_examples=examples(3), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    eps=st.sampled_from([0.0, 0.02, 0.05]),
    p=st.sampled_from([0.0, 0.1]),
    ramping=st.booleans(),
)
def test_policy_episodes(seed, eps, p, ramping):
    """Long episodes of the surviving policy: several waves, sped-up aliens, ramps."""
    assert_twin_replays(play_reference(scripted_policy(seed, eps), SeededSource(seed), p, ramping), seed)
