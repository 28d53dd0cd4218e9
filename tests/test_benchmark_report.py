"""The README's short speed table is what `benchmarks.run --front-door README.md` writes from the committed
throughput results, so its numbers cannot drift from the measurements."""

from pathlib import Path

from benchmarks import report, run

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_speed_table_is_what_the_report_builds_from_the_committed_results(tmp_path):
    rows, *_ = run.load_results(ROOT / "benchmarks/results")
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text())
    report.replace_readme_section(readme, report.front_door_table(rows), report.SPEED_START, report.SPEED_END)
    assert readme.read_text() == (ROOT / "README.md").read_text(), "README's speed table is stale: run benchmarks.run"
    assert "| Breakout-v0 |" in report.front_door_table(rows)
