"""Seaquest: its JAX rules (`rules.py`) and its plain-Python twin (`twin.py`)."""

from maxatar.games.seaquest.rules import Seaquest

__all__ = ["Seaquest"]
