"""Pixel observations: a game state drawn as an RGB or grayscale image, in JAX (jit, vmap and scan safe).

`picture(env, game)` draws one state. The MinAtar games are drawn from their observation (10 x 10 x channels),
Doors from its coded grid (split into planes by its `grid` hook), CartPole from the cart position and pole
angle. Every grid cell becomes a `scale` x `scale` block; each observation channel has the colour, shape and
place in the drawing order its game declares (`Environment.looks`: its channels and draw order).

`PixelObservation(env, "rgb")` is the same environment with that picture as its observation (what
`maxatar.make(id, obs_type="rgb")` and `gymnasium.make(id, obs_type="rgb")` give, as ALE's `obs_type`).
`FlatObservation(env)` (`obs_type="flat"`, and the `maxatar/<Game>-flat-v0` ids) is the same environment with
its observation as one float32 vector, for MLPs that do not flatten (CleanRL's scripts); both are
`ObservationVariant`s, which change the observation and nothing else.
`cell_table` gives the Python backend the same pixels without JAX: a grid cell's pixels depend only on which
channels are set in it, so one table, drawn once by `grid_image` itself, maps each cell to its block.

The `renderers` package builds its frames (with a score strip) on this module; `maxatar` never imports it.
"""

from __future__ import annotations

import colorsys
import dataclasses
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from maxatar import episode
from maxatar.checks import InputError, check_choice, check_size
from maxatar.core import RGB, Channel, Environment, EnvParams, observation_bounds

PIXEL_OBS_TYPES = ("rgb", "grayscale")
OBS_TYPES = (*PIXEL_OBS_TYPES, "flat")
MAX_OBS_PIXELS = 2**22  # 4096 x 4096 at most: 48 MiB an RGB observation
MIN_SIDE = 160  # default pictures are at least this many pixels on their short side
BACKGROUND: RGB = (14, 16, 26)
GRID_LINE: RGB = (32, 35, 52)
SHAPES = ("cell", "inset", "hbar", "vbar", "left", "right")
MAX_TABLE_CHANNELS = 12  # grids with more channels are drawn without a cell table (4096 cells at most)


@dataclasses.dataclass(frozen=True)
class GridPalette:
    """One `Channel` per observation channel (observation order), and the drawing order, bottom first."""

    channels: tuple[Channel, ...]
    draw_order: tuple[int, ...]

    def __post_init__(self):
        if sorted(self.draw_order) != list(range(len(self.channels))):
            raise InputError("draw_order must be a permutation of the channel indices")
        for channel in self.channels:
            if channel.shape not in SHAPES:
                raise InputError(f"unknown shape {channel.shape!r}; expected one of {SHAPES}")


def palette_of(env: Environment, num_channels: int) -> GridPalette:
    """The palette the game declares (`Environment.looks`: channels and draw order), or evenly spaced hues for a
    grid environment that declares none."""
    looks = env.looks
    if not looks.channels:
        colours = [colorsys.hsv_to_rgb(i / num_channels, 0.75, 1.0) for i in range(num_channels)]
        channels = tuple(Channel(f"channel{i}", tuple(round(255 * x) for x in c)) for i, c in enumerate(colours))
        return GridPalette(channels, tuple(range(num_channels)))
    names = [c.name for c in looks.channels]
    return GridPalette(tuple(looks.channels), tuple(names.index(name) for name in looks.draw_order or names))


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
        raise InputError(f"unknown shape {shape!r}; expected one of {SHAPES}")
    mask = np.broadcast_to(mask, (scale, scale))
    return mask if mask.any() else np.broadcast_to(body, (scale, scale))


def grid_image(channels, palette: GridPalette, scale: int):
    """A (rows, cols, C) bool grid -> uint8 (rows * scale, cols * scale, 3): each set channel drawn as its
    shape, later channels of the drawing order on top; empty pixels show the background and grid lines.
    numpy in, numpy out (how `cell_table` draws, even while a jitted caller is being traced); else JAX."""
    xp = np if isinstance(channels, np.ndarray) else jnp
    rows, cols, num_channels = channels.shape
    if num_channels != len(palette.channels):
        raise InputError(f"palette has {len(palette.channels)} channels, observation has {num_channels}")
    # Channels sharing a shape are merged per cell first (top rank wins), so the per-pixel work scales with
    # the number of distinct shapes, not of channels. int32 throughout: XLA on CPU vectorises it best.
    shapes = sorted({c.shape for c in palette.channels})
    masks = np.stack([np.tile(shape_mask(shape, scale), (rows, cols)) for shape in shapes], axis=-1)  # (H, W, K)
    member = np.array([[c.shape == shape for shape in shapes] for c in palette.channels], np.int32)  # (C, K)
    rank = np.zeros(num_channels, np.int32)
    rank[list(palette.draw_order)] = np.arange(1, num_channels + 1)
    cell_rank = xp.where(xp.asarray(channels, bool), rank, 0)  # (rows, cols, C)
    shape_rank = xp.max(cell_rank[..., None] * member, axis=2)  # (rows, cols, K)
    shape_rank = xp.repeat(xp.repeat(shape_rank, scale, axis=0), scale, axis=1)  # (H, W, K)
    pixel_rank = xp.max(shape_rank * masks.astype(np.int32), axis=-1)  # (H, W)
    # Table index: 0 background, 1 grid line, 1 + rank for the channels in drawing order.
    grid_line = ~np.tile(shape_mask("cell", scale), (rows, cols))
    index = xp.where(pixel_rank > 0, pixel_rank + 1, grid_line.astype(np.int32))
    colours = [BACKGROUND, GRID_LINE] + [palette.channels[i].colour for i in palette.draw_order]
    return xp.asarray(np.array(colours, np.uint8))[index]


@functools.lru_cache(maxsize=64)
def cell_table(env: Environment, num_channels: int, obs_type: str, scale: int) -> np.ndarray:
    """(scale, 2**channels, scale[, 3]) uint8: row i of the pixels of a grid cell whose set channels are the bits
    of the index. A cell's pixels depend only on its channels (`grid_image` tiles one pattern per cell), so
    drawing a grid is a gather from this table, drawn once by `grid_image` itself (all codes in one row of
    cells): about 10x cheaper per step in XLA than `grid_image`, and the same table serves numpy."""
    codes = np.arange(2**num_channels)
    bits = ((codes[:, None] >> np.arange(num_channels)) & 1).astype(bool)  # (codes, channels)
    strip = grid_image(bits[None], palette_of(env, num_channels), scale)  # (s, codes * s, 3)
    table = strip.reshape(scale, len(codes), scale, 3)
    return np.ascontiguousarray(grayscale(table) if obs_type == "grayscale" else table)


def table_picture(table, cells):
    """Gather each cell's block: `table` (s, codes, s[, 3]) from `cell_table`, `cells` (rows, cols) codes ->
    (rows * s, cols * s[, 3]). Written once for numpy and JAX, so the two paths cannot differ."""
    scale, rows, cols = table.shape[0], *cells.shape
    blocks = table[:, cells]  # (s, rows, cols, s[, 3]): gathering along the table's middle axis is the fast layout
    return blocks.swapaxes(0, 1).reshape(rows * scale, cols * scale, *table.shape[3:])


# --- a state's picture ---


class Canvas(NamedTuple):
    """How an environment is drawn: its grid (rows, cols, channels), or None for a game drawn by its own `draw`
    hook on a canvas of `looks.canvas_cells` (CartPole)."""

    grid: tuple[int, int, int] | None
    scale: int
    cells: tuple[int, int] | None = None  # the canvas of a game drawn by its own hook

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self.grid[:2] if self.grid is not None else self.cells
        return rows * self.scale, cols * self.scale


@functools.lru_cache(maxsize=256)
def canvas(env: Environment, scale: int | None = None) -> Canvas:
    """What `picture` draws for `env` (static: from shapes only), with the default scale unless given."""
    env = unwrapped(env)
    cells = env.looks.canvas_cells
    if cells is not None:
        return Canvas(None, scale or default_scale(*cells), cells)
    grid = jax.eval_shape(env.grid, jax.ShapeDtypeStruct(env.obs_shape, env.obs_dtype))
    if grid is None:
        raise InputError(f"cannot draw {env.name}: its observation is no (rows, cols, channels) grid")
    rows, cols, num_channels = grid.shape
    return Canvas((rows, cols, num_channels), scale or default_scale(rows, cols))


def picture(env: Environment, game: Any, scale: int | None = None, obs_type: str = "rgb") -> jax.Array:
    """The picture of one (unbatched) game state as uint8 (H, W, 3), or (H, W) for obs_type "grayscale". Pure
    and jittable (`env`, `scale` and `obs_type` are static); `vmap` it for batches. `scale` is pixels per grid
    cell (default: short side >= 160)."""
    env = unwrapped(env)
    if env.looks.canvas_cells is not None:
        image = env.draw(game, scale or default_scale(*env.looks.canvas_cells))
        return grayscale(image) if obs_type == "grayscale" else image
    return grid_picture(env, env.game_observation(game), scale, obs_type)


def grid_picture(env: Environment, obs: jax.Array, scale: int | None = None, obs_type: str = "rgb") -> jax.Array:
    """`picture` of a grid game from its observation (split into planes by the game's `grid` hook)."""
    channels = env.grid(obs)
    if channels is None:
        raise InputError(f"cannot draw {env.name}: its observation is no (rows, cols, channels) grid")
    num_channels, scale = channels.shape[-1], scale or default_scale(*channels.shape[:2])
    if num_channels > MAX_TABLE_CHANNELS:  # a table of 2**channels cells would be too large: draw directly
        image = grid_image(channels, palette_of(env, num_channels), scale)
        return grayscale(image) if obs_type == "grayscale" else image
    table = cell_table(env, num_channels, obs_type, scale)
    cells = jnp.sum(channels.astype(jnp.int32) << jnp.arange(num_channels, dtype=jnp.int32), axis=-1)
    return table_picture(jnp.asarray(table), cells)


def grayscale(rgb):
    """ITU-R 601 luma, rounded, in integer arithmetic so that numpy and XLA give the same bytes."""
    xp = jnp if isinstance(rgb, jax.Array) else np
    r, g, b = (rgb[..., i].astype(xp.int32) for i in range(3))
    return ((299 * r + 587 * g + 114 * b + 500) // 1000).astype(xp.uint8)


def unwrapped(env: Environment) -> Environment:
    """The environment under any `ObservationVariant` (pixels, flat)."""
    return env.env if isinstance(env, ObservationVariant) else env


# --- the numpy path (the Python backend) ---


@functools.lru_cache(maxsize=64)
def code_bits(env: Environment) -> np.ndarray | None:
    """For an integer-coded observation (Doors): each code's channel bits, from the game's own `grid` hook;
    None for bool grids, whose channels are the bits."""
    if env.obs_dtype == jnp.bool_:
        return None
    bits = []
    for code in range(int(env.obs_nvec)):
        planes = np.asarray(env.grid(jnp.full(env.obs_shape, code, env.obs_dtype)))
        bits.append(int(np.sum(planes[0, 0].astype(np.int64) << np.arange(planes.shape[-1]))))
    return np.array(bits, np.int64)


def numpy_drawable(env: Environment, scale: int | None = None) -> bool:
    """Whether `numpy_picture` can draw `env`: a grid game whose cells fit one table (CartPole, drawn by its own
    hook, and games with more than `MAX_TABLE_CHANNELS` channels go through the JAX picture)."""
    grid = canvas(env, scale).grid
    return grid is not None and grid[2] <= MAX_TABLE_CHANNELS


def numpy_picture(env: Environment, obs: np.ndarray, obs_type: str, scale: int) -> np.ndarray:
    """`picture` of a grid game in numpy, from its observation (no JAX call): a fresh array."""
    rows, cols, num_channels = canvas(env, scale).grid
    codes = code_bits(env)
    if codes is None:
        cells = obs.reshape(rows, cols, num_channels).astype(np.int64) @ (1 << np.arange(num_channels))
    else:
        cells = codes[obs.reshape(rows, cols)]
    return table_picture(cell_table(env, num_channels, obs_type, scale), cells)


# --- the wrapper ---


class ObservationVariant(episode.Environment):
    """`env` with another observation of the same state: the base of `PixelObservation` and `FlatObservation`.

    Everything but the observation (actions, params, draws, dynamics) is `env`'s, so rollouts, `AutoReset`, the
    Gymnasium and gymnax front ends and the plain-Python twins work unchanged. A subclass sets `obs_shape` (and
    its dtype and bounds) and defines `game_observation`."""

    def __init__(self, env: Environment):
        if not isinstance(env, Environment) or isinstance(env, ObservationVariant):
            raise InputError(f"{type(self).__name__} wraps a MaxAtar environment with its own observation, got {env!r}")
        self.env = env
        self.action_set = env.action_set

    def __getattr__(self, name):
        """A game's own attributes (Doors' `size`, ...) are the wrapped environment's."""
        if name == "env":  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    # What the contract reads from class attributes comes from the wrapped environment.
    name = property(lambda self: self.env.name)
    num_game_actions = property(lambda self: self.env.num_game_actions)
    action_names = property(lambda self: self.env.action_names)
    randomness = property(lambda self: self.env.randomness)
    params_class = property(lambda self: self.env.params_class)
    num_reset_uniforms = property(lambda self: self.env.num_reset_uniforms)
    num_step_uniforms = property(lambda self: self.env.num_step_uniforms)
    max_difficulty = property(lambda self: self.env.max_difficulty)
    looks = property(lambda self: self.env.looks)
    states = property(lambda self: self.env.states)

    def state_values(self, game):
        return self.env.state_values(game)

    def state_rules(self, state):
        return self.env.state_rules(state)

    def default_params(self) -> EnvParams:
        return self.env.default_params()

    def reset_draws(self, uniforms, params):
        return self.env.reset_draws(uniforms, params)

    def init(self, draws, params):
        return self.env.init(draws, params)

    def at_difficulty(self, game, level):
        return self.env.at_difficulty(game, level)

    def step_draws(self, uniforms, game, params):
        return self.env.step_draws(uniforms, game, params)

    def game_step(self, game, action, draws, params):
        return self.env.game_step(game, action, draws, params)

    def grid(self, obs):
        return None  # not the game's grid of channels


class PixelObservation(ObservationVariant):
    """`env` with its picture as the observation: uint8 (H, W, 3) for "rgb", (H, W) for "grayscale".

    Everything else is `env`'s (`ObservationVariant`); the plain-Python twin is `maxatar.pixel_twin.PixelTwin`.
    `scale` is pixels per grid cell (default: the short side at least 160 pixels, 160 x 160 for the MinAtar
    games)."""

    obs_dtype = jnp.uint8
    obs_nvec = 256
    obs_pixels = True

    def __init__(self, env: Environment, obs_type: str = "rgb", scale: int | None = None):
        super().__init__(env)
        self.obs_type = check_choice("obs_type", obs_type, PIXEL_OBS_TYPES)
        scale = None if scale is None else check_size("obs_scale", scale, what=" (pixels per cell) or None")
        self.scale = canvas(env, scale).scale
        height, width = canvas(env, self.scale).shape
        if height * width > MAX_OBS_PIXELS:  # refused here, not by an out-of-memory error at the first reset
            most = math.isqrt(MAX_OBS_PIXELS // (height * width // self.scale**2))
            raise InputError(
                f"obs_scale must be at most {most} for {env.name} (pictures of at most {MAX_OBS_PIXELS} pixels), "
                f"got {scale}: a {height} x {width} picture, {height * width * 3 / 2**20:.0f} MiB an observation"
            )
        self.obs_shape = (height, width, 3) if obs_type == "rgb" else (height, width)
        self.twin = "maxatar.pixel_twin:PixelTwin" if env.twin else None

    def game_observation(self, game) -> jax.Array:
        return picture(self.env, game, self.scale, self.obs_type)


def flat_observation(obs):
    """The rule of `obs_type="flat"`, for JAX and numpy arrays alike: the observation as one float32 vector (in
    C order: for a MinAtar grid, cell (row, col)'s channels are elements `(row * 10 + col) * C` onwards)."""
    return obs.reshape(-1).astype(np.float32)


class FlatObservation(ObservationVariant):
    """`env` with its observation flattened to a float32 vector (`flat_observation`): what an MLP that does not
    flatten its input takes (CleanRL's `dqn.py`, `dqn_jax.py`, `ppo.py`), as Gymnasium's `FlattenObservation`
    plus `DtypeObservation(float32)` give, but on every front end and backend (`make_vec`'s jitted step and
    the Python twins included). Bounds are the wrapped observation's: [0, 1] for the MinAtar grids."""

    obs_dtype = jnp.float32
    obs_type = "flat"

    def __init__(self, env: Environment):
        super().__init__(env)
        low, high, _ = observation_bounds(env)
        self.obs_shape = (math.prod(env.obs_shape),)
        self.obs_low, self.obs_high = (_flat_bound(bound, env.obs_shape) for bound in (low, high))
        self.twin = "maxatar.pixel_twin:FlatTwin" if env.twin else None

    def game_observation(self, game) -> jax.Array:
        return flat_observation(self.env.game_observation(game))


def _flat_bound(bound, shape) -> float | tuple[float, ...]:
    """A scalar bound stays one; a per-element bound is flattened (a tuple: the environment stays hashable)."""
    if np.ndim(bound) == 0:
        return float(bound)
    return tuple(np.broadcast_to(np.asarray(bound, np.float32), shape).reshape(-1).tolist())


def with_obs_type(env: Environment, obs_type: str | None = None, scale: int | None = None) -> Environment:
    """`env` itself for obs_type None (its own observation), its `FlatObservation` for "flat", else its
    `PixelObservation`."""
    check_choice("obs_type", obs_type, OBS_TYPES, none=True)
    if obs_type is None or obs_type == "flat":
        if scale is not None:
            raise InputError("obs_scale applies only to pixel observations (obs_type='rgb' or 'grayscale')")
        return env if obs_type is None else FlatObservation(env)
    return PixelObservation(env, obs_type, scale)


__all__ = [
    "OBS_TYPES",
    "FlatObservation",
    "GridPalette",
    "ObservationVariant",
    "PixelObservation",
    "canvas",
    "flat_observation",
    "grayscale",
    "grid_image",
    "grid_picture",
    "numpy_picture",
    "palette_of",
    "picture",
    "with_obs_type",
]
