"""The PSPS test workload (seed 000, V-A.2): high-variation periods of the COVID-19 hourly tweet
counts, smoothed and scaled to the application's capacity, or raw for Table IX.

Steps (docs/reproduction/psps.md, "The workload"):

1. read `covid19_tweets_per_hour.csv` (Gruzd & Mai's dataset, ref. [22]); hours the collection
   missed are marked and never selected (they are restarts, not traffic);
2. skip the collection's start-up: the hours before the 24-hour mean first reaches half of
   the median 24-hour mean (the counts grow from 68/h as the collection starts);
3. score every `hours`-long window by the coefficient of variation (std / mean) of its 3-hour
   centred moving mean, and keep the `periods` best windows that do not overlap, in time
   order: "periods of the dataset that present high variation", "a combination of traffic
   spikes and under spikes";
4. concatenate them and play each trace hour in duration / (periods · hours) seconds;
5. smoothed (`smooth=1`): the `window`-hour centred moving mean, interpolated linearly
   between hour centres to one value per second: a spike keeps its onset, ramp, peak and
   decay (the spike model of Bodík et al., ref. [23]) without the hour-to-hour jitter;
   raw (`smooth=0`): the hourly counts as they are, step-wise, with per-second Poisson counts
   (a tweet stream's arrivals) drawn with `seed`;
6. both are multiplied by the same factor, peak / max(smoothed): the smoothed peak is `peak`
   events/s (the benchmark sets it to what r_over replicas carry) and the raw stream has the
   same shape and volume at hour scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elastream.workloads.generators import GENERATORS
from elastream.workloads.loaders import load_trace
from elastream.workloads.resolve import default_data_dir, find_trace_file
from elastream.workloads.trace import Trace, TraceError

COVID_FILE = "covid19_tweets_per_hour.csv"
COVID_START_UTC = "2020-01-21T22:00Z"  # the file's first hour: hour index 0
SCORE_WINDOW_H = 3  # the moving mean the variation score is computed on (hides the jitter)


@dataclass(frozen=True)
class CovidSelection:
    """The hourly counts, which hours were missing, and the chosen window starts (hours)."""

    counts: np.ndarray
    missing: np.ndarray
    warmup_h: int
    starts: tuple[int, ...]
    hours: int


def covid_hours(data_dir: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(tweets per hour, missing-hour mask) of the COVID-19 file, gaps interpolated."""
    path = find_trace_file(COVID_FILE, default_data_dir() if data_dir is None else data_dir)
    if path is None:
        raise TraceError(
            f"covid: {COVID_FILE} not found (looked under ../shared/data): the covid workload "
            "is built from that real trace"
        )
    filled = load_trace(path, "binned").rates * 3600.0
    zeros = load_trace(path, "binned", gaps="zero").rates * 3600.0
    return filled, (zeros == 0) & (filled > 0)


def centred_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving mean over `window` samples (fewer at the ends)."""
    if window <= 1:
        return values.astype(float)
    half = window // 2
    padded = np.concatenate(([0.0], np.cumsum(values, dtype=float)))
    idx = np.arange(values.size)
    lo, hi = np.maximum(idx - half, 0), np.minimum(idx + window - half, values.size)
    return (padded[hi] - padded[lo]) / (hi - lo)


def warmup_hours(counts: np.ndarray) -> int:
    """The first hour whose trailing 24-hour mean reaches half the median 24-hour mean."""
    if counts.size < 24:
        return 0
    daily = np.convolve(counts, np.ones(24) / 24.0, mode="valid")  # daily[k]: hours k..k+23
    return int(np.argmax(daily >= np.median(daily) / 2.0)) + 23


def select_periods(counts: np.ndarray, missing: np.ndarray, hours: int, periods: int) -> list[int]:
    """Starts of the `periods` non-overlapping `hours`-long windows with the highest coefficient
    of variation of the 3-hour moving mean, after the start-up and without a missing hour."""
    smooth = centred_mean(counts, SCORE_WINDOW_H)
    warm = warmup_hours(counts)
    scored = []
    for a in range(warm, counts.size - hours + 1):
        if missing[a : a + hours].any():
            continue
        w = smooth[a : a + hours]
        scored.append((float(w.std() / w.mean()), a))
    chosen: list[int] = []
    for _, a in sorted(scored, reverse=True):
        if all(abs(a - b) >= hours for b in chosen):
            chosen.append(a)
        if len(chosen) == periods:
            break
    if len(chosen) < periods:
        raise TraceError(f"covid: only {len(chosen)} windows of {hours} h fit, not {periods}")
    return sorted(chosen)


def covid_selection(hours: int, periods: int, data_dir: str | None = None) -> CovidSelection:
    """The selected periods of the COVID-19 trace (for the docs and the generator)."""
    counts, missing = covid_hours(data_dir)
    starts = select_periods(counts, missing, hours, periods)
    return CovidSelection(counts, missing, warmup_hours(counts), tuple(starts), hours)


def _per_second(hourly: np.ndarray, s_per_hour: float, duration: float) -> np.ndarray:
    """Linear interpolation between hour centres, one value per second."""
    t = np.arange(round(duration)) + 0.5
    centres = (np.arange(hourly.size) + 0.5) * s_per_hour
    return np.interp(t, centres, hourly)


def _stepwise(hourly: np.ndarray, s_per_hour: float, duration: float) -> np.ndarray:
    t = np.arange(round(duration)) + 0.5
    return hourly[np.minimum((t / s_per_hour).astype(int), hourly.size - 1)]


def covid(
    *,
    smooth: int = 1,
    peak: float = 338.0,
    hours: int = 24,
    periods: int = 4,
    duration: float = 1200.0,
    window: int = 3,
    seed: int = 0,
) -> Trace:
    """The PSPS test workload from the COVID-19 hourly tweet counts (module docstring):
    `periods` windows of `hours` h with the highest variation, played in `duration` s,
    smoothed by a `window`-hour moving mean (`smooth=1`) or raw with Poisson seconds
    (`smooth=0`), scaled so that the smoothed peak is `peak` events/s."""
    if smooth not in (0, 1):
        raise TraceError(f"covid: smooth must be 0 (raw) or 1 (smoothed), got {smooth}")
    for name, value in (("hours", hours), ("periods", periods), ("window", window)):
        if value < 1:
            raise TraceError(f"covid: {name} must be >= 1, got {value}")
    if peak <= 0 or duration <= 0:
        raise TraceError(f"covid: peak and duration must be > 0, got {peak} and {duration}")
    selection = covid_selection(hours, periods)
    hourly = np.concatenate([selection.counts[a : a + hours] for a in selection.starts])
    s_per_hour = duration / hourly.size
    smoothed = _per_second(centred_mean(hourly, window), s_per_hour, duration)
    factor = peak / smoothed.max()
    if smooth:
        return Trace(smoothed * factor, 1.0, "covid")
    raw = _stepwise(hourly, s_per_hour, duration) * factor
    counts = np.random.default_rng(seed).poisson(raw).astype(float)
    return Trace(counts, 1.0, "covid-raw")


GENERATORS.register("covid", covid)
