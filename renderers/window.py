"""A pygame window that shows frames at a steady rate (Gymnasium's render_mode="human" and the play CLI)."""

from __future__ import annotations

import os

import numpy as np

from maxatar.extras import require

DISPLAY_VARIABLES = ("SDL_VIDEODRIVER", "DISPLAY", "WAYLAND_DISPLAY")


class NoDisplayError(RuntimeError):
    """No display to open a window on."""


def display_variables() -> str:
    """The variables that choose a display, as set (`DISPLAY=':99'`), or that none is."""
    given = [f"{name}={os.environ[name]!r}" for name in DISPLAY_VARIABLES if os.environ.get(name)]
    return ", ".join(given) if given else f"{', '.join(DISPLAY_VARIABLES)} unset"


def init_display(pygame) -> None:
    """`pygame.display.init()`, quietly where there is no display: with neither DISPLAY nor WAYLAND_DISPLAY set
    (and no SDL_VIDEODRIVER asked for), SDL would probe Wayland, whose library prints `error: XDG_RUNTIME_DIR is
    invalid or not set` before SDL falls back to a driver that shows nothing; SDL's offscreen driver, that
    fallback, is named for this one call instead. A driver that cannot start (`SDL_VIDEODRIVER=x11` without an
    X server) is a `NoDisplayError` naming the variables."""
    try:
        if any(os.environ.get(name) for name in DISPLAY_VARIABLES):
            pygame.display.init()
            return
        os.environ["SDL_VIDEODRIVER"] = "offscreen"
        try:
            pygame.display.init()
        finally:
            del os.environ["SDL_VIDEODRIVER"]  # `renderers.play.check_display` tells a driver asked for from a fallback
    except pygame.error as error:
        raise NoDisplayError(f"no display to open a window on ({error}; {display_variables()})") from None


class Window:
    """Shows uint8 (H, W, 3) frames, each enlarged `zoom` times, and paces `show` to `fps` calls per second.

    The display opens on the first frame (its size comes from the frame). `show` keeps the window responsive
    without consuming key events, so a caller may read them (`events`); `closed` turns True once the user
    closes the window.
    """

    def __init__(self, title: str = "MaxAtar", fps: float = 15.0, zoom: int = 3):
        if not fps > 0:
            raise ValueError(f"fps must be positive, got {fps!r}")
        if not isinstance(zoom, int) or zoom < 1:
            raise ValueError(f"zoom must be a positive integer, got {zoom!r}")
        require("render", "pygame")
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        import pygame

        self._pygame = pygame
        self.title = title
        self.fps = fps
        self.zoom = zoom
        self.closed = False
        self._screen = None
        self._clock = pygame.time.Clock()

    def show(self, frame) -> None:
        """Draw one frame, then wait so that frames come at most `fps` per second."""
        pygame = self._pygame
        image = np.asarray(frame)
        if image.ndim != 3 or image.shape[-1] != 3 or image.dtype != np.uint8:
            raise ValueError(f"frame must be uint8 of shape (H, W, 3), got {image.dtype}{list(image.shape)}")
        size = (image.shape[1] * self.zoom, image.shape[0] * self.zoom)
        if self._screen is None or self._screen.get_size() != size:
            init_display(pygame)
            pygame.display.set_caption(self.title)
            self._screen = pygame.display.set_mode(size)
            self.closed = False
        surface = pygame.surfarray.make_surface(np.ascontiguousarray(image.transpose(1, 0, 2)))
        if self.zoom != 1:
            surface = pygame.transform.scale(surface, size)
        self._screen.blit(surface, (0, 0))
        pygame.display.flip()
        pygame.event.pump()
        if pygame.event.peek(pygame.QUIT):
            self.closed = True
        self._clock.tick(self.fps)

    def events(self) -> list:
        """The pending pygame events (consumed); notes a request to close the window."""
        if self._screen is None:
            return []
        events = self._pygame.event.get()
        self.closed = self.closed or any(event.type == self._pygame.QUIT for event in events)
        return events

    def close(self) -> None:
        """Close the window and shut pygame's display down, so a later window starts clean."""
        if self._screen is not None:
            self._pygame.display.quit()
            self._screen = None
        self.closed = True
