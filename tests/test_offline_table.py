"""The offline table on the docs site is what `lab.offline report` builds from the committed run folders."""

from pathlib import Path

from lab import offline

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guides" / "offline-baselines.md"


def test_the_guide_holds_the_table_of_the_committed_runs():
    page = PAGE.read_text()
    start, end = page.index(offline.START), page.index(offline.END) + len(offline.END)
    assert page[start:end] == offline.report(ROOT / offline.RESULTS)
