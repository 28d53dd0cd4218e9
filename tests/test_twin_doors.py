"""Doors' twin against the JAX step with what `tests/test_twins.py` does not vary: other grid sizes and door
counts (static configuration), random doors (`DoorsParams.random_doors`), including tied door keys (the stable
sort's ties go to the lower column), and start columns drawn from the largest uniform below 1 (the last column:
the float32 product `u * size` stays below `size`).

A tape of uniforms and a policy biased towards moving up (so that goals are reached and episodes restart) are
replayed through `TwinEnv` and the JAX game (`tests.test_twins`), which must agree at every step."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxatar
from maxatar.prng import uniform
from tests.test_twins import assert_twin_plays_as_jax
from tests.tiers import examples

STEPS = 300
BELOW_ONE = float(np.nextafter(np.float32(1), np.float32(0)))


@pytest.mark.parametrize("size, num_doors", [(3, 1), (4, 4), (7, 2), (15, 3), (16, 5), (37, 37)])
@settings(max_examples=examples(5), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    random_doors=st.booleans(),
    sticky=st.sampled_from([0.0, 0.25]),
    max_steps=st.sampled_from([0, 60]),
    tie_levels=st.sampled_from([0, 2, 5]),  # door keys rounded down to this many levels (0: left as drawn)
    edge_rate=st.sampled_from([0.0, 0.3]),
)
def test_sizes_and_random_doors(size, num_doors, seed, random_doors, sticky, max_steps, tie_levels, edge_rate):
    env, params = maxatar.make(
        "maxatar/Doors-v0",
        size=size,
        num_doors=num_doors,
        random_doors=random_doors,
        sticky_action_prob=sticky,
        max_steps=max_steps,
    )
    nd = env.num_draws
    rows = np.array(uniform(jax.random.key(seed), (STEPS + 1, env.num_auto_reset_uniforms)))
    rng = np.random.default_rng(seed)
    if tie_levels:
        rows[:, nd + 2 :] = np.floor(rows[:, nd + 2 :] * tie_levels) / tie_levels
    for column in (nd, nd + 1):  # agent and goal columns
        rows[rng.random(len(rows)) < edge_rate, column] = BELOW_ONE
    actions = rng.choice(env.num_actions, STEPS, p=[0.1, 0.2, 0.1, 0.2, 0.4]).astype(np.int32)

    states = assert_twin_plays_as_jax(env, params, rows, actions)[5]
    assert (states.game.doors.sum(axis=1) == num_doors).all()
