"""A long run's series kept bounded: rows older than `recent_s` are merged into archive rows of
`width_s`, and past `max_rows` archive rows neighbours merge in pairs (the width doubles), so
timeseries.csv and intervals.csv stay within a fixed size however long the run lasts."""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from elastream.model.metric_catalog import Metric
from elastream.model.series_columns import INTERVAL_SERIES, OPERATOR_SERIES
from elastream.report.series import Row

SLACK = 0.1  # compaction runs once the full-resolution rows span (1 + SLACK) · recent_s
MAX_ROWS = 2_000  # archive rows per file (and per operator) at most: 83 days of hours
FOLD = 64  # blocks of an archive window kept apart at most (then merged: bounded memory)


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


# One stretch of the series: its intervals.csv row and its timeseries.csv rows (one per operator).
Block = tuple[Row, list[Row]]


def merge(blocks: Sequence[Block]) -> Block:
    """Consecutive blocks as one: the interval rows resampled by their spans (`td`), each
    operator's rows by the same spans."""
    spans = [interval["interval_s"] for interval, _ in blocks]
    interval = resample([b[0] for b in blocks], INTERVAL_SERIES, spans)
    by_operator: dict[str, list[Row]] = {}
    for _, rows in blocks:
        for row in rows:
            by_operator.setdefault(row["operator"], []).append(row)
    merged = [resample(rows, OPERATOR_SERIES, spans) for rows in by_operator.values()]
    return interval, merged


def window_of(t: float, width_s: float) -> int:
    """The index k of the window ((k - 1) · width, k · width] holding time `t`."""
    return math.ceil(t / width_s - 1e-9)


def group(blocks: Sequence[Block], width_s: float) -> list[Block]:
    """Blocks in time order merged per window of `width_s` (by each block's end `t`)."""
    out: list[Block] = []
    current: list[Block] = []
    for block in blocks:
        if current and window_of(block[0]["t"], width_s) != window_of(current[0][0]["t"], width_s):
            out.append(merge(current))
            current = []
        current.append(block)
    if current:
        out.append(merge(current))
    return out


def row_bound(recent_s: float, width_s: float, td_s: float, max_rows: int = MAX_ROWS) -> int:
    """The most rows intervals.csv holds (timeseries.csv: as many per operator) with intervals
    of at least `td_s`: the full-resolution span before a compaction, plus the archive."""
    return math.ceil(((1 + SLACK) * recent_s + width_s) / td_s) + 1 + max_rows


Offsets = tuple[int, int]  # byte positions in intervals.csv and timeseries.csv


class SeriesArchive:
    """Keeps the series files of a run bounded as the run goes.

    Every block is folded into its archive window of `width_s` as it is written, and where each
    window's rows begin in the files is noted. Once the full-resolution rows span more than
    (1 + SLACK) · recent_s plus one archive width (`due`), both files are rewritten (`compact`):
    the rows before `start` (an earlier run's, which a resumed run appends to) as they are, the
    archive rows, then the finished windows older than `recent_s` merged into archive rows,
    then the bytes of the full-resolution rows after them, copied as they are. Each interval is
    in exactly one row of each file at any time. Past `max_rows` archive rows, neighbours merge
    in pairs (the width doubles). Memory: the archive rows and a row per window of the last
    (1 + SLACK) · recent_s."""

    def __init__(
        self,
        paths: tuple[Path, Path],
        recent_s: float,
        width_s: float,
        max_rows: int = MAX_ROWS,
        start: Offsets | None = None,
    ) -> None:
        if recent_s <= 0 or width_s <= 0 or max_rows < 2:
            raise ValueError(
                f"series archive: recent_s {recent_s} and width_s {width_s} must be > 0, "
                f"max_rows {max_rows} at least 2"
            )
        self.paths = paths  # intervals.csv, timeseries.csv
        self.start = start  # where this run's rows begin (None: after the header)
        self.recent_s = recent_s
        self.base_s = width_s  # the width blocks are folded at as they come
        self.width_s = width_s  # the archive rows' width (doubles when they merge)
        self.max_rows = max_rows
        self.archive: list[Block] = []  # rows up to `until`, in the files' first lines
        self.until = 0.0  # the archive covers (0, until]
        self.windows: list[tuple[Block, Offsets]] = []  # finished windows after `until`
        self.open: list[Block] = []  # blocks of the window being filled (folded by FOLD)
        self.open_at: Offsets = (0, 0)  # where the rows of the window being filled begin
        self.compactions = 0

    def add(self, block: Block, offsets: Callable[[], Offsets]) -> None:
        """Fold a block about to be written into its window; `offsets()` says where the files
        end now (asked when the block opens a window)."""
        t = block[0]["t"]
        if self.open and window_of(t, self.base_s) != window_of(self.open[0][0]["t"], self.base_s):
            self.windows.append((merge(self.open), self.open_at))
            self.open = []
        if not self.open:
            self.open_at = offsets()
        self.open.append(block)
        if len(self.open) >= FOLD:
            self.open = [merge(self.open)]

    def due(self, now: float) -> bool:
        """The full-resolution rows span more than (1 + SLACK) · recent_s plus one width."""
        return now - self.until > (1 + SLACK) * self.recent_s + self.width_s

    def compact(self, now: float) -> bool:
        """Move the finished windows older than `recent_s` into the archive and rewrite both
        files (their writers closed: reopen them to append); False if nothing was old enough."""
        cutoff = math.floor((now - self.recent_s) / self.width_s) * self.width_s
        if cutoff <= self.until:
            return False
        moving = [w for w, _ in self.windows if w[0]["t"] <= cutoff + 1e-9]
        if not moving:  # no row up to the cutoff (a gap in the run): nothing to move
            self.until = cutoff
            return False
        kept = self.windows[len(moving) :]
        cut = kept[0][1] if kept else self.open_at  # where the rows after the cutoff begin
        self.archive += group(moving, self.width_s)
        while len(self.archive) > self.max_rows:
            self.width_s *= 2
            self.archive = group(self.archive, self.width_s)
        shift = self._rewrite(cut)
        self.windows = [(w, _moved(at, shift)) for w, at in kept]
        self.open_at = _moved(self.open_at, shift)
        self.until = cutoff
        self.compactions += 1
        return True

    def _rewrite(self, cut: Offsets) -> Offsets:
        """Each file as: its header and its rows before `start`, the archive rows, its bytes
        from `cut` on; returns how far those bytes moved in each file."""
        intervals = [interval for interval, _ in self.archive]
        operators = [row for _, rows in self.archive for row in rows]
        shift = []
        begins = self.start or (None, None)
        for path, rows, start, begin in zip(
            self.paths, (intervals, operators), cut, begins, strict=True
        ):
            tmp = path.with_name(path.name + ".tmp")
            with path.open("rb") as old, tmp.open("wb") as new:
                header = old.readline()
                before = b"" if begin is None else old.read(begin - len(header))
                text = io.StringIO(newline="")
                csv.DictWriter(text, next(csv.reader([header.decode()]))).writerows(rows)
                new.write(header + before + text.getvalue().encode())
                shift.append(new.tell() - start)
                old.seek(start)
                shutil.copyfileobj(old, new)
            os.replace(tmp, path)
        return shift[0], shift[1]


def _moved(at: Offsets, shift: Offsets) -> Offsets:
    return at[0] + shift[0], at[1] + shift[1]
