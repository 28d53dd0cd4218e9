"""A tiny 3x5 bitmap font drawn with array operations, so score and step overlays stay inside `jax.jit`.

Only the characters an overlay needs are defined: digits, minus, space and the letters of SCORE and STEP.
Static text becomes glyph codes in numpy; numbers become glyph codes in JAX (right-aligned, with a sign).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

GLYPH_HEIGHT, GLYPH_WIDTH = 5, 3
ADVANCE = GLYPH_WIDTH + 1  # one blank column between characters

# Each glyph is five rows of three pixels, "#" on.
_GLYPHS = {
    "0": ("###", "#.#", "#.#", "#.#", "###"),
    "1": (".#.", "##.", ".#.", ".#.", "###"),
    "2": ("###", "..#", "###", "#..", "###"),
    "3": ("###", "..#", ".##", "..#", "###"),
    "4": ("#.#", "#.#", "###", "..#", "..#"),
    "5": ("###", "#..", "###", "..#", "###"),
    "6": ("###", "#..", "###", "#.#", "###"),
    "7": ("###", "..#", ".#.", ".#.", ".#."),
    "8": ("###", "#.#", "###", "#.#", "###"),
    "9": ("###", "#.#", "###", "..#", "###"),
    "-": ("...", "...", "###", "...", "..."),
    " ": ("...", "...", "...", "...", "..."),
    "S": (".##", "#..", ".#.", "..#", "##."),
    "C": (".##", "#..", "#..", "#..", ".##"),
    "O": (".#.", "#.#", "#.#", "#.#", ".#."),
    "R": ("##.", "#.#", "##.", "#.#", "#.#"),
    "E": ("###", "#..", "##.", "#..", "###"),
    "T": ("###", ".#.", ".#.", ".#.", ".#."),
    "P": ("##.", "#.#", "##.", "#..", "#.."),
}
CHARS = "".join(_GLYPHS)
GLYPHS = np.array([[[c == "#" for c in row] for row in _GLYPHS[ch]] for ch in CHARS], dtype=bool)
SPACE, MINUS = CHARS.index(" "), CHARS.index("-")


def text_codes(text: str) -> np.ndarray:
    """Glyph codes of a static string (upper-cased); raises on characters the font lacks."""
    missing = sorted(set(text.upper()) - set(CHARS))
    if missing:
        raise ValueError(f"the overlay font has no glyph for {missing}")
    return np.array([CHARS.index(ch) for ch in text.upper()], dtype=np.int32)


def number_codes(value: jax.Array, width: int) -> jax.Array:
    """Glyph codes of an integer, right-aligned in `width` characters, with a leading minus if negative.

    Values that do not fit are clipped to the largest (or smallest) number `width` characters can show.
    """
    value = jnp.clip(jnp.asarray(value, jnp.int32), -(10 ** (width - 1) - 1), 10**width - 1)
    magnitude = jnp.abs(value)
    powers = jnp.asarray([10**p for p in range(width - 1, -1, -1)], jnp.int32)
    digits = (magnitude // powers) % 10
    shown = (magnitude >= powers) | (powers == 1)  # no leading zeros, but always the units digit
    # The minus goes in the blank position just left of the first shown digit.
    first_shown = jnp.concatenate([shown[1:] & ~shown[:-1], jnp.zeros(1, bool)])
    codes = jnp.where(shown, digits, SPACE)
    return jnp.where(first_shown & (value < 0), MINUS, codes).astype(jnp.int32)


def text_mask(codes: jax.Array, pixel: int) -> jax.Array:
    """A bool image (5 * pixel, len(codes) * 4 * pixel) with the glyphs on, each font pixel `pixel` wide."""
    glyphs = jnp.asarray(GLYPHS)[jnp.asarray(codes)]  # (n, 5, 3)
    glyphs = jnp.pad(glyphs, ((0, 0), (0, 0), (0, ADVANCE - GLYPH_WIDTH)))  # (n, 5, 4)
    line = jnp.transpose(glyphs, (1, 0, 2)).reshape(GLYPH_HEIGHT, -1)  # (5, n * 4)
    return jnp.repeat(jnp.repeat(line, pixel, axis=0), pixel, axis=1)
