"""Freeway: its JAX rules (`rules.py`) and its plain-Python twin (`twin.py`)."""

from maxatar.games.freeway.rules import Freeway

__all__ = ["Freeway"]
