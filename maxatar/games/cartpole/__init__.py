"""CartPole: its JAX rules (`rules.py`) and its plain-Python twin (`twin.py`)."""

from maxatar.games.cartpole.rules import CartPole

__all__ = ["CartPole"]
