"""The files a benchmark writes: results.csv (one row per run) and intervals.csv (per run and
interval, the same columns as a run's intervals.csv with the run_id first)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from elastream.experiments.bench.runner import RunRecord
from elastream.experiments.bench.scenario import BenchError
from elastream.model.series_columns import INTERVAL_SERIES

RESULTS_FILE = "results.csv"
INTERVALS_FILE = "intervals.csv"
REPORT_FILE = "report.html"

# Leading columns in this order; grid columns (param_*) and anything else follow.
LEADING = (
    "run_id",
    "scenario",
    "policy",
    "policy_name",
    "params",
    "interval_s",
    "event_timeout_s",
    "queue_capacity",
    "grouping",
    "replicas",
    "replica_seconds_saved_ratio",
    "throughput_degradation",
    "processed_ratio",
    "latency_ms_mean",
    "latency_ms_p99",
    "objective",
    "objective_met_share",
    "slo_ms",
    "sla_1x",
    "sla_2x",
    "sla_5x",
    "reconfigurations",
    "replica_seconds",
)
TRAILING = ("wall_s", "error")


def results_frame(records: Sequence[RunRecord]) -> pd.DataFrame:
    """All rows with the leading columns first and `wall_s`, `error` last."""
    frame = pd.DataFrame([r.row for r in records])
    for column in (*LEADING, *TRAILING):
        if column not in frame:
            frame[column] = None
    middle = [c for c in frame.columns if c not in LEADING and c not in TRAILING]
    return frame[[*LEADING, *middle, *TRAILING]]


def timeseries_frame(records: Sequence[RunRecord]) -> pd.DataFrame:
    points = [point for r in records for point in r.series]
    columns = ["run_id", *(m.name for m in INTERVAL_SERIES)]
    return pd.DataFrame(points, columns=columns)


def write_results(records: Sequence[RunRecord], out_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write results.csv and intervals.csv into `out_dir` (created); return both frames."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = results_frame(records)
    series = timeseries_frame(records)
    results.to_csv(out_dir / RESULTS_FILE, index=False)
    series.to_csv(out_dir / INTERVALS_FILE, index=False)
    return results, series


def read_results(path: Path) -> pd.DataFrame:
    """results.csv back, with the missing-file error naming the path."""
    if path.is_dir():
        path = path / RESULTS_FILE
    if not path.is_file():
        raise BenchError(f"no results file at {path} (run `elastream bench` first)")
    frame = pd.read_csv(path, keep_default_na=True)
    missing = [c for c in ("run_id", "scenario", "policy") if c not in frame]
    if missing:
        raise BenchError(f"{path}: not a bench results file (missing {', '.join(missing)})")
    frame["error"] = frame["error"].fillna("") if "error" in frame else ""
    return frame


def read_timeseries(out_dir: Path) -> pd.DataFrame:
    """intervals.csv beside results.csv (an empty frame if it is absent)."""
    path = out_dir / INTERVALS_FILE
    if not path.is_file():
        return timeseries_frame([])
    return pd.read_csv(path)
