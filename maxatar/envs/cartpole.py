"""CartPole with the dynamics, reward, termination and reset of Gymnasium's classic numpy `CartPole-v1`.

Not Gymnasium's `phys2d/CartPole-v1`, which uses masspole + length where the classic task uses
masspole * length. The state is float32 (the reference integrates in float64 and returns float32
observations); termination compares against the float64 thresholds exactly, so a float32 state on the
boundary terminates exactly when the reference would. Time limit: 500 steps, reported as truncation.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import Environment, EnvParams, pytree_dataclass

GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_CART + MASS_POLE
HALF_LENGTH = 0.5
POLE_MASS_LENGTH = MASS_POLE * HALF_LENGTH
FORCE = 10.0
TAU = 0.02
X_LIMIT = 2.4
THETA_LIMIT = 12 * 2 * math.pi / 360
RESET_BOUND = 0.05


def _first_float32_above(limit: float) -> float:
    """The smallest float32 strictly greater than `limit`: for float32 v, `v > limit` iff `v >= this`."""
    f = np.float32(limit)
    return float(f if float(f) > limit else np.nextafter(f, np.float32(np.inf)))


X_OUT = _first_float32_above(X_LIMIT)
THETA_OUT = _first_float32_above(THETA_LIMIT)


@pytree_dataclass
class CartPoleState:
    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array


class CartPole(Environment):
    """Push the cart left (0) or right (1) to keep the pole upright; +1 per step, including the last."""

    name = "cartpole"
    num_game_actions = 2
    obs_shape = (4,)
    obs_dtype = jnp.float32
    num_reset_uniforms = 4
    default_sticky_action_prob = 0.0
    default_max_steps = 500
    twin = "maxatar.twins.cartpole:CartPoleTwin"
    # Gymnasium's observation bounds: twice the termination limits, unbounded velocities.
    obs_high = (2 * X_LIMIT, math.inf, 2 * THETA_LIMIT, math.inf)

    def reset_draws(self, uniforms, params: EnvParams):
        return uniforms

    def init(self, draws, params: EnvParams) -> CartPoleState:
        x, x_dot, theta, theta_dot = -RESET_BOUND + 2 * RESET_BOUND * draws
        return CartPoleState(x, x_dot, theta, theta_dot)

    def game_step(self, game: CartPoleState, action, draws, params: EnvParams):
        force = jnp.where(action == 1, FORCE, -FORCE)
        cos, sin = jnp.cos(game.theta), jnp.sin(game.theta)
        temp = (force + POLE_MASS_LENGTH * game.theta_dot**2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos**2 / TOTAL_MASS))
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        # Explicit Euler, as the reference's default integrator: positions use the old velocities.
        next_game = CartPoleState(
            x=game.x + TAU * game.x_dot,
            x_dot=game.x_dot + TAU * x_acc,
            theta=game.theta + TAU * game.theta_dot,
            theta_dot=game.theta_dot + TAU * theta_acc,
        )
        terminal = (jnp.abs(next_game.x) >= X_OUT) | (jnp.abs(next_game.theta) >= THETA_OUT)
        return next_game, jnp.float32(1.0), terminal

    def game_observation(self, game: CartPoleState) -> jax.Array:
        return jnp.stack([game.x, game.x_dot, game.theta, game.theta_dot]).astype(jnp.float32)
