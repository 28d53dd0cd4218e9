"""The quick performance check's bookkeeping (benchmarks/check.py): it writes the figures it measured (keeping the
committed rows of the ids it did not measure), compares a later run with them, and flags (exit status 1) a path
slower than the tolerance both as measured and with the machine's speed taken out. The figures themselves are
benchmarks, never asserted here."""

from __future__ import annotations

import csv

import pytest

from benchmarks import check

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

TINY = ["--envs", "CartPole-v1", "--n", "4", "--steps", "4", "--repeats", "1", "--min-time", "0.001"]


def test_check_writes_compares_and_flags_slower_paths(tmp_path, capsys):
    reference = tmp_path / "check.csv"
    assert check.main([*TINY, "--update", "--reference", str(reference)]) == 0
    rows = list(csv.DictReader(reference.open()))
    assert [r["impl"] for r in rows] == ["maxatar[split]", "maxatar[uniform]", "maxatar[step+reset]"]
    assert all(float(r["steps_per_s"]) > 0 and float(r["ceiling_steps_per_s"]) > 0 for r in rows)

    # Committed figures 1000x faster than any machine, ceilings as measured: every path is flagged.
    for row in rows:
        row["steps_per_s"] = str(float(row["steps_per_s"]) * 1000)
    with reference.open("w", newline="") as f:
        writer = csv.DictWriter(f, check.COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert check.main([*TINY, "--reference", str(reference)]) == 1
    out = capsys.readouterr().out
    assert "More than 1.5x slower than committed:" in out
    assert all(f"CartPole-v1 {impl}:" in out for impl in ("maxatar[split]", "maxatar[uniform]", "maxatar[step+reset]"))

    # Updating another id adds its rows and keeps CartPole's as committed.
    doors = ["--envs", "Doors-v0", *TINY[2:], "--update", "--reference", str(reference)]
    assert check.main(doors) == 0
    updated = list(csv.DictReader(reference.open()))
    assert [r["env"] for r in updated] == ["CartPole-v1"] * 3 + ["Doors-v0"] * 3
    assert updated[:3] == rows
