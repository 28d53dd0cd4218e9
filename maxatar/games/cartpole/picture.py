"""CartPole's picture: a cart on its track and the pole, drawn from the state (its observation is no grid)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from maxatar.pixels import BACKGROUND

CARTPOLE_CELLS = (10, 20)  # canvas in cells (rows, cols); `scale` pixels per cell as for the grid games
CARTPOLE_HALF_WIDTH = 2.7  # metres shown either side of the centre (the episode ends beyond 2.4)
CARTPOLE_X_LIMIT = 2.4
CARTPOLE_POLE_LENGTH = 1.0  # the full pole (twice the half-length of the dynamics)
CART_SIZE = (0.5, 0.3)  # width, height in metres
POLE_WIDTH = 0.08
CARTPOLE_COLOURS = {
    "track": (120, 120, 140),
    "limit": (225, 70, 70),
    "cart": (70, 150, 255),
    "pole": (240, 150, 60),
    "axle": (225, 225, 235),
}


def cartpole_image(x: jax.Array, theta: jax.Array, scale: int) -> jax.Array:
    """A cart on a track and its pole at angle `theta` (radians from upright, positive leaning right)."""
    height, width = CARTPOLE_CELLS[0] * scale, CARTPOLE_CELLS[1] * scale
    per_metre = width / (2 * CARTPOLE_HALF_WIDTH)
    ys = jnp.arange(height, dtype=jnp.float32)[:, None] + 0.5
    xs = jnp.arange(width, dtype=jnp.float32)[None, :] + 0.5
    track_y = 0.75 * height
    cart_x = width / 2 + x * per_metre
    cart_w, cart_h = CART_SIZE[0] * per_metre, CART_SIZE[1] * per_metre
    pivot_x, pivot_y = cart_x, track_y - cart_h
    tip_dx = CARTPOLE_POLE_LENGTH * per_metre * jnp.sin(theta)
    tip_dy = -CARTPOLE_POLE_LENGTH * per_metre * jnp.cos(theta)
    # Distance from each pixel to the pole's segment.
    along = ((xs - pivot_x) * tip_dx + (ys - pivot_y) * tip_dy) / (tip_dx**2 + tip_dy**2)
    along = jnp.clip(along, 0.0, 1.0)
    to_pole = jnp.hypot(xs - pivot_x - along * tip_dx, ys - pivot_y - along * tip_dy)
    limit_xs = jnp.asarray([width / 2 - CARTPOLE_X_LIMIT * per_metre, width / 2 + CARTPOLE_X_LIMIT * per_metre])
    line = max(1.0, scale / 8)
    near_limit = jnp.min(jnp.abs(xs - limit_xs[:, None, None]), axis=0) <= line
    layers = [  # bottom first
        ("track", (jnp.abs(ys - track_y) <= line / 2) & (xs >= 0)),
        ("limit", (ys >= track_y) & (ys <= track_y + 3 * line) & near_limit),
        ("cart", (jnp.abs(xs - cart_x) <= cart_w / 2) & (ys >= track_y - cart_h) & (ys <= track_y)),
        ("pole", to_pole <= POLE_WIDTH * per_metre / 2),
        ("axle", jnp.hypot(xs - pivot_x, ys - pivot_y) <= POLE_WIDTH * per_metre * 0.6),
    ]
    image = jnp.broadcast_to(jnp.asarray(BACKGROUND, jnp.uint8), (height, width, 3))
    for name, mask in layers:
        image = jnp.where(mask[..., None], jnp.asarray(CARTPOLE_COLOURS[name], jnp.uint8), image)
    return image
