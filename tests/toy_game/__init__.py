"""Catch, a game that exists only in the tests: the proof that a new game is one folder and one registry line
(`tests/test_new_game.py`)."""

from tests.toy_game.rules import Catch

__all__ = ["Catch"]
