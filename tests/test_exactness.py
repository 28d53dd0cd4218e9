"""The Exactness page: the parity harness's count and the certificate's TOST, and the page equal to what
`lab.exactness report` renders from the committed results files."""

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


def test_the_page_holds_the_parity_count_of_every_game_without_a_mismatch():
    results = json.loads((ROOT / exactness.PARITY).read_text())
    assert sorted(results["games"]) == sorted(exactness.GAMES)
    for game, row in results["games"].items():
        assert row["mismatch"] is None and row["episodes"] == results["episodes"], game
    page = (ROOT / "docs" / "exactness.md").read_text()
    assert exactness.render_parity(results) in page, f"docs/exactness.md is stale: run {exactness.COMMAND}"


def test_the_parity_count_compares_every_state_of_each_episode():
    adapter, policy_for = exactness.parity_suites()["Breakout"]
    counts = exactness.parity_game(adapter, policy_for, episodes=2)  # seed 0 by the policy, seed 1 at random
    assert counts["mismatch"] is None
    assert (counts["episodes"], counts["by_policy"], counts["ramping_off"]) == (2, 1, 0)
    assert counts["states"] == counts["steps"] + 2 and counts["longest"] > 0
    assert counts["fields"][:4] == ["obs", "reward", "terminal", "last_action"] and "brick_map" in counts["fields"]


def test_the_parity_count_stops_at_a_mismatch_and_keeps_its_report(monkeypatch):
    adapter, policy_for = exactness.parity_suites()["Breakout"]
    snapshot = adapter.snapshot
    monkeypatch.setattr(adapter, "snapshot", lambda game: snapshot(game) | {"pos": snapshot(game)["pos"] + 1})
    counts = exactness.parity_game(adapter, policy_for, episodes=2)
    assert counts["episodes"] == 0 and counts["mismatch"]["seed"] == 0
    assert counts["mismatch"]["report"].startswith("at the start (reset): pos differ(s)")


def test_tost_shows_equal_means_equivalent_and_a_shift_beyond_the_margin_not():
    rng = np.random.default_rng(0)
    reference = rng.normal(100, 10, 2000).tolist()
    same = rng.normal(100, 10, 2000).tolist()
    diff, (low, high), p = exactness.tost(reference, same, margin=5)
    assert p < 1e-6 and -5 < low < diff < high < 5
    shifted = (np.asarray(same) + 8).tolist()  # 3 past the margin
    diff, (low, high), p = exactness.tost(reference, shifted, margin=5)
    assert p > 0.99 and 5 < low < diff < high
