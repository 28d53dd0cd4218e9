"""Drawing for MaxAtar: state -> RGB frames in JAX, a pygame window, GIF files and a small CLI.

`frame(env, state)` is pure and jittable, so a whole rollout renders in one jitted `lax.scan`
(`render_rollout`); `write_gif` saves the frames. The Gymnasium classes find `frame` and `Window` through the
`maxatar.renderers` entry points. pygame and imageio are imported only when a window or a GIF is needed.
"""

from renderers.frames import Channel, GridPalette, frame, palette_of
from renderers.gif import write_gif
from renderers.rollout import random_policy, render_rollout
from renderers.window import Window

__all__ = ["Channel", "GridPalette", "Window", "frame", "palette_of", "random_policy", "render_rollout", "write_gif"]
