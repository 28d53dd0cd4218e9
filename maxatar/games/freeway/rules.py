"""Freeway: a chicken crosses eight lanes of wrapping traffic, +1 for every crossing.

The chicken sits in column 4 and may step up or down at most once every 3 steps; reaching row 0 scores, sends
it back to row 9 and re-draws every car's speed and direction (positions kept). A car in row i + 1 with signed
speed s moves one cell every |s| + 1 steps. Being hit only sends the chicken back to row 9. Every episode ends
by termination after exactly 2501 steps. There is no difficulty ramp (`difficulty_ramping` is ignored).

Channels: 0 chicken, 1 car, 2..6 the trail cell behind a car of |speed| 1..5 (wrapping around the edges).

Reference quirks (minatar 1.0.15) reproduced here:
* the time limit is checked after the decrement, so episodes last 2501 steps, not 2500;
* the chicken's first move can happen at step 4 (its move timer starts at 3), then every 3 steps;
* a direction uniform of exactly 0.5 gives the sign 0, hence a car of speed 0. Such a car is not stationary:
  its timer is always 0, so it moves *left every step*; its trail is drawn to its right, in the trail channel
  of the nearest earlier car with a non-zero speed (the reference reuses a stale loop variable). If no earlier
  car has a non-zero speed the reference crashes when rendering (UnboundLocalError); here no trail is drawn.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import Channel, EnvParams, Looks, States, pytree_dataclass
from maxatar.episode import Environment
from maxatar.prng import materialize, uniform_to_int
from maxatar.settings import minatar_game

NUM_CARS = 8
PLAYER_SPEED = 3
TIME_LIMIT = 2500
CHICKEN_COL = 4
ROWS = np.arange(10, dtype=np.int8)
COLS = np.arange(10, dtype=np.int8)
CAR_ROWS = np.arange(1, NUM_CARS + 1, dtype=np.int8)  # car i drives in row i + 1


@pytree_dataclass
class FreewayState:
    """car_x, car_timer, car_speed: per car (car i drives in row i + 1); car_speed is signed (+ right, - left,
    0 only after a direction uniform of exactly 0.5). pos: the chicken's row. move_timer: steps until the
    chicken may move again. terminate_timer: the reference's countdown; the episode ends when it goes below 0."""

    car_x: jax.Array  # int8[8], 0..9
    car_timer: jax.Array  # int8[8]
    car_speed: jax.Array  # int8[8], -5..5
    pos: jax.Array  # int8, 0..9
    move_timer: jax.Array  # int8, 0..3
    terminate_timer: jax.Array  # int16, 2500 .. -1


@pytree_dataclass
class FreewayDraws:
    """The reference's `randint(1, 6, 8)` (speeds) and `rand(8)` (direction uniforms, sign(u - 0.5))."""

    speeds: jax.Array  # int8[8], 1..5
    directions: jax.Array  # float32[8] in [0, 1)


def _signed_speeds(draws: FreewayDraws) -> jax.Array:
    """Each car's signed speed, as the reference's `speeds * sign(directions - 0.5)`."""
    # sign(u - 0.5) exactly as the float64 reference computes it: 0.5 is exact in float32 too.
    sign = jnp.where(draws.directions > 0.5, 1, jnp.where(draws.directions < 0.5, -1, 0))
    return (draws.speeds * sign).astype(jnp.int8)


def _wrap(x: jax.Array) -> jax.Array:
    """A column that left the board one cell to either side, back on the other side (cars wrap around)."""
    return jnp.where(x < 0, 9, jnp.where(x > 9, 0, x)).astype(jnp.int8)


class Freeway(Environment):
    """MinAtar Freeway (`minatar.Environment('freeway')`)."""

    name = "freeway"
    gymnax_name = "Freeway-MinAtar"
    settings = minatar_game(gymnax_max_steps=2500)
    num_game_actions = 6
    minimal_action_set = (0, 2, 4)
    obs_shape = (10, 10, 7)
    obs_dtype = jnp.bool_
    num_reset_uniforms = NUM_CARS
    num_step_uniforms = NUM_CARS
    twin = "maxatar.games.freeway.twin:FreewayTwin"
    randomness = "The car speeds and directions at reset, and again after each crossing."
    looks = Looks(
        channels=(
            Channel("chicken", (255, 235, 60), role="player"),
            Channel("car", (230, 55, 55), role="enemy"),
            Channel("speed1", (60, 90, 200), "inset"),
            Channel("speed2", (50, 170, 210), "inset"),
            Channel("speed3", (70, 200, 110), "inset"),
            Channel("speed4", (190, 120, 230), "inset"),
            Channel("speed5", (245, 140, 40), "inset"),
        ),
        draw_order=("speed1", "speed2", "speed3", "speed4", "speed5", "car", "chicken"),
    )
    # The values a Freeway episode reaches (`maxatar.checks`): the chicken scores on reaching row 0 and goes back to
    # row 9 in the same step; the countdown ends the episode at -1.
    states = States(
        ranges={
            "car_x": range(10),
            "car_timer": range(6),
            "car_speed": range(-5, 6),
            "pos": range(1, 10),
            "move_timer": range(PLAYER_SPEED + 1),
            "terminate_timer": range(-1, TIME_LIMIT + 1),
        },
    )

    def state_rules(self, state) -> list[str]:
        """A car's timer counts down from its |speed|; the countdown is below 0 only once the episode ended."""
        g = jax.tree.map(np.asarray, state.game)
        problems = []
        if np.any(g.car_timer > np.abs(g.car_speed.astype(np.int32))):
            problems.append("a car's timer (game.car_timer) exceeds its |speed| (game.car_speed)")
        if np.any((g.terminate_timer < 0) & ~np.asarray(state.terminated)):
            problems.append("game.terminate_timer is -1 in an episode that has not ended")
        return problems

    def reset_draws(self, uniforms: jax.Array, params: EnvParams) -> FreewayDraws:
        """One uniform per car gives both of its variates: the uniform itself is the direction draw, and its
        bits below the top one (the fractional part of 2u, exact in float32) give the speed. The game reads
        the direction only through sign(u - 0.5), that is the top bit (or u == 0.5 exactly, where the signed
        speed is 0 whatever the speed), so speed and sign are independent, each with the reference's
        distribution (up to the 2**-22 grain of a float32 uniform), while only one uniform per car is hashed."""
        u = uniforms.astype(jnp.float32)
        low = 2 * u - (u >= 0.5).astype(jnp.float32)
        return FreewayDraws(speeds=uniform_to_int(low, 1, 6).astype(jnp.int8), directions=u)

    def step_draws(self, uniforms: jax.Array, game: FreewayState, params: EnvParams) -> FreewayDraws:
        """New speeds for every car, as at reset: the reference re-draws them whenever the chicken scores."""
        # Always produced; the game consumes them only on a step where the chicken reaches row 0.
        return self.reset_draws(uniforms, params)

    def init(self, draws: FreewayDraws, params: EnvParams) -> FreewayState:
        """Every car in column 0 with its drawn speed; the chicken on the bottom row."""
        speed = _signed_speeds(draws)
        return FreewayState(
            car_x=jnp.zeros(NUM_CARS, jnp.int8),
            car_timer=jnp.abs(speed),
            car_speed=speed,
            pos=jnp.int8(9),
            move_timer=jnp.int8(PLAYER_SPEED),
            terminate_timer=jnp.int16(TIME_LIMIT),
        )

    def game_step(self, game: FreewayState, action: jax.Array, draws: FreewayDraws, params: EnvParams):
        ready = game.move_timer == 0
        up = ready & (action == 2)
        down = ready & (action == 4)
        pos = jnp.clip(game.pos - up.astype(jnp.int8) + down.astype(jnp.int8), 0, 9).astype(jnp.int8)
        move_timer = jnp.where(up | down, jnp.int8(PLAYER_SPEED), game.move_timer)

        scored = pos == 0
        new_speed = _signed_speeds(draws)
        speed = jnp.where(scored, new_speed, game.car_speed)
        timer = jnp.where(scored, jnp.abs(new_speed), game.car_timer)
        pos = jnp.where(scored, jnp.int8(9), pos)

        # Only the car in the chicken's row can hit it, so the reference's sequential car loop reduces to
        # "that car is in column 4 before or after its move".
        moves = timer == 0
        x = jnp.where(moves, _wrap(game.car_x + jnp.where(speed > 0, 1, -1).astype(jnp.int8)), game.car_x)
        timer = jnp.where(moves, jnp.abs(speed), timer - 1).astype(jnp.int8)
        in_row = CAR_ROWS == pos
        hit = jnp.any(in_row & ((game.car_x == CHICKEN_COL) | (x == CHICKEN_COL)))
        pos = jnp.where(hit, jnp.int8(9), pos)

        move_timer = (move_timer - (move_timer > 0)).astype(jnp.int8)
        terminate_timer = (game.terminate_timer - 1).astype(jnp.int16)
        new = FreewayState(
            car_x=x,
            car_timer=timer,
            car_speed=speed,
            pos=pos,
            move_timer=move_timer,
            terminate_timer=terminate_timer,
        )
        return new, scored.astype(jnp.float32), terminate_timer < 0

    def game_observation(self, game: FreewayState) -> jax.Array:
        """Channels: 0 chicken, 1 car, 2..6 the trail behind a car of |speed| 1..5."""
        # Eight cars spread over 700 cells: without materializing the state first, XLA recomputes the cars' step
        # in every cell of a fusion that selects between two observations (gymnax-style step + reset + where),
        # which made that composition 4x slower (benchmarks.check, maxatar[step+reset]).
        game = jax.tree.map(materialize, game)
        speed = game.car_speed
        back = _wrap(game.car_x + jnp.where(speed > 0, -1, 1).astype(jnp.int8))
        # Trail channel: 1 + |speed|; a speed-0 car borrows that of the nearest earlier car with a speed.
        source = jax.lax.cummax(jnp.where(speed != 0, np.arange(NUM_CARS, dtype=np.int32), -1))
        channel = jnp.where(source >= 0, 1 + jnp.abs(speed)[jnp.maximum(source, 0)], -1).astype(jnp.int8)
        code = jnp.where(
            COLS == game.car_x[:, None], jnp.int8(1), jnp.where(COLS == back[:, None], channel[:, None], jnp.int8(-1))
        )
        empty = jnp.full((1, 10), -1, jnp.int8)
        code = jnp.concatenate([empty, code, empty], axis=0)
        chicken = (ROWS[:, None] == game.pos) & (COLS == CHICKEN_COL)
        cars = code[:, :, None] == jnp.arange(1, 7, dtype=jnp.int8)
        return jnp.concatenate([chicken[:, :, None], cars], axis=-1)
