"""The durable metrics history: one embedded SQLite file (WAL), written by runs, read by models."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from elastream.history.rows import HistoryError, HistoryRow, RunCpuRow

SCHEMA = """
CREATE TABLE IF NOT EXISTS history (
    run_id TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    operator TEXT NOT NULL,
    replica INTEGER NOT NULL,
    parallelism INTEGER NOT NULL,
    t REAL NOT NULL,
    interval_s REAL NOT NULL,
    source_rate REAL NOT NULL,
    input_rate REAL NOT NULL,
    output_rate REAL NOT NULL,
    output_rates TEXT NOT NULL,
    busy REAL,
    cpu REAL,
    queue_length REAL NOT NULL,
    backpressure INTEGER NOT NULL,
    service_time_var REAL,
    batches INTEGER,
    source_backlog REAL,
    recorded_at REAL,
    PRIMARY KEY (pipeline, run_id, operator, replica, t)
);
CREATE INDEX IF NOT EXISTS history_pipeline ON history (pipeline, operator, t);
CREATE TABLE IF NOT EXISTS run_cpu (
    run_id TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    t REAL NOT NULL,
    interval_s REAL NOT NULL,
    cores REAL NOT NULL,
    recorded_at REAL,
    PRIMARY KEY (pipeline, run_id, t)
);
"""

COLUMNS = (
    "run_id", "pipeline", "operator", "replica", "parallelism", "t", "interval_s",
    "source_rate", "input_rate", "output_rate", "output_rates", "busy", "cpu",
    "queue_length", "backpressure", "service_time_var", "batches", "source_backlog",
    "recorded_at",
)  # fmt: skip
# columns newer than some stored files: added on open (NULL in the old rows), per table
ADDED_COLUMNS = {
    "history": {"batches": "INTEGER", "source_backlog": "REAL", "recorded_at": "REAL"},
    "run_cpu": {"recorded_at": "REAL"},
}


_JSON = json.JSONEncoder(sort_keys=True)  # json.dumps(..., sort_keys=True), built once


def _values(row: HistoryRow, now: float) -> tuple:
    return (
        row.run_id, row.pipeline, row.operator, row.replica, row.parallelism, row.t,
        row.interval_s, row.source_rate, row.input_rate, sum(row.output_rates.values()),
        _JSON.encode(dict(row.output_rates)), row.busy, row.cpu,
        row.queue_length, int(row.backpressure), row.service_time_var, row.batches,
        row.source_backlog, now,
    )  # fmt: skip


def _row(record: sqlite3.Row) -> HistoryRow:
    """A stored row, rebuilt without re-validation: `record` validated it when it was written."""
    data = dict(record)
    data.pop("output_rate")
    data.pop("recorded_at", None)
    data["output_rates"] = json.loads(data["output_rates"])
    data["backpressure"] = bool(data["backpressure"])
    row = object.__new__(HistoryRow)
    row.__dict__.update(data)  # a frozen dataclass: fill its fields without __setattr__
    return row


def _where(
    pipeline: str | None,
    run_ids: Sequence[str] | None,
    operators: Sequence[str] | None = None,
    since: float | None = None,
    until: float | None = None,
) -> tuple[str, list]:
    """A WHERE clause (or "") and its arguments for the filters given."""
    clauses, args = [], []
    if pipeline is not None:
        clauses.append("pipeline = ?")
        args.append(pipeline)
    for column, values in (("run_id", run_ids), ("operator", operators)):
        if values is not None:
            clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
            args.extend(values)
    if since is not None:
        clauses.append("t >= ?")
        args.append(since)
    if until is not None:
        clauses.append("t < ?")
        args.append(until)
    return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), args


class HistoryStore:
    """`record(rows)` appends (a re-recorded interval replaces the old one); queries filter by
    pipeline, runs, operators and a time window, and return rows or a pandas frame."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(SCHEMA)
        self._add_missing_columns()
        self._lock = threading.Lock()  # one connection shared by the service's worker threads

    def _add_missing_columns(self) -> None:
        """A history file written before a column existed gets it (NULL in its old rows)."""
        with self._conn:
            for table, columns in ADDED_COLUMNS.items():
                present = {r[1] for r in self._conn.execute(f"PRAGMA table_info({table})")}
                for name, kind in columns.items():
                    if name not in present:
                        self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, rows: Iterable[HistoryRow], now: float | None = None) -> int:
        """Write rows in one transaction, stamped with the wall time `now` (default: the
        clock's) for retention; returns how many."""
        stamp = time.time() if now is None else now
        values = [_values(r, stamp) for r in rows]
        marks = ", ".join("?" * len(COLUMNS))
        with self._lock, self._conn:
            self._conn.executemany(
                f"INSERT OR REPLACE INTO history ({', '.join(COLUMNS)}) VALUES ({marks})", values
            )
        return len(values)

    def record_run_cpu(self, rows: Iterable[RunCpuRow], now: float | None = None) -> int:
        """Write the run's own CPU per interval in one transaction (stamped as `record`
        does); returns how many rows."""
        stamp = time.time() if now is None else now
        values = [(r.run_id, r.pipeline, r.t, r.interval_s, r.cores, stamp) for r in rows]
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT OR REPLACE INTO run_cpu (run_id, pipeline, t, interval_s, cores, "
                "recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
                values,
            )
        return len(values)

    def forget(self, retention_s: float, now: float | None = None) -> int:
        """Retention: delete the rows recorded more than `retention_s` before `now` (default:
        the clock's); rows written before stamps existed are kept. SQLite reuses the freed
        pages, so a store written at a steady rate stays about the size of its retention.
        Returns how many history rows were deleted."""
        before = (time.time() if now is None else now) - retention_s
        with self._lock, self._conn:
            gone = self._conn.execute("DELETE FROM history WHERE recorded_at < ?", [before])
            self._conn.execute("DELETE FROM run_cpu WHERE recorded_at < ?", [before])
        return gone.rowcount

    def run_cpu(
        self, pipeline: str | None = None, run_ids: Sequence[str] | None = None
    ) -> list[RunCpuRow]:
        """The runs' own CPU per interval, in run and time order."""
        where, args = _where(pipeline, run_ids)
        columns = "run_id, pipeline, t, interval_s, cores"
        sql = f"SELECT {columns} FROM run_cpu{where} ORDER BY run_id, t"
        with self._lock:
            return [RunCpuRow(*r) for r in self._conn.execute(sql, args)]

    def _select(
        self,
        pipeline: str | None,
        run_ids: Sequence[str] | None,
        operators: Sequence[str] | None,
        since: float | None,
        until: float | None,
    ) -> tuple[str, list]:
        where, args = _where(pipeline, run_ids, operators, since, until)
        return f"SELECT * FROM history{where} ORDER BY run_id, t, operator, replica", args

    def rows(
        self,
        pipeline: str | None = None,
        run_ids: Sequence[str] | None = None,
        operators: Sequence[str] | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[HistoryRow]:
        sql, args = self._select(pipeline, run_ids, operators, since, until)
        with self._lock:
            return [_row(r) for r in self._conn.execute(sql, args)]

    def frame(
        self,
        pipeline: str | None = None,
        run_ids: Sequence[str] | None = None,
        operators: Sequence[str] | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> pd.DataFrame:
        """The same selection as a frame (output_rates left as JSON text)."""
        sql, args = self._select(pipeline, run_ids, operators, since, until)
        with self._lock:
            return pd.read_sql_query(sql, self._conn, params=args)

    def version(self) -> tuple[int, int]:
        """Changes whenever rows are recorded: (row count, largest rowid); part of cache keys."""
        with self._lock:
            count, top = self._conn.execute("SELECT count(*), max(rowid) FROM history").fetchone()
        return int(count), int(top or 0)

    def runs(self, pipeline: str | None = None) -> list[str]:
        sql = "SELECT DISTINCT run_id FROM history" + (" WHERE pipeline = ?" if pipeline else "")
        with self._lock:
            found = self._conn.execute(sql + " ORDER BY run_id", [pipeline] if pipeline else [])
            return [r[0] for r in found]

    def require(self, pipeline: str) -> None:
        """Raise naming the pipeline when the history holds nothing for it."""
        with self._lock:
            hit = self._conn.execute(
                "SELECT 1 FROM history WHERE pipeline = ? LIMIT 1", [pipeline]
            ).fetchone()
        if not hit:
            raise HistoryError(f"history {self.path}: no rows for pipeline {pipeline!r}")
