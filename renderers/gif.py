"""GIF files from rendered frames, through `imageio` (Pillow's GIF writer)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from maxatar import files
from maxatar.extras import require


def check_output_path(path: str | os.PathLike) -> Path:
    """Fail before any work if a GIF cannot be written at `path` (`maxatar.files.check_out_file`: a writable
    directory outside the installed packages, and no directory or FIFO in its place); returns it as a `Path`."""
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"output file must end in .gif, got {str(path)!r}")
    return files.check_out_file(path, "output file")


def write_gif(path: str | os.PathLike, frames, fps: float = 15.0) -> Path:
    """Write uint8 frames (N, H, W, 3) as a looping GIF played at `fps` frames per second.

    GIF delays are whole hundredths of a second, so the speed is rounded; Pillow merges identical
    consecutive frames into one longer frame (the step counter of the overlay keeps frames distinct). The GIF
    is encoded in memory and then written whole (`maxatar.files.write_whole`): a full disk is an OSError and
    leaves no part of a GIF.
    """
    require("render", "imageio")
    import imageio.v3 as iio

    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 of shape (N, H, W, 3), got {frames.dtype}{list(frames.shape)}")
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    path = check_output_path(path)
    files.write_whole(path, iio.imwrite("<bytes>", frames, extension=".gif", duration=1000.0 / fps, loop=0))
    return path
