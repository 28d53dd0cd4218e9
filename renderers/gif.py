"""GIF files from rendered frames, through `imageio` (Pillow's GIF writer)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from maxatar.extras import require


def check_output_path(path: str | os.PathLike) -> Path:
    """Fail before any work if a GIF cannot be written at `path`; returns it as a `Path`."""
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"output file must end in .gif, got {str(path)!r}")
    if path.is_dir():
        raise ValueError(f"output path {str(path)!r} is a directory")
    parent = path.parent
    if not parent.is_dir():
        raise ValueError(f"cannot write {str(path)!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ValueError(f"cannot write {str(path)!r}: permission denied")
    return path


def write_gif(path: str | os.PathLike, frames, fps: float = 15.0) -> Path:
    """Write uint8 frames (N, H, W, 3) as a looping GIF played at `fps` frames per second.

    GIF delays are whole hundredths of a second, so the speed is rounded; Pillow merges identical
    consecutive frames into one longer frame (the step counter of the overlay keeps frames distinct).
    """
    require("render", "imageio")
    import imageio.v3 as iio

    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 of shape (N, H, W, 3), got {frames.dtype}{list(frames.shape)}")
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    path = check_output_path(path)
    with open(path, "wb") as f:  # opened here: a path that cannot be written is an OSError before imageio starts
        iio.imwrite(f, frames, extension=".gif", duration=1000.0 / fps, loop=0)
    return path
