"""Trace files -> Traces of events/s: count-per-line, binned-count CSV, arrival logs, DEBS 2015."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from elastream.base.registry import Registry
from elastream.workloads.trace import Trace, TraceError

if TYPE_CHECKING:  # pandas is imported where a trace file is read: 0.4 s of every command
    import pandas as pd

# Header names recognised (case-insensitive) when detecting a format from a CSV header.
TIME_COLUMNS = ("timestamp", "time", "hour_utc", "datetime", "date", "ts", "t", "second")
COUNT_COLUMNS = ("value", "count", "tweets", "events", "n")
RATE_COLUMNS = ("rate",)
DEBS_COLUMNS = 17
DEBS_DROPOFF = 3  # dropoff_datetime is the 4th of the 17 DEBS 2015 columns
GAP_FILLS = ("interpolate", "zero")


@dataclass(frozen=True)
class LoadInfo:
    """How a file was read: its format, data rows, the step and the missing steps filled in."""

    path: Path
    format: str
    rows: int
    step_s: float
    filled: int = 0


@dataclass(frozen=True)
class LoadOptions:
    """Caller choices: `bin_s` for event logs, `step_s` to override an inferred step, and
    `gaps` ("interpolate" or "zero") for missing steps in binned CSVs."""

    bin_s: float = 1.0
    step_s: float | None = None
    gaps: str = "interpolate"


Loader = Callable[[Path, LoadOptions], tuple[np.ndarray, LoadInfo]]
FORMATS: Registry[Loader] = Registry("trace format")


def load_trace(
    path: str | Path,
    fmt: str | None = None,
    *,
    bin_s: float = 1.0,
    step_s: float | None = None,
    gaps: str = "interpolate",
) -> Trace:
    """Read a trace file; the format is detected from its content unless `fmt` forces one."""
    return load_trace_info(path, fmt, bin_s=bin_s, step_s=step_s, gaps=gaps)[0]


def load_trace_info(
    path: str | Path,
    fmt: str | None = None,
    *,
    bin_s: float = 1.0,
    step_s: float | None = None,
    gaps: str = "interpolate",
) -> tuple[Trace, LoadInfo]:
    """`load_trace`, also returning how the file was read."""
    path = Path(path)
    options = _checked_options(path, LoadOptions(bin_s, step_s, gaps))
    if not path.is_file():
        raise FileNotFoundError(f"trace file {path} does not exist")
    fmt = fmt or detect_format(path)
    rates, info = _get_format(fmt)(path, options)
    return Trace(rates, info.step_s, path.stem), info


def _checked_options(path: Path, options: LoadOptions) -> LoadOptions:
    if not options.bin_s > 0:
        raise TraceError(f"{path}: bin size must be > 0 s, got {options.bin_s}")
    if options.step_s is not None and not options.step_s > 0:
        raise TraceError(f"{path}: step must be > 0 s, got {options.step_s}")
    if options.gaps not in GAP_FILLS:
        raise TraceError(
            f"{path}: gaps must be one of {', '.join(GAP_FILLS)}, got {options.gaps!r}"
        )
    return options


def _get_format(fmt: str) -> Loader:
    if fmt not in FORMATS:
        raise TraceError(f"unknown trace format {fmt!r} (known: {', '.join(FORMATS.names())})")
    return FORMATS.get(fmt)


# ----------------------------------------------------------------------------- detection


def detect_format(path: Path) -> str:
    """Name the format of `path` from its first non-empty line."""
    first = _first_line(path)
    fields = [f.strip() for f in first.split(",")]
    if len(fields) == 1 and _is_number(fields[0]):
        return "lines"
    if len(fields) == DEBS_COLUMNS and _is_timestamp(fields[DEBS_DROPOFF]):
        return "debs2015"
    names = [f.lower() for f in fields]
    if _find(names, TIME_COLUMNS) is not None:
        has_count = _find(names, COUNT_COLUMNS + RATE_COLUMNS) is not None
        return "binned" if has_count else "arrivals"
    raise TraceError(
        f"{path}: cannot tell the trace format from its first line {first[:80]!r}; expected one "
        f"count per line, a CSV header with a time column ({', '.join(TIME_COLUMNS)}) and "
        f"optionally a count column ({', '.join(COUNT_COLUMNS + RATE_COLUMNS)}), or the 17-column "
        f"DEBS 2015 taxi rows; or force a format (known: {', '.join(FORMATS.names())})"
    )


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8-sig") as fh:
        for line in fh:
            if line.strip():
                return line.strip()
    raise TraceError(f"{path}: the file is empty")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_timestamp(text: str) -> bool:
    import pandas as pd

    return not pd.isna(pd.to_datetime(text, format="ISO8601", errors="coerce"))


def _find(names: list[str], candidates: tuple[str, ...]) -> int | None:
    for candidate in candidates:
        if candidate in names:
            return names.index(candidate)
    return None


# ----------------------------------------------------------------------------- parsing columns


def _numbers(raw: pd.Series, path: Path, first_line: int, what: str) -> np.ndarray:
    """Finite, non-negative numbers; the error names the file line of the first bad one."""
    import pandas as pd

    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        text = raw.iloc[bad[0]]
        problem = "is missing" if not str(text).strip() else f"{text!r} is not a number"
        raise TraceError(f"{path}:{first_line + bad[0]}: {what} {problem}")
    negative = np.flatnonzero(values < 0)
    if negative.size:
        k = negative[0]
        raise TraceError(f"{path}:{first_line + k}: {what} {raw.iloc[k]!r} is negative")
    return values


def _seconds(raw: pd.Series, path: Path, first_line: int, column: str) -> np.ndarray:
    """Timestamps as seconds from the earliest one. If the first is a plain number all are
    seconds; otherwise all must be ISO 8601 date-times (a 'T' or a space before the time)."""
    import pandas as pd

    if _is_number(raw.iloc[0]):
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(values))
    else:
        stamps = pd.to_datetime(raw, format="ISO8601", errors="coerce", utc=True)
        bad = np.flatnonzero(stamps.isna().to_numpy())
        values = (stamps - stamps.min()).dt.total_seconds().to_numpy()
    if bad.size:
        text = raw.iloc[bad[0]]
        raise TraceError(
            f"{path}:{first_line + bad[0]}: cannot parse timestamp {text!r} in column {column!r}"
        )
    return values - values.min()


def _read_csv(path: Path, header: bool) -> pd.DataFrame:
    """All cells as text, blank lines kept (so row k is file line k + 1 + header) and
    trailing blank rows dropped."""
    import pandas as pd

    try:
        frame = pd.read_csv(
            path,
            header=0 if header else None,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            encoding="utf-8-sig",
        )
    except pd.errors.EmptyDataError:
        raise TraceError(f"{path}: the file is empty") from None
    except pd.errors.ParserError as exc:
        raise TraceError(f"{path}: {exc}") from None
    filled = (frame != "").any(axis=1).to_numpy()
    last = np.flatnonzero(filled)
    frame = frame.iloc[: last[-1] + 1] if last.size else frame.iloc[:0]
    if frame.empty:
        raise TraceError(f"{path}: the file has no data rows")
    return frame


def _column(frame: pd.DataFrame, candidates: tuple[str, ...], fallback: int | None) -> str | None:
    names = [str(c).strip().lower() for c in frame.columns]
    index = _find(names, candidates)
    if index is None and fallback is not None and fallback < len(names):
        index = fallback
    return None if index is None else str(frame.columns[index])


# ----------------------------------------------------------------------------- the formats


def _load_lines(path: Path, options: LoadOptions) -> tuple[np.ndarray, LoadInfo]:
    """One count per line, one line per second (step_s overrides the second)."""
    import pandas as pd

    lines = path.read_text(encoding="utf-8-sig").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise TraceError(f"{path}: the file is empty")
    counts = _numbers(pd.Series(lines).str.strip(), path, 1, "count")
    step = options.step_s or 1.0
    return counts / step, LoadInfo(path, "lines", len(lines), step)


def _load_binned(path: Path, options: LoadOptions) -> tuple[np.ndarray, LoadInfo]:
    """A header CSV with a time column and a count (or rate) column, one row per step: NAB
    `timestamp,value`, `hour_utc,tweets`, `timestamp,count`. The step is the most common
    gap between timestamps; rate = count / step. Missing steps are filled per `options.gaps`."""
    frame = _read_csv(path, header=True)
    time_col = _column(frame, TIME_COLUMNS, 0)
    rate_col = _column(frame, RATE_COLUMNS, None)
    count_col = rate_col or _column(frame, COUNT_COLUMNS, 1)
    if time_col is None or count_col is None:
        raise TraceError(f"{path}: a binned trace needs a time column and a count column")
    seconds = _seconds(frame[time_col], path, 2, time_col)
    values = _numbers(frame[count_col], path, 2, f"{count_col!r}")
    slots, step = _grid_slots(seconds, path, options.step_s)
    rates = values if rate_col else values / step
    filled = np.full(int(slots[-1]) + 1, np.nan)
    filled[slots] = rates
    info = LoadInfo(path, "binned", len(frame), step, filled.size - slots.size)
    return _fill_gaps(filled, options.gaps), info


def _grid_slots(seconds: np.ndarray, path: Path, step_s: float | None) -> tuple[np.ndarray, float]:
    """Each row's index on a regular grid; rows must move forward by at least one step."""
    gaps = np.diff(seconds)
    backwards = np.flatnonzero(gaps <= 0)
    if backwards.size:
        line = backwards[0] + 3  # row k+1 of the data, after the header line
        raise TraceError(f"{path}:{line}: timestamp does not increase over the previous row")
    if step_s is None:
        if gaps.size == 0:
            raise TraceError(f"{path}: one row is not enough to infer the step; give a step")
        step_s = _most_common(gaps)
    slots = np.rint(seconds / step_s).astype(int)
    clash = np.flatnonzero(np.diff(slots) == 0)
    if clash.size:
        raise TraceError(f"{path}:{clash[0] + 3}: two rows fall in the same {step_s:g} s step")
    return slots, step_s


def _most_common(gaps: np.ndarray) -> float:
    """The most frequent gap (to the microsecond); on a tie the smallest."""
    values, counts = np.unique(np.round(gaps, 6), return_counts=True)
    return float(values[np.argmax(counts)])


def _fill_gaps(rates: np.ndarray, how: str) -> np.ndarray:
    missing = np.isnan(rates)
    if not missing.any():
        return rates
    if how == "zero":
        return np.where(missing, 0.0, rates)
    known = np.flatnonzero(~missing)
    return np.interp(np.arange(rates.size), known, rates[known])


def _binned_events(seconds: np.ndarray, bin_s: float) -> np.ndarray:
    """Events per second in consecutive `bin_s` bins from the first event."""
    bins = np.floor(seconds / bin_s).astype(int)
    return np.bincount(bins) / bin_s


def _load_arrivals(path: Path, options: LoadOptions) -> tuple[np.ndarray, LoadInfo]:
    """A header CSV with one row per event and a time column (e.g. the Azure LLM trace's
    `TIMESTAMP`): arrivals are counted in `bin_s` bins (1 s by default)."""
    frame = _read_csv(path, header=True)
    time_col = _column(frame, TIME_COLUMNS, 0)
    if time_col is None:
        raise TraceError(f"{path}: an arrivals trace needs a time column")
    seconds = _seconds(frame[time_col], path, 2, time_col)
    rates = _binned_events(seconds, options.bin_s)
    return rates, LoadInfo(path, "arrivals", len(frame), options.bin_s)


def _load_debs(path: Path, options: LoadOptions) -> tuple[np.ndarray, LoadInfo]:
    """DEBS 2015 Grand Challenge taxi rows (no header, 17 columns): trips per second by
    dropoff_datetime, in `bin_s` bins."""
    frame = _read_csv(path, header=False)
    if frame.shape[1] != DEBS_COLUMNS:
        raise TraceError(
            f"{path}: DEBS 2015 rows have {DEBS_COLUMNS} columns, this file has {frame.shape[1]}"
        )
    short = np.flatnonzero((frame.iloc[:, -1] == "").to_numpy())
    if short.size:
        raise TraceError(f"{path}:{short[0] + 1}: expected {DEBS_COLUMNS} fields")
    seconds = _seconds(frame.iloc[:, DEBS_DROPOFF], path, 1, "dropoff_datetime")
    rates = _binned_events(seconds, options.bin_s)
    return rates, LoadInfo(path, "debs2015", len(frame), options.bin_s)


FORMATS.register("lines", _load_lines)
FORMATS.register("binned", _load_binned)
FORMATS.register("arrivals", _load_arrivals)
FORMATS.register("debs2015", _load_debs)

__all__ = ["FORMATS", "LoadInfo", "detect_format", "load_trace", "load_trace_info"]
