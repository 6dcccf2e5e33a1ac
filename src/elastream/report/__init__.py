"""Run outputs shared by `elastream run` and `elastream simulate`: files, report and live view."""

from elastream.report.files import (
    INTERVALS_FILE,
    REPORT_FILE,
    SUMMARY_FILE,
    TIMESERIES_FILE,
    load_intervals,
    load_summary,
    load_timeseries,
    open_series,
    write_outputs,
)
from elastream.report.live import LiveTable
from elastream.report.series import INTERVAL_COLUMNS, TIMESERIES_COLUMNS

__all__ = [
    "INTERVALS_FILE",
    "INTERVAL_COLUMNS",
    "REPORT_FILE",
    "SUMMARY_FILE",
    "TIMESERIES_COLUMNS",
    "TIMESERIES_FILE",
    "LiveTable",
    "load_intervals",
    "load_summary",
    "load_timeseries",
    "open_series",
    "write_outputs",
]
