"""Asterix's twin against the JAX step where random play does not go: episodes long enough to reach every
difficulty ramp and to run on at the fastest difficulty (spawn and move interval 1, after ramping stops), and
uniforms sitting exactly on the thresholds (0.5 for the side, float32(1/3) for gold, the last float32 below 1
for the slot draw).

The player looks a few steps ahead on the tape's own uniforms (sticky actions off, so it knows what it will
execute), dodging enemies and taking gold; the actions it chose are then replayed through `TwinEnv` and the
JAX game (`tests.test_twins`), which must agree at every step."""

from __future__ import annotations

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import maxatar
from maxatar.prng import uniform
from maxatar.twin import load_twin
from tests.test_twins import assert_twin_plays_as_jax
from tests.tiers import examples

STEPS = 1500  # ramps come every 102 steps: the ninth and last at step 918
EDGES = np.array([0.0, 0.5, 1 / 3, 1 - 2**-24], np.float32)  # float32(1/3), as the JAX threshold


def _clone(game):
    return game[:2] + [game[2][:], game[3][:], game[4][:], game[5][:]] + game[6:]


def lookahead_actions(env, params, rows, depth=3):
    """A player that, at each step, takes the action whose best `depth`-step continuation (on the tape's
    uniforms) survives with the most gold. After a death the protocol's next row is a reset."""
    twin = load_twin(env, params)
    nd = env.num_draws

    def value(game, t, d):
        if d == 0 or t >= len(rows):
            return 0.0
        best = -1e9
        for a in range(5):
            g, r, dead = twin.step(_clone(game), a, rows[t][1:nd])
            best = max(best, -1000.0 if dead else r + value(g, t + 1, d - 1))
        return best

    game, actions, pending = twin.reset(rows[0][nd:]), [], False
    for t in range(1, len(rows)):
        if pending:
            game, pending = twin.reset(rows[t][nd:]), False
            actions.append(0)
            continue
        scores = []
        for a in range(5):
            g, r, dead = twin.step(_clone(game), a, rows[t][1:nd])
            scores.append(-1000.0 if dead else r + value(g, t + 1, depth - 1))
        action = int(np.argmax(scores))
        game, _, pending = twin.step(game, action, rows[t][1:nd])
        actions.append(action)
    return np.asarray(actions, np.int32)


def play_and_compare(seed, ramping, edge_rate):
    """Tape `seed` (with a share `edge_rate` of uniforms replaced by threshold values), the lookahead player's
    actions, and the twin and JAX game compared along it. Returns the JAX states."""
    env, params = maxatar.make("maxatar/Asterix-v0", sticky_action_prob=0.0, difficulty_ramping=ramping)
    rows = np.array(uniform(jax.random.key(seed), (STEPS + 1, env.num_draws)))
    rng = np.random.default_rng(seed)
    edge = rng.random(rows.shape) < edge_rate
    rows[edge] = rng.choice(EDGES, int(edge.sum()))
    actions = lookahead_actions(env, params, rows.tolist())
    return assert_twin_plays_as_jax(env, params, rows, actions)[5]


def test_every_ramp_and_the_fastest_difficulty():
    game = play_and_compare(seed=1, ramping=True, edge_rate=0.2).game
    reached = np.flatnonzero((game.spawn_speed == 1) & (game.move_speed == 1))
    assert reached.size and reached[0] < STEPS - 300, "the lookahead player died before the last ramp"
    assert game.ramp_index.max() == 9 and np.all(game.ramp_timer[reached[0] :] == game.ramp_timer[reached[0]])


@settings(max_examples=examples(3), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), ramping=st.booleans(), edge_rate=st.sampled_from([0.0, 0.05, 0.3]))
def test_long_episodes(seed, ramping, edge_rate):
    play_and_compare(seed, ramping, edge_rate)
