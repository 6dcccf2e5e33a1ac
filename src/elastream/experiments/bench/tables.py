"""Paper tables next to ours: pick the runs a table names and rewrite its block in a markdown file.

A markdown file holds each table between `<!-- bench-table: ID -->` and `<!-- /bench-table -->`;
`update_markdown` replaces what is between the markers and leaves the rest of the file alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from elastream.experiments.bench.scenario import BenchError, PaperTable
from elastream.model.metric_catalog import METRICS as METRIC_TABLE
from elastream.model.metric_catalog import PAPER_METRICS


def _column(name: str, *, short: bool = False) -> tuple[str, str, int]:
    """(results column, heading, digits) of a metric of the one table (model/metric_catalog.py)."""
    metric = METRIC_TABLE[name]
    if short:
        return name, metric.short, metric.digits
    unit = f" ({metric.unit})" if metric.unit == "ms" else ""
    return name, metric.label.removesuffix(" (mean)").removesuffix(" ratio") + unit, metric.digits


METRICS = tuple(_column(name) for name in PAPER_METRICS)
# shown instead of the paper columns when a table has no paper figures
EXTRA = tuple(
    _column(name, short=True) for name in ("latency_ms_p99", "sla_5x", "reconfigurations")
)
BLOCK = re.compile(
    r"(<!-- bench-table: (?P<id>[^>]+?) -->\n)(?P<body>.*?)(<!-- /bench-table -->)", re.DOTALL
)


def _same(cell: Any, wanted: Any) -> bool:
    """A results cell equals a selector value (numbers compared as numbers, else as text)."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return wanted is None
    try:
        return math.isclose(float(cell), float(wanted), rel_tol=1e-9)
    except (TypeError, ValueError):
        return str(cell) == str(wanted)


def select_run(results: pd.DataFrame, scenario: str, select: Mapping[str, Any], where: str) -> Any:
    """The one successful run of `scenario` matching every `select` column."""
    rows = results[(results["scenario"] == scenario) & (results["error"].fillna("") == "")]
    for column, wanted in select.items():
        if column not in rows:
            raise BenchError(f"{where}: results have no column {column!r}")
        rows = rows[[_same(cell, wanted) for cell in rows[column]]]
    if len(rows) != 1:
        found = ", ".join(rows["run_id"]) or "none"
        raise BenchError(f"{where}: {dict(select)} matches {len(rows)} runs, not 1 ({found})")
    return rows.iloc[0]


def _fmt(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):,.{digits}f}"


def _markdown(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines) + "\n"


def render_table(table: PaperTable, results: pd.DataFrame) -> str:
    """A markdown table: one row per table row, the paper's figures and ours side by side for
    each metric; a table without paper figures shows ours with p99, SLA 5× and reconfigurations."""
    runs = [
        select_run(results, table.scenario, row.select, f"table {table.id} row {i + 1}")
        for i, row in enumerate(table.rows)
    ]
    if not any(row.paper for row in table.rows):
        columns = (*METRICS, *EXTRA, *(_column(n, short=True) for n in table.extra_columns))
        head = ["", *(name for _, name, _ in columns)]
        body = [
            [row.label, *(_fmt(run[c], digits) for c, _, digits in columns)]
            for row, run in zip(table.rows, runs, strict=True)
        ]
        return _markdown(head, body)
    head = ["", *(f"{name} {side}" for _, name, _ in METRICS for side in ("paper", "ours"))]
    body = []
    for row, run in zip(table.rows, runs, strict=True):
        cells = [row.label]
        for k, (column, _, digits) in enumerate(METRICS):
            cells.append(_fmt(row.paper[k], digits) if row.paper else "–")
            cells.append(_fmt(run[column], digits))
        body.append(cells)
    return _markdown(head, body)


def render_tables(tables: Sequence[PaperTable], results: pd.DataFrame) -> dict[str, str]:
    """Table id -> markdown."""
    return {t.id: render_table(t, results) for t in tables}


def update_markdown(path: Path, rendered: Mapping[str, str]) -> list[str]:
    """Replace every marked block whose id was rendered; return the ids written. A rendered
    table without a block is an error naming it; blocks of other tables are left as they are
    (one file may hold the tables of several scenario files, e.g. docs/policies.md)."""
    if not path.is_file():
        raise BenchError(f"markdown file {path} does not exist")
    text = path.read_text()
    found = [m["id"].strip() for m in BLOCK.finditer(text)]
    missing = [i for i in rendered if i not in found]
    if missing:
        raise BenchError(f"{path}: no '<!-- bench-table: ID -->' block for {', '.join(missing)}")

    def replace(match: re.Match[str]) -> str:
        wanted = rendered.get(match["id"].strip())
        return match[0] if wanted is None else match[1] + wanted + match[4]

    path.write_text(BLOCK.sub(replace, text))
    return [i for i in found if i in rendered]
