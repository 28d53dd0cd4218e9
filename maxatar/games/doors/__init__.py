"""Doors: its JAX rules (`rules.py`) and its plain-Python twin (`twin.py`)."""

from maxatar.games.doors.rules import Doors

__all__ = ["Doors"]
