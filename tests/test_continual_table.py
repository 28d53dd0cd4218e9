"""The continual table on the docs site is what `lab.continual report` builds from the committed run."""

from pathlib import Path

from lab import continual

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "agents" / "continual" / "pqn-c-chain"
PAGE = ROOT / "docs" / "guides" / "continual.md"


def test_the_guide_holds_the_table_of_the_committed_run(tmp_path):
    section = continual.report(RUN, None, tmp_path)
    page = PAGE.read_text()
    start, end = page.index(continual.START), page.index(continual.END) + len(continual.END)
    table = section.split("![")[0]
    assert page[start:end].startswith(table)
