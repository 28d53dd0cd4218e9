"""Freeway's twin against the JAX step where random play does not go: whole episodes, which always end by
termination after exactly 2501 steps (followed by a reset and more play), and direction uniforms of exactly
0.5, which give cars of speed 0 (they move left every step; their trail borrows the channel of the nearest
earlier car with a speed, or is not drawn), both at reset and when the chicken scores.

The tape and a biased random policy (mostly up, so the chicken scores often) are replayed through `TwinEnv`
and the JAX game (`tests.test_twins`), which must agree at every step."""

from __future__ import annotations

import jax
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

import maxatar
from maxatar.prng import uniform
from tests.test_twins import assert_twin_plays_as_jax
from tests.tiers import examples

EPISODE = 2501
STEPS = EPISODE + 150  # one whole episode, a reset, and the start of the next


@settings(max_examples=examples(3), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    sticky=st.sampled_from([0.0, 0.1]),
    still_cars=st.lists(st.integers(0, 7), max_size=3, unique=True),
    still_rate=st.sampled_from([0.3, 1.0]),
)
@example(seed=0, sticky=0.1, still_cars=[0, 3], still_rate=1.0)  # car 0 draws no trail, car 3 borrows car 2's
@example(seed=1, sticky=0.0, still_cars=[5], still_rate=0.3)  # car 5 changes between still and moving
def test_whole_episodes_and_still_cars(seed, sticky, still_cars, still_rate):
    env, params = maxatar.make("maxatar/Freeway-v0", sticky_action_prob=sticky)
    nd = env.num_draws
    rows = np.array(uniform(jax.random.key(seed), (STEPS + 1, env.num_auto_reset_uniforms)))
    rng = np.random.default_rng(seed)
    for car in still_cars:  # the car's direction uniform at reset (column nd + car) and on scoring (1 + car)
        for column in (1 + car, nd + car):
            rows[rng.random(len(rows)) < still_rate, column] = 0.5
    actions = rng.choice(env.num_actions, STEPS, p=[0.1, 0.05, 0.7, 0.05, 0.05, 0.05]).astype(np.int32)

    _, reward, terminated, truncated, pending, states = assert_twin_plays_as_jax(env, params, rows, actions)
    # what the tape was built to reach: the end at step 2501 and still cars where asked
    assert np.flatnonzero(terminated).tolist() == [EPISODE - 1] and pending[EPISODE]
    if still_cars:
        assert np.any(states.game.car_speed[:, still_cars] == 0)
