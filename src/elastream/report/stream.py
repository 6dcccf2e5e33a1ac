"""The run's series written as it goes: rows aggregated to the chosen resolution, per-operator
aggregates kept online and a downsampled copy of the intervals for the report's plots."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from elastream.control.policy import Decision
from elastream.model.metrics import INTERVAL_SERIES, OPERATOR_SERIES, Metric
from elastream.model.objective import Objective, ObjectiveTally
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot
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

PLOT_POINTS = 1500  # a report plot shows at most twice this many points


def resample(rows: Sequence[Row], columns: Sequence[Metric], spans_s: Sequence[float]) -> Row:
    """Consecutive rows as one, each column by its declared rule (Metric.resample); `spans_s`
    are the rows' lengths in seconds (the weights of "mean")."""
    out: Row = {}
    for metric in columns:
        values = [row[metric.name] for row in rows]
        rule = metric.resample
        if rule == "last":
            out[metric.name] = values[-1]
        elif rule == "sum":
            out[metric.name] = sum(values)
        else:
            weights = spans_s if rule == "mean" else [row[rule] for row in rows]
            out[metric.name] = weighted_mean(values, weights)
    return out


def weighted_mean(values: Sequence[float | None], weights: Sequence[float]) -> float | None:
    """Mean of the known values by their weights (None if no known value has weight)."""
    pairs = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None and w]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else None


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

    def __init__(self, fh: IO[str], columns: Sequence[str]) -> None:
        self.columns = tuple(columns)
        self.writer = csv.writer(fh)
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
    interval, as before. Memory stays bounded: one window of rows, one row of totals per
    operator, the plot points."""

    def __init__(
        self,
        pipeline: Pipeline,
        timeseries_path: Path,
        intervals_path: Path,
        *,
        resolution_s: float | None = None,
        plot_points: int = PLOT_POINTS,
        objective: Objective | None = None,
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
        self.timeseries = self._open(timeseries_path, TIMESERIES_COLUMNS)
        self.intervals = self._open(intervals_path, INTERVAL_COLUMNS)

    def _open(self, path: Path, columns: Sequence[str]) -> RowWriter:
        fh = path.open("w", newline="")
        self.files.append(fh)
        return RowWriter(fh, columns)

    def __enter__(self) -> SeriesWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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
        spans = [item.snapshot.td for item in items]
        rows = interval_rows(items, self.objective)
        self.intervals.writerow(resample(rows, INTERVAL_SERIES, spans))
        by_operator: dict[str, tuple[list[Row], list[float]]] = {}
        for item in items:
            for row in timeseries_rows([item]):
                rows, own_spans = by_operator.setdefault(row["operator"], ([], []))
                rows.append(row)
                own_spans.append(item.snapshot.td)
        for rows, own_spans in by_operator.values():
            self.timeseries.writerow(resample(rows, OPERATOR_SERIES, own_spans))

    def _write(self, items: Sequence[Interval]) -> None:
        self.intervals.writerows(interval_rows(items, self.objective))
        self.timeseries.writerows(timeseries_rows(items))

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
        for fh in self.files:
            fh.close()
        self.files = []
