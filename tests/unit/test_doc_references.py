"""Every place the code, the benchmarks and the scripts point a reader to the docs names a page
that exists, and the anchor (`docs/X.md#anchor`) or the quoted section (`docs/X.md, "Name"`)
names one of that page's headings: a page split or a heading renamed fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.paths import ROOT

REFERENCE = re.compile(r"docs/([a-z_-]+\.md)(?:#([a-z0-9-]+)|, [\"“`]?([A-Z][^)\"”`'.;:]{2,40}))?")


def slug(heading: str) -> str:
    """MkDocs' anchor for a heading: lower case, word characters, spaces and hyphens kept."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", kept)


def headings(page: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in page.read_text().splitlines() if line[:1] == "#"]


def references() -> list[tuple[str, str, str | None, str | None]]:
    """(where, page, anchor, section) for every docs reference in src/, benchmarks/, scripts/."""
    files = [*ROOT.glob("src/**/*.py"), *ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*")]
    found = []
    for path in sorted(f for f in files if f.is_file() and f.suffix in {".py", ".sh"}):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in REFERENCE.finditer(line):
                where = f"{path.relative_to(ROOT)}:{number}"
                found.append((where, *match.groups()))
    return found


def test_the_slug_is_mkdocs_anchor():
    assert (
        slug("Where a hop's time goes, probe by probe") == "where-a-hops-time-goes-probe-by-probe"
    )
    assert slug("CPU time (Eq. C1)") == "cpu-time-eq-c1"


@pytest.mark.parametrize("where, page, anchor, section", references())
def test_a_docs_reference_names_a_page_and_a_heading_that_exist(where, page, anchor, section):
    path = ROOT / "docs" / page
    assert path.exists(), f"{where}: docs/{page} does not exist"
    titles = headings(path)
    if anchor is not None:
        assert anchor in {slug(t) for t in titles}, f"{where}: no heading #{anchor} in {page}"
    if section is not None:
        start = section.strip()[:15].lower()
        assert any(start in t.lower() for t in titles), f"{where}: no '{section}' in {page}"
