"""CartPole's twin: Gymnasium's classic `CartPole-v1` arithmetic itself, in float64.

The JAX step integrates in float32, and XLA on CPU contracts products and sums into fused multiply-adds
and evaluates sin and cos its own way, so no plain-Python float32 code can match it bit for bit. The twin
therefore does what the reference does: a float64 state, float64 arithmetic in the reference's order,
termination tested on the float64 state, float32 observations. It equals the reference exactly
(`tests/test_cartpole.py`) and the JAX step to float32 rounding; `to_pure` rounds the state to float32.
"""

from __future__ import annotations

import math

import numpy as np

from maxatar.games.cartpole.rules import (
    FORCE,
    GRAVITY,
    HALF_LENGTH,
    MASS_POLE,
    POLE_MASS_LENGTH,
    RESET_BOUND,
    TAU,
    THETA_LIMIT,
    TOTAL_MASS,
    X_LIMIT,
    CartPoleState,
)
from maxatar.twin import Twin


class CartPoleTwin(Twin):
    """State: a list [x, x_dot, theta, theta_dot] of Python (float64) floats."""

    def reset(self, uniforms):
        # numpy's `uniform(low, high)` is `low + (high - low) * u`, in float64.
        return [-RESET_BOUND + (2 * RESET_BOUND) * u for u in uniforms]

    def step(self, game, action, uniforms):
        x, x_dot, theta, theta_dot = game
        force = FORCE if action == 1 else -FORCE
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + POLE_MASS_LENGTH * theta_dot**2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos**2 / TOTAL_MASS))
        x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos / TOTAL_MASS
        game = [x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot, theta_dot + TAU * theta_acc]
        terminal = not (-X_LIMIT <= game[0] <= X_LIMIT and -THETA_LIMIT <= game[2] <= THETA_LIMIT)
        return game, 1.0, terminal

    def observation(self, game):
        return np.array(game, np.float32)

    def to_pure(self, game):
        return CartPoleState(*np.array(game, np.float32))

    def from_pure(self, state):
        """The twin state of a JAX `CartPoleState` (its float32 values, exactly, as float64)."""
        return [float(v) for v in (state.x, state.x_dot, state.theta, state.theta_dot)]
