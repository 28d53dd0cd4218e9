"""The Exactness page's certificate: the TOST it reports, and the page equal to what `lab.exactness report` renders
from the committed results file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lab import exactness

ROOT = Path(__file__).resolve().parents[1]


def test_the_page_holds_what_report_renders_from_the_committed_results():
    results = json.loads((ROOT / exactness.RESULTS).read_text())
    assert sorted(results["games"]) == sorted(exactness.GAMES)
    for game, row in results["games"].items():
        assert all(len(row[name]) == results["episodes"] for name in exactness.IMPLEMENTATIONS), game
    page = (ROOT / "docs" / "exactness.md").read_text()
    assert exactness.render(results) in page, f"docs/exactness.md is stale: run {exactness.COMMAND}"


def test_tost_shows_equal_means_equivalent_and_a_shift_beyond_the_margin_not():
    rng = np.random.default_rng(0)
    reference = rng.normal(100, 10, 2000).tolist()
    same = rng.normal(100, 10, 2000).tolist()
    diff, (low, high), p = exactness.tost(reference, same, margin=5)
    assert p < 1e-6 and -5 < low < diff < high < 5
    shifted = (np.asarray(same) + 8).tolist()  # 3 past the margin
    diff, (low, high), p = exactness.tost(reference, shifted, margin=5)
    assert p > 0.99 and 5 < low < diff < high
