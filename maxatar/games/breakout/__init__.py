"""Breakout: its JAX rules (`rules.py`) and its plain-Python twin (`twin.py`)."""

from maxatar.games.breakout.rules import Breakout

__all__ = ["Breakout"]
