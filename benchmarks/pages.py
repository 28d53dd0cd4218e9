"""A generated section of a Markdown page: the text between two HTML-comment markers, which the script that owns
it (a benchmark, or the lab's reports) rewrites from its results files (and a test checks against them), leaving
the rest of the page alone."""

from __future__ import annotations

from pathlib import Path


def replace_section(page: Path, section: str, start_marker: str, end_marker: str) -> None:
    """Put `section` (which holds the markers) in place of the text between the markers of `page`, markers
    included."""
    text = Path(page).read_text()
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"{page} has no {start_marker} ... {end_marker} markers: add them where the section goes")
    Path(page).write_text(text[:start] + section + text[end + len(end_marker) :])
