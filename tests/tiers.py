"""The two test tiers (docs/contributing.md): `pytest -m "not slow"` is the fast one, which also runs every
property test with fewer examples: `examples(n)` in a test's `@settings`, and the hypothesis profile for the rest
(`tests/conftest.py` sets `fast`)."""

FAST_EXAMPLES = 5
fast = False  # set by tests/conftest.py for `-m "not slow"`


def examples(n: int) -> int:
    """A property test's example count: `n`, or at most `FAST_EXAMPLES` in the fast tier."""
    return min(n, FAST_EXAMPLES) if fast else n
