"""Freeway against minatar 1.0.15, step by step, over whole 2501-step episodes.

The shared harness (`tests/parity/harness.py`) plays the reference with a scripted RandomState (seeded
values, a few of them forced), turns its logged draws into `Draws` and replays the episode through
`transition`. After the reset and after every step the observation, reward, terminal flag and the internal
state (cars, chicken, timers, last executed action) must be identical; where the reference cannot build its
observation (a speed-0 car in the first lane) the state alone is compared.
Every episode is played a few steps past its end, so the frozen terminal state is checked too.
"""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from maxatar.core import EnvParams
from maxatar.games.freeway.rules import Freeway, FreewayDraws
from tests.parity import harness
from tests.parity.harness import from_list
from tests.parity.scripted_random import UNIFORM32, SeededSource
from tests.tiers import examples

ENV = Freeway()
CARS = 8
EPISODE = 2501  # the reference's real episode length
LENGTH = EPISODE + 3  # steps played: the last three act on a terminated game, which must stay frozen
UP, DOWN = 2, 4

# Forced call indices at reset: 0..7 are the speed integers (randint(1, 6, 8)), 8..15 the direction uniforms.
SPEED_CALL, DIRECTION_CALL = 0, CARS


def speed_uniform(speed: int) -> float:
    """A uniform that `SeededSource` maps to `speed` in randint(1, 6)."""
    return (speed - 0.5) / 5


RIGHT, LEFT, STILL = 0.9, 0.1, 0.5  # direction uniforms: sign(u - 0.5) = +1, -1, 0


# --------------------------------------------------------------------------------------------------------
# Actions: a compact hypothesis recipe expanded into a whole episode


def expand(recipe, seed: int) -> np.ndarray:
    """Repeat the (kind, length) segments until LENGTH actions; "random" segments use a seeded generator."""
    rng = np.random.default_rng(seed)
    actions: list[int] = []
    while len(actions) < LENGTH:
        for kind, length in recipe:
            if kind == "random":
                actions += rng.integers(0, 6, length).tolist()
            elif kind == "cycle":
                actions += [i % 6 for i in range(length)]
            else:
                actions += [{"up": UP, "down": DOWN, "noop": 0, "fire": 5}[kind]] * length
    return np.asarray(actions[:LENGTH], dtype=np.int32)


KINDS = st.sampled_from(["up", "up", "up", "up", "random", "random", "noop", "down", "cycle", "fire"])
# Every recipe starts with a run of "up" so that the chicken crosses (and cars re-randomize) many times.
RECIPES = st.builds(
    lambda up, rest: (("up", up), *rest),
    st.integers(20, 300),
    st.lists(st.tuples(KINDS, st.integers(1, 300)), max_size=5),
)
STICKY = st.sampled_from([0.0, 0.1, 1.0]) | st.floats(0.0, 1.0, width=32)
FORCED = st.dictionaries(
    st.integers(0, 2 * CARS - 1), st.sampled_from([STILL, 0.0, 0.99999994]) | UNIFORM32, max_size=4
)
ALL_UP = (("up", 1),)
MOSTLY_UP = (("up", 120), ("random", 40))


# --------------------------------------------------------------------------------------------------------
# The adapter

FIELDS = ("car_x", "car_timer", "car_speed", "pos", "move_timer", "terminate_timer")
SPEED_CALLS = [("randint", (1, 6, CARS)), ("rand", (CARS,))]  # the reset's calls, and a scoring step's


def reset_draws_from_log(log) -> FreewayDraws:
    return FreewayDraws(speeds=np.asarray(log[0].value, np.int8), directions=np.asarray(log[1].value, np.float32))


class FreewayParity(harness.GameAdapter):
    """Cars, chicken and timers; the reset draws speeds and directions, and so does every scoring step."""

    env = ENV
    reset_calls = tuple(SPEED_CALLS)

    def port_fields(self, state):
        return {name: getattr(state.game, name) for name in FIELDS}

    def reset_draws(self, log):
        return reset_draws_from_log(log)

    def step_calls(self, pre, episode):
        """The reference draws game variates exactly on the steps where the chicken reaches row 0 (and scores)."""
        return [SPEED_CALLS if r == 1 else [] for r in episode.rewards]

    def snapshot(self, game) -> dict:
        cars = np.asarray(game.cars, dtype=np.int64)
        assert (cars[:, 1] == np.arange(1, CARS + 1)).all(), "reference car rows moved"
        values = dict(car_x=cars[:, 0], car_timer=cars[:, 2], car_speed=cars[:, 3])
        return values | {name: getattr(game, name) for name in ("pos", "move_timer", "terminate_timer")}

    def observe(self, ref) -> np.ndarray | None:
        try:
            return ref.state()
        except UnboundLocalError:  # car 0 has speed 0: the reference cannot pick its trail channel
            assert ref.env.cars[0][3] == 0
            return None

    def game_draws(self, logs, rng, length) -> FreewayDraws:
        """The re-randomization calls as draws; elsewhere random values, which the port must ignore."""
        speeds = rng.integers(1, 6, (length, CARS)).astype(np.int8)
        directions = rng.random((length, CARS), dtype=np.float32)
        for t, calls in enumerate(logs):
            if calls:
                draws = reset_draws_from_log(calls)
                speeds[t], directions[t] = draws.speeds, draws.directions
        return FreewayDraws(speeds=speeds, directions=directions)


FREEWAY = FreewayParity()


def play(source, actions, sticky: float, ramping: bool) -> harness.Episode:
    """Play every action (the last three act on a terminated game, which must stay frozen)."""
    return harness.play(FREEWAY, source, sticky, ramping, from_list(actions), len(actions))


def make_params(sticky: float, ramping: bool) -> EnvParams:
    return EnvParams(
        sticky_action_prob=jnp.float32(sticky), difficulty_ramping=jnp.bool_(ramping), max_steps=jnp.int32(0)
    )


@jax.jit
def sampled_episode_draws(key, actions, params):
    """The draws `sample_reset_draws` and `sample_draws` produce along the episode the actions drive."""
    reset_key, key = jax.random.split(key)
    reset_draws = ENV.sample_reset_draws(reset_key, params)
    _, state = ENV.reset_from_draws(reset_draws, params)

    def body(state, inputs):
        key, action = inputs
        draws = ENV.sample_draws(key, state, params)
        return ENV.transition(state, action, draws, params)[1], draws

    _, draws = jax.lax.scan(body, state, (jax.random.split(key, LENGTH), actions))
    return reset_draws, draws


def drew(episode: harness.Episode) -> np.ndarray:
    """Per step: did the reference draw anything besides the sticky uniform?"""
    return np.array([len(log) > 1 for log in episode.logs])


def check_parity(seed: int, recipe, sticky: float, ramping: bool, forced: dict):
    """Play one whole episode in both and compare; returns the reference's and the port's sides."""
    episode = play(SeededSource(seed, forced), expand(recipe, seed), sticky, ramping)
    return episode, harness.check_parity(FREEWAY, episode, filler_seed=seed + 1)


# --------------------------------------------------------------------------------------------------------
# The property


@settings(max_examples=examples(20))
@given(
    seed=st.integers(0, 2**32 - 1),
    recipe=RECIPES,
    sticky=STICKY,
    ramping=st.booleans(),
    forced=FORCED,
)
# Car cadence: one car of each speed, both directions, chicken idle (cars with |speed| k move every k + 1 steps).
@example(
    seed=1,
    recipe=(("noop", 1),),
    sticky=0.0,
    ramping=True,
    forced={**{SPEED_CALL + i: speed_uniform(1 + i % 5) for i in range(CARS)}, DIRECTION_CALL: LEFT},
)
# Chicken cadence: first move at step 4, then every 3; speeds 5 to the left keep column 4 clear until step 36.
@example(
    seed=2,
    recipe=ALL_UP,
    sticky=0.0,
    ramping=False,
    forced={**{SPEED_CALL + i: speed_uniform(5) for i in range(CARS)}, **{DIRECTION_CALL + i: LEFT for i in range(8)}},
)
# Collisions, before and after the car's move, send the chicken back without ending the episode.
@example(
    seed=3,
    recipe=ALL_UP,
    sticky=0.0,
    ramping=True,
    forced={**{SPEED_CALL + i: speed_uniform(1) for i in range(CARS)}, **{DIRECTION_CALL + i: RIGHT for i in range(8)}},
)
# The u == 0.5 car (speed 0: moves left every step, borrows the previous car's trail channel).
@example(seed=4, recipe=MOSTLY_UP, sticky=0.1, ramping=True, forced={DIRECTION_CALL + 3: STILL})
# ... in the first lane, where the reference's observation crashes (internal state still compared).
@example(seed=5, recipe=MOSTLY_UP, sticky=0.1, ramping=True, forced={DIRECTION_CALL: STILL})
# Many crossings (re-randomized speeds, positions kept), sticky extremes, the 2501-step end.
@example(seed=6, recipe=ALL_UP, sticky=0.0, ramping=False, forced={})
@example(seed=7, recipe=MOSTLY_UP, sticky=1.0, ramping=True, forced={})
@example(seed=8, recipe=(("up", 50), ("down", 10), ("cycle", 30), ("random", 100)), sticky=0.5, ramping=True, forced={})
def test_freeway_matches_reference(seed, recipe, sticky, ramping, forced):
    check_parity(seed, recipe, sticky, ramping, forced)


# --------------------------------------------------------------------------------------------------------
# Quirks, each checked in both implementations (parity) and pinned to its expected numbers


def test_car_moves_every_speed_plus_one_steps():
    speeds = [1 + i % 5 for i in range(CARS)]
    forced = {SPEED_CALL + i: speed_uniform(s) for i, s in enumerate(speeds)}
    forced |= {DIRECTION_CALL + i: (RIGHT if i % 2 else LEFT) for i in range(CARS)}
    episode, _ = check_parity(11, (("noop", 1),), 0.0, True, forced)
    x = episode.fields["car_x"]
    for i, speed in enumerate(speeds):
        moved_after = np.flatnonzero(x[1:61, i] != x[:60, i]) + 1  # steps (1-based) on which car i moved
        np.testing.assert_array_equal(moved_after, np.arange(speed + 1, 61, speed + 1), err_msg=f"car {i}")
        step = 1 if i % 2 else -1
        assert x[speed + 1, i] == (0 + step) % 10


def test_chicken_moves_at_step_4_then_every_3_and_scores():
    forced = {SPEED_CALL + i: speed_uniform(5) for i in range(CARS)}
    forced |= {DIRECTION_CALL + i: LEFT for i in range(CARS)}
    episode, _ = check_parity(12, ALL_UP, 0.0, True, forced)
    pos = episode.fields["pos"]
    np.testing.assert_array_equal(np.flatnonzero(pos[1:29] != pos[:28]) + 1, np.arange(4, 29, 3))
    assert pos[27] == 1 and pos[28] == 9 and episode.rewards[27] == 1 and episode.rewards[:27].sum() == 0


def test_collision_sends_chicken_back_without_termination():
    forced = {SPEED_CALL + i: speed_uniform(1) for i in range(CARS)}
    forced |= {DIRECTION_CALL + i: RIGHT for i in range(CARS)}
    episode, _ = check_parity(13, ALL_UP, 0.0, True, forced)
    pos, x = episode.fields["pos"], episode.fields["car_x"]
    # Step 8: the lane-7 car moves onto column 4 where the chicken is (hit after the move).
    assert pos[7] == 7 and x[8, 6] == 4 and pos[8] == 9
    # Step 10: the chicken steps into lane 8 while its car is still on column 4 (hit before the move).
    assert x[9, 7] == 4 and x[10, 7] == 5 and pos[10] == 9
    assert not episode.terminal[1:EPISODE].any() and episode.rewards[:10].sum() == 0


def test_scoring_rerandomizes_speeds_and_keeps_positions():
    episode, _ = check_parity(14, MOSTLY_UP, 0.1, True, {})
    scores = np.flatnonzero(episode.rewards == 1)
    assert len(scores) >= 10
    f = episode.fields
    changed = 0
    for t in scores:
        log = episode.logs[t]
        signed = np.asarray(log[1].value) * np.sign(np.asarray(log[2].value) - 0.5).astype(int)
        np.testing.assert_array_equal(f["car_speed"][t + 1], signed)
        moving = signed != 0
        np.testing.assert_array_equal(f["car_x"][t + 1][moving], f["car_x"][t][moving])
        np.testing.assert_array_equal(f["car_timer"][t + 1][moving], np.abs(signed[moving]) - 1)
        assert f["pos"][t + 1] == 9
        changed += (f["car_speed"][t + 1] != f["car_speed"][t]).any()
    assert changed >= len(scores) // 2


def test_episode_lasts_2501_steps_and_terminates():
    episode, _ = check_parity(15, MOSTLY_UP, 0.1, False, {})
    assert not episode.terminal[1:EPISODE].any() and episode.terminal[EPISODE:].all()
    assert episode.fields["terminate_timer"][EPISODE] == -1
    # After the end: only the sticky uniform is drawn and the state is frozen (compared by parity as well).
    assert all(len(log) == 1 for log in episode.logs[EPISODE:])
    assert (episode.fields["car_x"][EPISODE:] == episode.fields["car_x"][EPISODE]).all()
    assert episode.rewards.sum() >= 10


def test_half_uniform_gives_a_speed_zero_car_moving_left_every_step():
    episode, _ = check_parity(16, (("noop", 1),), 0.0, True, {DIRECTION_CALL + 3: STILL})
    f = episode.fields
    assert (f["car_speed"][:, 3] == 0).all() and (f["car_timer"][:, 3] == 0).all()
    np.testing.assert_array_equal(f["car_x"][:25, 3], (-np.arange(25)) % 10)
    # Its trail sits to its right, in the trail channel of car 2 (the reference's stale loop variable).
    channel = 1 + abs(f["car_speed"][0, 2])
    for t in range(1, 25):
        assert episode.obs[t, 4, (f["car_x"][t, 3] + 1) % 10, channel], t


def test_half_uniform_in_first_lane():
    """The reference's observation crashes; the port draws no trail for that car and matches everything else."""
    episode, port = check_parity(17, MOSTLY_UP, 0.0, True, {DIRECTION_CALL: STILL})
    assert not episode.obs_ok[0]
    obs = port.obs
    assert port.fields["car_speed"][0, 0] == 0 and not obs[0, 1, :, 2:].any() and obs[0, 1, 0, 1]
    # Later steps: the car moves left every step and still has no trail; the reference crashes throughout.
    assert not episode.obs_ok[:50].any() and not obs[:50, 1, :, 2:].any()
    np.testing.assert_array_equal(obs[:25, 1, :, 1].argmax(1), (-np.arange(25)) % 10)


def test_half_uniform_on_rerandomization():
    """Force u == 0.5 into the first scoring step's direction draws (found by a first pass with the same seed)."""
    seed, recipe = 18, MOSTLY_UP
    first = play(SeededSource(seed), expand(recipe, seed), 0.0, True)
    t = int(np.flatnonzero(first.rewards == 1)[0])
    consumed = 2 * CARS + sum(sum(np.size(c.value) for c in log) for log in first.logs[:t])
    direction_call = consumed + 1 + CARS  # after the sticky uniform and the 8 speed integers
    episode, _ = check_parity(seed, recipe, 0.0, True, {direction_call + 5: STILL})
    assert episode.fields["car_speed"][t + 1, 5] == 0 and episode.fields["car_speed"][t, 5] != 0
    x = episode.fields["car_x"][:, 5]
    assert x[t + 1] == (x[t] - 1) % 10 and x[t + 2] == (x[t] - 2) % 10


def test_trail_channel_by_speed_with_wraparound():
    speeds = [1, 2, 3, 4, 5, 1, 2, 3]
    forced = {SPEED_CALL + i: speed_uniform(s) for i, s in enumerate(speeds)}
    forced |= {DIRECTION_CALL + i: (RIGHT if i < 4 else LEFT) for i in range(CARS)}
    episode, _ = check_parity(19, (("noop", 1),), 0.0, True, forced)
    obs, x = episode.obs, episode.fields["car_x"]
    for i, speed in enumerate(speeds):
        trail = obs[0, i + 1, :, 2:]
        # At reset every car is in column 0: right-moving cars trail at column 9 (wrap), left-moving at 1.
        assert trail.sum() == 1 and trail[9 if i < 4 else 1, speed - 1], i
    # Left-moving car 5 (speed 1) wraps from column 0 to 9 at step 2; its trail wraps to column 0.
    assert x[2, 5] == 9 and obs[2, 6, 0, 2]


# --------------------------------------------------------------------------------------------------------
# sample_draws: when and what


class QueueSource:
    """Answers the reference's calls from a queue the test fills with the port's sampled draws."""

    def __init__(self):
        self.queue: collections.deque = collections.deque()

    def uniform(self) -> float:
        kind, value = self.queue.popleft()
        assert kind == "u", "the reference asked for a uniform where the port sampled an integer"
        return value

    def integer(self, low: int, high: int) -> int:
        kind, value = self.queue.popleft()
        assert kind == "i" and (low, high) == (1, 6), f"unexpected randint({low}, {high})"
        return value


@settings(max_examples=examples(2))
@given(seed=st.integers(0, 2**32 - 1), recipe=RECIPES, sticky=st.sampled_from([0.0, 0.1]))
@example(seed=0, recipe=MOSTLY_UP, sticky=0.1)
def test_sample_draws_feed_the_reference_exactly_when_it_draws(seed, recipe, sticky):
    """The reference, fed the port's own sampled draws, consumes the sticky uniform every step and the 16 game
    variates exactly on the steps the port consumes them (scoring steps); both then play the same episode."""
    params = make_params(sticky, True)
    actions = expand(recipe, seed)
    reset_draws, draws = jax.device_get(sampled_episode_draws(jax.random.key(seed), jnp.asarray(actions), params))
    source = QueueSource()
    source.queue.extend([("i", int(v)) for v in reset_draws.speeds] + [("u", float(v)) for v in reset_draws.directions])
    left = []  # variates left unused by the previous call to the reference (reset, then each step)

    def policy(t, game):
        """Before each step: note what the last call left unused, then queue this step's sampled draws."""
        left.append(len(source.queue))
        source.queue.clear()
        source.queue.extend(
            [("u", float(draws.sticky[t]))]
            + [("i", int(v)) for v in draws.game.speeds[t]]
            + [("u", float(v)) for v in draws.game.directions[t]]
        )
        return int(actions[t])

    episode = harness.play(FREEWAY, source, sticky, True, policy, len(actions))
    left.append(len(source.queue))
    assert left[0] == 0, "the reset must consume all 16 reset variates"
    np.testing.assert_array_equal(left[1:], np.where(drew(episode), 0, 2 * CARS))
    harness.check_parity(FREEWAY, episode, draws=draws, reset_draws=reset_draws)


@jax.jit
def many_draws(key):
    """20k samples of one step's draws and of the reset draws (one compiled call)."""
    params = ENV.default_params()
    reset_key, key = jax.random.split(key)
    _, state = ENV.reset(reset_key, params)
    keys = jax.random.split(key, 20_000)
    return jax.vmap(lambda k: ENV.sample_draws(k, state, params))(keys), jax.vmap(
        lambda k: ENV.sample_reset_draws(k, params)
    )(keys)


def test_draw_distributions():
    draws, resets = jax.device_get(many_draws(jax.random.key(1)))
    assert draws.sticky.dtype == np.float32 and 0.0 <= draws.sticky.min() and draws.sticky.max() < 1.0
    assert abs(draws.sticky.mean() - 0.5) < 0.01 and abs((draws.sticky < 0.1).mean() - 0.1) < 0.01
    for game in (draws.game, resets):
        assert game.speeds.shape == (20_000, CARS) and game.directions.shape == (20_000, CARS)
        frequencies = np.bincount(game.speeds.ravel(), minlength=7) / game.speeds.size
        np.testing.assert_allclose(frequencies, [0, 0.2, 0.2, 0.2, 0.2, 0.2, 0], atol=0.006)
        directions = game.directions.ravel()
        assert directions.dtype == np.float32 and 0.0 <= directions.min() and directions.max() < 1.0
        histogram = np.histogram(directions, bins=10, range=(0, 1))[0] / directions.size
        np.testing.assert_allclose(histogram, 0.1, atol=0.005)
        # Cars and directions independent per car: each car's mean sign is near 0.
        np.testing.assert_allclose(np.sign(game.directions - 0.5).mean(0), 0.0, atol=0.03)
