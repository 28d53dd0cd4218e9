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
from tests.parity.test_space_invaders import NAMED, SeededSource, Trace, play_reference, scripted_policy
from tests.test_twins import assert_twin_plays_as_jax

STEPS = 3100  # the parity suite's cap on an episode (3000 steps) and some play after the reset


def assert_twin_replays(trace: Trace, seed: int) -> None:
    """Replay the reference episode (up to its end), a reset and random play through the twin and the JAX game."""
    env, params = maxatar.make("maxatar/SpaceInvaders-v0", sticky_action_prob=trace.p, difficulty_ramping=trace.ramping)
    end = int(np.argmax(trace.terminal)) + 1 if trace.terminal.any() else len(trace.actions)
    rng = np.random.default_rng(seed)
    rows = rng.random((STEPS + 1, env.num_draws), dtype=np.float32)  # row 0 resets (SpaceInvaders draws nothing)
    rows[1 : end + 1, 0] = trace.sticky[:end]
    actions = rng.integers(0, env.num_actions, STEPS).astype(np.int32)
    actions[:end] = trace.actions[:end]

    _, reward, terminated, *_ = assert_twin_plays_as_jax(env, params, rows, actions)
    # the replay is the reference episode: same rewards and the same end
    np.testing.assert_array_equal(reward[:end], trace.reward[:end])
    assert terminated[end - 1] == trace.terminal[end - 1]


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
    trace = play_reference(spec.driver(), SeededSource(spec.seed), spec.p, spec.ramping)
    missing = [q.__name__ for q in spec.quirks if not q(trace)]
    assert not missing, f"episode {name!r} no longer exercises {missing}"
    assert_twin_replays(trace, spec.seed)


@settings(max_examples=3, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    eps=st.sampled_from([0.0, 0.02, 0.05]),
    p=st.sampled_from([0.0, 0.1]),
    ramping=st.booleans(),
)
def test_policy_episodes(seed, eps, p, ramping):
    """Long episodes of the surviving policy: several waves, sped-up aliens, ramps."""
    trace = play_reference(scripted_policy(seed, eps), SeededSource(seed), p, ramping)
    assert_twin_replays(trace, seed)
