"""Environment state -> RGB frame, written in JAX so a whole rollout renders inside one jitted `lax.scan`.

`frame(env, state)` is what the Gymnasium classes call (through the `maxatar.renderers` entry point): the
picture `maxatar.pixels` draws (the one pixel observations show), optionally with a strip below it giving the
score and step. The drawing itself (palettes, cell shapes, a game's own `draw`) lives in `maxatar.pixels`, so that pixel
observations need no renderer; its names are re-exported here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from maxatar.core import RGB, Environment, EnvState
from maxatar.pixels import (  # noqa: F401  (re-exported: the renderers' public drawing names)
    BACKGROUND,
    GRID_LINE,
    MIN_SIDE,
    SHAPES,
    Channel,
    GridPalette,
    default_scale,
    grid_image,
    grid_picture,
    palette_of,
    picture,
    shape_mask,
    unwrapped,
)
from renderers.font import ADVANCE, GLYPH_WIDTH, SPACE, number_codes, text_codes, text_mask

BAR_BACKGROUND: RGB = (0, 0, 0)
TEXT: RGB = (235, 235, 235)
DIGITS = 5  # of each number in the overlay
OVERLAY_WIDTH = (len("SCORE") + DIGITS + 1 + len("STEP") + DIGITS) * ADVANCE  # the narrowest frame it fits


# --- overlay ---


def status_bar(width: int, score: jax.Array | None = None, step: jax.Array | None = None) -> jax.Array:
    """A strip (height, width, 3) with "SCORE n" on the left and "STEP n" on the right (either may be None).

    The score is rounded to an integer (Doors' rewards are fractional)."""
    fields = []
    if score is not None:
        fields.append(("SCORE", jnp.round(jnp.asarray(score, jnp.float32)).astype(jnp.int32)))
    if step is not None:
        fields.append(("STEP", jnp.asarray(step, jnp.int32)))
    needed = sum(len(label) + DIGITS for label, _ in fields) + len(fields) - 1
    pixel = min(3, width // (needed * ADVANCE))
    if pixel < 1:
        raise ValueError(f"a {width}-pixel-wide frame is too narrow for the score/step overlay; use a larger scale")
    slots = width // (ADVANCE * pixel)
    codes = jnp.full(slots, SPACE, jnp.int32)
    starts = [0, slots - len(fields[-1][0]) - DIGITS][: len(fields)]  # the second field is right-aligned
    for (label, value), start in zip(fields, starts, strict=True):
        field = jnp.concatenate([jnp.asarray(text_codes(label)), number_codes(value, DIGITS)])
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
    base = unwrapped(env)  # a pixel-observation env is drawn as the game it wraps
    if base.looks.canvas_cells is not None:  # a game drawn by its own hook (CartPole)
        image = picture(base, state.game, scale)
    else:
        image = grid_picture(base, base.observation(state), scale)
    if score is None and step is None:
        return image
    return jnp.concatenate([image, status_bar(image.shape[1], score, step)], axis=0)


def check_overlay_fits(env: Environment, params, scale: int | None) -> None:
    """Refuse (ValueError) a `scale` at which `env`'s frames are too narrow for the score and step strip, naming
    the smallest that is wide enough, before anything compiles (the widths come from `jax.eval_shape`)."""

    def width(scale: int | None) -> int:
        def draw(key):
            return frame(env, env.reset(key, params)[1], scale=scale)

        return jax.eval_shape(draw, jax.random.key(0)).shape[1]

    if width(scale) >= OVERLAY_WIDTH:
        return
    smallest = next((s for s in range((scale or 1) + 1, 65) if width(s) >= OVERLAY_WIDTH), None)
    hint = "" if smallest is None else f"the smallest scale with it is {smallest}, or "
    raise ValueError(
        f"at scale {scale} the frames are {width(scale)} pixels wide, too narrow for the score/step overlay, which "
        f"needs {OVERLAY_WIDTH}; {hint}pass --no-overlay"
    )
