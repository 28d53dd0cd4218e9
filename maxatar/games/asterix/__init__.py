"""Asterix: its JAX rules (`rules.py`) and its plain-Python twin (`twin.py`)."""

from maxatar.games.asterix.rules import Asterix

__all__ = ["Asterix"]
