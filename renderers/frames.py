"""Environment state -> RGB frame, written in JAX so a whole rollout renders inside one jitted `lax.scan`.

`frame(env, state)` is what the Gymnasium classes call (through the `maxatar.renderers` entry point). The
MinAtar games are drawn from their observation (10 x 10 x channels, MinAtar's channel order), so the drawing
does not depend on how each game stores its state; Doors from its coded grid observation, split into planes
by its `grid` hook; CartPole, whose observation is no grid, from the cart position and pole angle. Every grid
cell becomes a `scale` x `scale` block (integer upscaling).

Palettes come from the games (`Environment.channels` and `draw_order`, next to each game's rules): each
observation channel has a colour and a shape (a full cell, a small square for trails, bars for bullets,
triangles for Space Invaders' direction channels) and a place in the drawing order, so several channels on one
cell stay distinguishable.
"""

from __future__ import annotations

import colorsys
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import RGB, Channel, Environment, EnvState
from maxatar.envs.cartpole import CartPoleState
from renderers.font import ADVANCE, GLYPH_WIDTH, SPACE, number_codes, text_codes, text_mask

MIN_SIDE = 160  # default frames are at least this many pixels on their short side
BACKGROUND: RGB = (14, 16, 26)
GRID_LINE: RGB = (32, 35, 52)
BAR_BACKGROUND: RGB = (0, 0, 0)
TEXT: RGB = (235, 235, 235)

SHAPES = ("cell", "inset", "hbar", "vbar", "left", "right")


@dataclasses.dataclass(frozen=True)
class GridPalette:
    """One `Channel` per observation channel (observation order), and the drawing order, bottom first."""

    channels: tuple[Channel, ...]
    draw_order: tuple[int, ...]

    def __post_init__(self):
        if sorted(self.draw_order) != list(range(len(self.channels))):
            raise ValueError("draw_order must be a permutation of the channel indices")
        for channel in self.channels:
            if channel.shape not in SHAPES:
                raise ValueError(f"unknown shape {channel.shape!r}; expected one of {SHAPES}")


def palette_of(env: Environment, num_channels: int) -> GridPalette:
    """The palette the game declares (`Environment.channels` and `draw_order`), or evenly spaced hues for a
    grid environment that declares none."""
    if not env.channels:
        colours = [colorsys.hsv_to_rgb(i / num_channels, 0.75, 1.0) for i in range(num_channels)]
        channels = tuple(Channel(f"channel{i}", tuple(round(255 * x) for x in c)) for i, c in enumerate(colours))
        return GridPalette(channels, tuple(range(num_channels)))
    names = [c.name for c in env.channels]
    return GridPalette(tuple(env.channels), tuple(names.index(name) for name in env.draw_order or names))


def default_scale(rows: int, cols: int) -> int:
    """The smallest integer upscaling that makes the short side at least `MIN_SIDE` pixels."""
    return max(1, math.ceil(MIN_SIDE / min(rows, cols)))


# --- grids ---


def _inner(scale: int) -> int:
    """Pixels of a cell's body; the rest is a one-pixel grid line (none when cells are tiny)."""
    return scale - 1 if scale >= 4 else scale


def shape_mask(shape: str, scale: int) -> np.ndarray:
    """The (scale, scale) pixels a shape covers inside one cell; never empty."""
    inner = _inner(scale)
    u = np.arange(scale)[:, None] + 0.5  # pixel centres, row within the cell
    v = np.arange(scale)[None, :] + 0.5  # column within the cell
    centre = inner / 2
    body = (u < inner) & (v < inner)
    if shape == "cell":
        mask = body
    elif shape == "inset":
        mask = body & (np.abs(u - centre) <= inner / 4) & (np.abs(v - centre) <= inner / 4)
    elif shape == "hbar":
        mask = body & (np.abs(u - centre) <= max(inner / 8, 0.5))
    elif shape == "vbar":
        mask = body & (np.abs(v - centre) <= max(inner / 8, 0.5))
    elif shape in ("left", "right"):
        # A triangle in one half of the cell, pointing towards its side.
        depth = v if shape == "left" else inner - v
        tip, base, half_height = 0.1 * inner, 0.5 * inner, 0.3 * inner
        spread = half_height * (depth - tip) / (base - tip)
        mask = body & (depth >= tip) & (depth <= base) & (np.abs(u - centre) <= spread)
    else:
        raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")
    mask = np.broadcast_to(mask, (scale, scale))
    return mask if mask.any() else np.broadcast_to(body, (scale, scale))


def grid_image(channels: jax.Array, palette: GridPalette, scale: int) -> jax.Array:
    """A (rows, cols, C) bool grid -> uint8 (rows * scale, cols * scale, 3): each set channel drawn as its
    shape, later channels of the drawing order on top; empty pixels show the background and grid lines."""
    rows, cols, num_channels = channels.shape
    if num_channels != len(palette.channels):
        raise ValueError(f"palette has {len(palette.channels)} channels, observation has {num_channels}")
    # Channels sharing a shape are merged per cell first (top rank wins), so the per-pixel work scales with
    # the number of distinct shapes, not of channels. int32 throughout: XLA on CPU vectorises it best.
    shapes = sorted({c.shape for c in palette.channels})
    masks = np.stack([np.tile(shape_mask(shape, scale), (rows, cols)) for shape in shapes], axis=-1)  # (H, W, K)
    member = np.array([[c.shape == shape for shape in shapes] for c in palette.channels], np.int32)  # (C, K)
    rank = np.zeros(num_channels, np.int32)
    rank[list(palette.draw_order)] = np.arange(1, num_channels + 1)
    cell_rank = jnp.where(jnp.asarray(channels, bool), jnp.asarray(rank), 0)  # (rows, cols, C)
    shape_rank = jnp.max(cell_rank[..., None] * member, axis=2)  # (rows, cols, K)
    shape_rank = jnp.repeat(jnp.repeat(shape_rank, scale, axis=0), scale, axis=1)  # (H, W, K)
    pixel_rank = jnp.max(shape_rank * masks.astype(np.int32), axis=-1)  # (H, W)
    # Table index: 0 background, 1 grid line, 1 + rank for the channels in drawing order.
    grid_line = ~np.tile(shape_mask("cell", scale), (rows, cols))
    index = jnp.where(pixel_rank > 0, pixel_rank + 1, jnp.asarray(grid_line, jnp.int32))
    colours = [BACKGROUND, GRID_LINE] + [palette.channels[i].colour for i in palette.draw_order]
    return jnp.asarray(np.array(colours, np.uint8))[index]


# --- CartPole ---

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


# --- overlay ---


def status_bar(width: int, score: jax.Array | None = None, step: jax.Array | None = None) -> jax.Array:
    """A strip (height, width, 3) with "SCORE n" on the left and "STEP n" on the right (either may be None).

    The score is rounded to an integer (Doors' rewards are fractional)."""
    fields = []
    if score is not None:
        fields.append(("SCORE", jnp.round(jnp.asarray(score, jnp.float32)).astype(jnp.int32)))
    if step is not None:
        fields.append(("STEP", jnp.asarray(step, jnp.int32)))
    digits = 5
    needed = sum(len(label) + digits for label, _ in fields) + len(fields) - 1
    pixel = min(3, width // (needed * ADVANCE))
    if pixel < 1:
        raise ValueError(f"a {width}-pixel-wide frame is too narrow for the score/step overlay; use a larger scale")
    slots = width // (ADVANCE * pixel)
    codes = jnp.full(slots, SPACE, jnp.int32)
    starts = [0, slots - len(fields[-1][0]) - digits][: len(fields)]  # the second field is right-aligned
    for (label, value), start in zip(fields, starts, strict=True):
        field = jnp.concatenate([jnp.asarray(text_codes(label)), number_codes(value, digits)])
        codes = codes.at[start : start + field.shape[0]].set(field)
    text = text_mask(codes, pixel)[:, : -(ADVANCE - GLYPH_WIDTH) * pixel]  # drop the last spacing column
    margin_x = (width - text.shape[1]) // 2
    margin_y = 2 * pixel
    text = jnp.pad(text, ((margin_y, margin_y), (margin_x, width - text.shape[1] - margin_x)))
    return jnp.where(text[..., None], jnp.asarray(TEXT, jnp.uint8), jnp.asarray(BAR_BACKGROUND, jnp.uint8))


# --- entry point ---


def frame(
    env: Environment,
    state: EnvState,
    score: jax.Array | None = None,
    step: jax.Array | None = None,
    *,
    scale: int | None = None,
) -> jax.Array:
    """The frame of one (unbatched) state as uint8 (H, W, 3). Pure and jittable (`env` and `scale` are
    static); `vmap` it for batches. With `score` and/or `step` (scalars, may be traced) a status strip with
    those numbers is added below the picture. `scale` is pixels per grid cell (default: short side >= 160).
    """
    channels = env.grid(env.observation(state))
    if channels is not None:
        image = grid_image(channels, palette_of(env, channels.shape[-1]), scale or default_scale(*channels.shape[:2]))
    elif isinstance(state.game, CartPoleState):
        game = state.game
        image = cartpole_image(game.x, game.theta, scale or default_scale(*CARTPOLE_CELLS))
    else:
        raise TypeError(f"cannot draw {env.name}: its observation is no (rows, cols, channels) grid")
    if score is None and step is None:
        return image
    return jnp.concatenate([image, status_bar(image.shape[1], score, step)], axis=0)
