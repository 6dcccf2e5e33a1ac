"""Write a run's output directory (summary.json, CSVs, report.html) and read it back with pandas."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from elastream.control.mape import RunResult
from elastream.model.metric_catalog import PAPER_METRICS
from elastream.model.objective import Objective
from elastream.model.pipeline import Pipeline
from elastream.report.html import Plot, render_page
from elastream.report.plots import all_plots
from elastream.report.series import (
    INTERVAL_COLUMNS,
    TIMESERIES_COLUMNS,
    intervals,
    summary_document,
)
from elastream.report.stream import SeriesWriter

SUMMARY_FILE = "summary.json"
TIMESERIES_FILE = "timeseries.csv"
INTERVALS_FILE = "intervals.csv"
REPORT_FILE = "report.html"

# Fields every summary.json has; load_summary refuses a file without them.
SUMMARY_REQUIRED = (
    "title",
    "pipeline",
    "policy",
    *PAPER_METRICS,
    "latency_ms_p99",
    "events_in",
    "events_out",
    "operators",
    "settings",
)


def output_paths(out_dir: Path) -> dict[str, Path]:
    """The files of a run's output directory by kind: summary, timeseries, intervals, report."""
    return {
        "summary": out_dir / SUMMARY_FILE,
        "timeseries": out_dir / TIMESERIES_FILE,
        "intervals": out_dir / INTERVALS_FILE,
        "report": out_dir / REPORT_FILE,
    }


def open_series(
    pipeline: Pipeline,
    out_dir: Path,
    resolution_s: float | None = None,
    objective: Objective | None = None,
    *,
    recent_s: float | None = None,
    archive_s: float = 3600.0,
    append: bool = False,
) -> SeriesWriter:
    """The observer that writes timeseries.csv and intervals.csv into `out_dir` as a run goes
    (each interval judged against the run's latency `objective`, if any; rows older than
    `recent_s` merged into rows of `archive_s`: report/archive.py; `append`: after the rows a
    resumed run's earlier part wrote)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = output_paths(out_dir)
    return SeriesWriter(
        pipeline,
        paths["timeseries"],
        paths["intervals"],
        resolution_s=resolution_s,
        recent_s=recent_s,
        archive_s=archive_s,
        objective=objective,
        append=append,
    )


def write_outputs(
    result: RunResult,
    pipeline: Pipeline,
    out_dir: Path,
    *,
    title: str,
    settings: dict,
    series: SeriesWriter | None = None,
    resolution_s: float | None = None,
    objective: Objective | None = None,
) -> dict[str, Path]:
    """Write summary.json, timeseries.csv, intervals.csv and report.html into `out_dir`.

    `series` is the writer that observed the run (the CSVs are then written already); without
    it, the result's snapshots are written now, aggregated to `resolution_s` if given.
    Returns the written paths by kind: summary, timeseries, intervals, report."""
    out_dir = Path(out_dir)
    if series is None:
        if not result.snapshots_kept:
            raise ValueError(
                "the run kept no snapshots (longer than keep_snapshots): pass the SeriesWriter "
                "that observed it (open_series)"
            )
        items = intervals(result, pipeline)
        series = open_series(pipeline, out_dir, resolution_s, objective)
        with series:
            for item in items:
                series(item.snapshot, item.decision)
    series.close()
    paths = output_paths(out_dir)
    document = summary_document(
        result,
        pipeline,
        series.operator_rows(),
        title=title,
        settings=settings,
        objective=series.objective_summary(),
    )
    paths["summary"].write_text(json.dumps(document, indent=2, allow_nan=False) + "\n")
    plots = report_plots(series, pipeline, result)
    paths["report"].write_text(render_page(document, plots), encoding="utf-8")
    return paths


def report_plots(series: SeriesWriter, pipeline: Pipeline, result: RunResult) -> list[Plot]:
    """The report's figures, drawn from the intervals the series kept for them."""
    return all_plots(series.plot_items(), pipeline, result.summary, series.objective)


def _existing(out_dir: Path | str, name: str) -> Path:
    path = Path(out_dir) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no {name} there (is {out_dir} a run's output directory?)")
    return path


def load_summary(out_dir: Path | str) -> dict[str, Any]:
    """summary.json of a run directory as a dict."""
    path = _existing(out_dir, SUMMARY_FILE)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object at the top level")
    missing = [k for k in SUMMARY_REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{path}: missing field(s) {', '.join(missing)}")
    return data


def _read_csv(out_dir: Path | str, name: str, columns: Sequence[str], **kw: Any) -> pd.DataFrame:
    path = _existing(out_dir, name)
    frame = pd.read_csv(path, **kw)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    return frame


def load_timeseries(out_dir: Path | str) -> pd.DataFrame:
    """timeseries.csv: one row per interval and operator; unknown service_ms/target are NaN/<NA>."""
    return _read_csv(
        out_dir,
        TIMESERIES_FILE,
        TIMESERIES_COLUMNS,
        dtype={
            "operator": str,
            "reason": str,
            "reason_detail": str,
            "target": "Int64",
            "service_ms": float,
        },
        keep_default_na=False,
        na_values={"service_ms": [""], "target": [""]},
    )


def load_intervals(out_dir: Path | str) -> pd.DataFrame:
    """intervals.csv: one row per interval with the system-level figures."""
    return _read_csv(out_dir, INTERVALS_FILE, INTERVAL_COLUMNS, dtype={"latency_ms_mean": float})
