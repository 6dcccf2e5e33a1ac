"""The durable metrics history that models are fit from (SQLite, embedded)."""

from elastream.history.rows import (
    HistoryError,
    HistoryRow,
    RunCpuRow,
    backpressure,
    points_by_operator,
    source_series,
)
from elastream.history.store import HistoryStore

__all__ = [
    "HistoryError",
    "HistoryRow",
    "HistoryStore",
    "RunCpuRow",
    "backpressure",
    "points_by_operator",
    "source_series",
]
