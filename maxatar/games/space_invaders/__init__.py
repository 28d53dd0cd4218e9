"""SpaceInvaders: its JAX rules (`rules.py`) and its plain-Python twin (`twin.py`)."""

from maxatar.games.space_invaders.rules import SpaceInvaders

__all__ = ["SpaceInvaders"]
