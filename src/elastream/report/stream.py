"""The run's series written as it goes: rows aggregated to the chosen resolution, per-operator
aggregates kept online and a downsampled copy of the intervals for the report's plots."""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from elastream.control.policy import Decision
from elastream.model.objective import Objective, ObjectiveTally
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot
from elastream.report.archive import Block, SeriesArchive, merge, resample, weighted_mean
from elastream.report.series import (
    INTERVAL_COLUMNS,
    TIMESERIES_COLUMNS,
    Interval,
    OperatorAggregates,
    Row,
    interval_rows,
    merge_intervals,
    merge_run,
    timeseries_rows,
)

__all__ = ["PlotPoints", "SeriesWriter", "resample", "weighted_mean"]

PLOT_POINTS = 1500  # a report plot shows at most twice this many points
FLUSH_S = 1.0  # the files are flushed at least this often while rows come: a killed run keeps them


class PlotPoints:
    """At most 2 × `limit` intervals for the plots: past that, neighbours are merged in pairs,
    so every point spans the same number of original intervals (the latest may span fewer).
    The entries of the latest point are merged into it when it is full or read."""

    def __init__(self, limit: int = PLOT_POINTS) -> None:
        self.limit = limit
        self._points: list[Interval] = []
        self.counts: list[int] = []  # original entries in each point
        self.span = 1  # entries a full point holds
        self.pending: list[Interval] = []  # entries of the latest point not merged into it yet

    @property
    def points(self) -> list[Interval]:
        self._merge_pending()
        return self._points

    def add(self, item: Interval) -> None:
        if self.counts and self.counts[-1] < self.span:
            self.pending.append(item)
            self.counts[-1] += 1
            if self.counts[-1] == self.span:
                self._merge_pending()
            return
        self._points.append(item)
        self.counts.append(1)
        if len(self._points) >= 2 * self.limit:
            self._halve()

    def _merge_pending(self) -> None:
        if self.pending:
            self._points[-1] = merge_run([self._points[-1], *self.pending])
            self.pending = []

    def _halve(self) -> None:
        points = self.points
        pairs = range(0, len(points) - 1, 2)
        merged = [merge_intervals(points[i], points[i + 1]) for i in pairs]
        counts = [self.counts[i] + self.counts[i + 1] for i in pairs]
        if len(points) % 2:
            merged.append(points[-1])
            counts.append(self.counts[-1])
        self._points, self.counts = merged, counts
        self.span *= 2


class RowWriter:
    """csv.DictWriter's output (a header, then each row's values in column order, missing ones
    empty), without its per-row check for keys outside the columns: the rows are our own."""

    def __init__(self, fh: IO[str], columns: Sequence[str], header: bool = True) -> None:
        self.columns = tuple(columns)
        self.writer = csv.writer(fh)
        if header:
            self.writer.writerow(self.columns)

    def writerow(self, row: Row) -> None:
        get = row.get
        self.writer.writerow([get(column, "") for column in self.columns])

    def writerows(self, rows: Sequence[Row]) -> None:
        columns = self.columns
        self.writer.writerows([[row.get(column, "") for column in columns] for row in rows])


class SeriesWriter:
    """A MAPE-loop observer writing timeseries.csv and intervals.csv while the run goes.

    With `resolution_s` the rows of the intervals ending in each window of that many seconds
    are aggregated into one (each column by its Metric.resample rule); without, one row per
    interval. With `recent_s` only the rows of the last `recent_s` (at most a tenth more, plus
    one archive row) stay at that resolution: older ones are merged into archive rows of
    `archive_s` (report/archive.py), so that the files stay bounded however long the run.
    Rows reach the files within FLUSH_S (a killed run keeps its history); with `append` (a
    resumed run) they follow the rows already there.
    Memory stays bounded: one window of rows, the archive, one row of totals per operator, the
    plot points."""

    def __init__(
        self,
        pipeline: Pipeline,
        timeseries_path: Path,
        intervals_path: Path,
        *,
        resolution_s: float | None = None,
        recent_s: float | None = None,
        archive_s: float = 3600.0,
        archive_rows: int | None = None,
        plot_points: int = PLOT_POINTS,
        objective: Objective | None = None,
        append: bool = False,
    ) -> None:
        self.pipeline = pipeline
        self.objective = objective
        self.tally = ObjectiveTally(objective) if objective is not None else None
        self.known = set(pipeline.operator_names)
        self.resolution_s = resolution_s
        self.aggregates = OperatorAggregates(pipeline)
        self.plot = PlotPoints(plot_points)
        self.window: list[Interval] = []
        self.window_index: int | None = None
        self.seen = 0
        self.files: list[IO[str]] = []
        self.paths = (intervals_path, timeseries_path)
        resumed = append and all(path.is_file() and path.stat().st_size for path in self.paths)
        self._open_files("a" if resumed else "w")
        self.flushed_at = time.monotonic()
        self.archive: SeriesArchive | None = None
        if recent_s is not None:
            limit: dict[str, Any] = {} if archive_rows is None else {"max_rows": archive_rows}
            start = {"start": self._offsets()}  # rows of an earlier run before: kept as they are
            self.archive = SeriesArchive(self.paths, recent_s, archive_s, **limit, **start)

    def _open_files(self, mode: str) -> None:
        """Open both files (`w`: new, with their headers; `a`: to append after a rewrite)."""
        self.intervals = self._open(self.paths[0], INTERVAL_COLUMNS, mode)
        self.timeseries = self._open(self.paths[1], TIMESERIES_COLUMNS, mode)

    def _open(self, path: Path, columns: Sequence[str], mode: str) -> RowWriter:
        fh = path.open(mode, newline="")
        self.files.append(fh)
        return RowWriter(fh, columns, header=mode == "w")

    def _offsets(self) -> tuple[int, int]:
        """Where intervals.csv and timeseries.csv end now, in bytes."""
        return self.files[0].tell(), self.files[1].tell()

    def _close_files(self) -> None:
        for fh in self.files:
            fh.close()
        self.files = []

    def __enter__(self) -> SeriesWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        for stats in snapshot.operators:
            if stats.name not in self.known:
                raise ValueError(
                    f"snapshot {self.seen} (t={snapshot.t}): operator {stats.name!r} "
                    f"is not in pipeline {self.pipeline.name!r}"
                )
        self.seen += 1
        if self.tally is not None:
            self.tally(snapshot)
        item = Interval(snapshot, decision)
        self.aggregates.add(snapshot)
        self.plot.add(item)
        if self.resolution_s is None:
            self._write([item])
            return
        index = math.ceil(snapshot.t / self.resolution_s - 1e-9)
        if self.window and index != self.window_index:
            self._write_window()
        self.window.append(item)
        self.window_index = index

    def _write_window(self) -> None:
        items, self.window = self.window, []
        rows = interval_rows(items, self.objective)
        self._emit(
            merge([(row, timeseries_rows([item])) for row, item in zip(rows, items, strict=True)])
        )

    def _write(self, items: Sequence[Interval]) -> None:
        for row, item in zip(interval_rows(items, self.objective), items, strict=True):
            self._emit((row, timeseries_rows([item])))

    def _emit(self, block: Block) -> None:
        """Write one row of intervals.csv and its operators' rows of timeseries.csv; keep the
        files bounded (`archive`)."""
        interval, operators = block
        if self.archive is not None:
            self.archive.add(block, self._offsets)
        self.intervals.writerow(interval)
        self.timeseries.writerows(operators)
        if self.archive is not None and self.archive.due(interval["t"]):
            self._close_files()  # flushed: the archive reads them back
            self.archive.compact(interval["t"])
            self._open_files("a")
        elif time.monotonic() - self.flushed_at >= FLUSH_S:
            for fh in self.files:
                fh.flush()
            self.flushed_at = time.monotonic()

    def operator_rows(self) -> dict[str, Row]:
        """Whole-run figures per operator (summary.json's `operators`)."""
        return self.aggregates.rows()

    def objective_summary(self) -> Row | None:
        """summary.json's `objective` block: intervals met, missed, not judged, and the share
        met (None without an objective)."""
        return None if self.tally is None else self.tally.as_dict()

    def plot_items(self) -> list[Interval]:
        """The intervals the report plots: all of them, or merged neighbours past the limit."""
        return list(self.plot.points)

    def close(self) -> None:
        """Write the last window and close the files (again: nothing happens)."""
        if self.window:
            self._write_window()
        self._close_files()
