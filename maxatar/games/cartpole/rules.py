"""CartPole with the dynamics, reward, termination and reset of Gymnasium's classic numpy `CartPole-v1`.

Not Gymnasium's `phys2d/CartPole-v1`, which uses masspole + length where the classic task uses
masspole * length. The state is float32 (the reference integrates in float64 and returns float32
observations); termination compares against the float64 thresholds exactly, so a float32 state on the
boundary terminates exactly when the reference would. Time limit: 500 steps, reported as truncation.

The two Gymnasium backends differ by that rounding: the JAX one steps this float32 state, the Python one
(`backend="python"`) Gymnasium's float64 arithmetic itself, so a policy whose decision sits near its boundary,
as a balancing one's does, picks another action on one of them. A balancing controller
(`3 theta + theta_dot > 0`) parts them in every one of 2048 episodes (first at step 133 in the median, 40 at the
earliest), though each episode still lasts the 500 steps on both (`python -m lab.cartpole_backends`). Agreement
would take float64 in JAX or XLA's float32 arithmetic in Python; compare CartPole results on one backend.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import EnvParams, Looks, States, pytree_dataclass
from maxatar.episode import Environment
from maxatar.games.cartpole.picture import CARTPOLE_CELLS, cartpole_image

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
    """The cart's position and velocity and the pole's angle (radians from upright) and angular velocity."""

    x: jax.Array  # float32
    x_dot: jax.Array  # float32
    theta: jax.Array  # float32
    theta_dot: jax.Array  # float32


@pytree_dataclass
class CartPoleDraws:
    """The reference's reset variate: `uniform(-0.05, 0.05, size=4)`, the start state."""

    start: jax.Array  # float32[4]: x, x_dot, theta, theta_dot, each in [-0.05, 0.05)


class CartPole(Environment):
    """Push the cart left (0) or right (1) to keep the pole upright; +1 per step, including the last."""

    name = "cartpole"
    gymnax_name = "CartPole-v1"
    # gymnax's CartPole is Gymnasium's, which MaxAtar's defaults are too.
    settings = {"minatar": {}, "gymnax": {"sticky_action_prob": 0.0, "max_steps": 500}}
    num_game_actions = 2
    action_names = ("push left", "push right")
    obs_shape = (4,)
    obs_dtype = jnp.float32
    obs_high = (2 * X_LIMIT, math.inf, 2 * THETA_LIMIT, math.inf)  # Gymnasium's: twice the termination limits
    num_reset_uniforms = 4
    num_step_uniforms = 0
    default_sticky_action_prob = 0.0
    default_max_steps = 500
    twin = "maxatar.games.cartpole.twin:CartPoleTwin"
    randomness = "The start state (four uniforms in [-0.05, 0.05]); the steps are deterministic given the actions."
    looks = Looks(
        canvas_cells=CARTPOLE_CELLS,
        keymap={"left": 0, "right": 1},
        idle_action=None,  # no no-op: the previous push goes on
    )
    # The values a CartPole episode reaches (`maxatar.checks`): finite, the position and angle inside the
    # observation space (twice the termination limits; an episode ends on leaving the limits).
    states = States(
        ranges={
            "x": (-2 * X_LIMIT, 2 * X_LIMIT),
            "x_dot": (-math.inf, math.inf),
            "theta": (-2 * THETA_LIMIT, 2 * THETA_LIMIT),
            "theta_dot": (-math.inf, math.inf),
        },
    )

    def state_rules(self, state) -> list[str]:
        """An episode that has not ended is inside the termination limits (to float32 rounding)."""
        g = jax.tree.map(np.asarray, state.game)
        out = (np.abs(g.x) > X_OUT) | (np.abs(g.theta) > THETA_OUT)
        if np.any(out & ~np.asarray(state.terminated)):
            return [
                "the cart (game.x) or the pole (game.theta) is past the termination limits in an episode that "
                "has not ended"
            ]
        return []

    def reset_draws(self, uniforms: jax.Array, params: EnvParams) -> CartPoleDraws:
        """Four uniforms scaled to Gymnasium's start range."""
        return CartPoleDraws(start=-RESET_BOUND + 2 * RESET_BOUND * uniforms)

    def init(self, draws: CartPoleDraws, params: EnvParams) -> CartPoleState:
        x, x_dot, theta, theta_dot = draws.start
        return CartPoleState(x, x_dot, theta, theta_dot)

    def game_step(self, game: CartPoleState, action: jax.Array, draws: tuple, params: EnvParams):
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

    def draw(self, game: CartPoleState, scale: int) -> jax.Array:
        """The cart on its track and the pole (`maxatar.games.cartpole.picture`)."""
        return cartpole_image(game.x, game.theta, scale)

    def game_observation(self, game: CartPoleState) -> jax.Array:
        """The state itself: x, x_dot, theta, theta_dot (float32)."""
        return jnp.stack([game.x, game.x_dot, game.theta, game.theta_dot]).astype(jnp.float32)
