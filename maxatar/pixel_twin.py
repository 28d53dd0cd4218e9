"""The twins of the observation variants: the wrapped game's twin, with its observation drawn as pixels
(`PixelTwin`, for `PixelObservation`) or flattened to float32 (`FlatTwin`, for `FlatObservation`).

Grid games are drawn in numpy from the twin's observation (`maxatar.pixels.numpy_picture`: the same cell
table and gather as the JAX picture), so the Python backend shows the JAX backend's pixels byte for byte
(`tests/test_pixels.py`). CartPole is no grid: its picture is the jitted JAX drawing of the twin's state.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np

from maxatar.pixels import flat_observation, numpy_drawable, numpy_picture
from maxatar.twin import Twin, load_twin


@partial(jax.jit, static_argnums=0)
def _jax_observation(env, game):
    return env.game_observation(game)


class PixelTwin(Twin):
    """The wrapped game's twin for the dynamics; `observation` draws its picture."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self.inner = load_twin(env.env, params)
        self.obs_type = env.obs_type
        self.scale = env.scale
        self.on_grid = numpy_drawable(env.env, env.scale)
        self.reset = self.inner.reset  # the dynamics are the game's own
        self.step = self.inner.step
        self.to_pure = self.inner.to_pure
        self.from_pure = self.inner.from_pure
        self.at_difficulty = self.inner.at_difficulty

    def observation(self, game) -> np.ndarray:
        if self.on_grid:
            return numpy_picture(self.env.env, self.inner.observation(game), self.obs_type, self.scale)
        return np.array(_jax_observation(self.env, self.to_pure(game)))


class FlatTwin(Twin):
    """The wrapped game's twin for the dynamics; `observation` is its observation flattened to float32 (the same
    `flat_observation` rule the JAX step applies)."""

    def __init__(self, env, params):
        super().__init__(env, params)
        self.inner = load_twin(env.env, params)
        self.reset = self.inner.reset
        self.step = self.inner.step
        self.to_pure = self.inner.to_pure
        self.from_pure = self.inner.from_pure
        self.at_difficulty = self.inner.at_difficulty

    def observation(self, game) -> np.ndarray:
        return flat_observation(self.inner.observation(game))
