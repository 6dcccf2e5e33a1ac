"""A rate trace: events per second sampled on a fixed step, with rescaling and time compression."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class TraceError(ValueError):
    """A trace that cannot be used: the message names the file or generator and the problem."""


@dataclass(frozen=True)
class TraceStats:
    """Duration, sampling and the rate distribution of a trace; total_events = Σ rate·step."""

    duration_s: float
    samples: int
    step_s: float
    mean: float
    median: float
    p99: float
    max: float
    peak_to_median: float
    total_events: float


@dataclass(frozen=True)
class Trace:
    """`rates[k]` is the input rate (events/s) during [k·step_s, (k+1)·step_s)."""

    rates: np.ndarray
    step_s: float = 1.0
    name: str = "trace"

    def __post_init__(self) -> None:
        rates = np.asarray(self.rates, dtype=float)
        if rates.ndim != 1 or rates.size == 0:
            raise TraceError(f"{self.name}: a trace needs a non-empty 1-D series of rates")
        if not np.all(np.isfinite(rates)):
            raise TraceError(f"{self.name}: rates must be finite numbers")
        bad = np.flatnonzero(rates < 0)
        if bad.size:
            raise TraceError(f"{self.name}: negative rate {rates[bad[0]]} at sample {bad[0]}")
        if self.step_s <= 0:
            raise TraceError(f"{self.name}: step must be > 0 s, got {self.step_s}")
        object.__setattr__(self, "rates", rates)

    @property
    def duration_s(self) -> float:
        return self.rates.size * self.step_s

    @property
    def peak(self) -> float:
        return float(self.rates.max())

    def rate_at(self, t: float) -> float:
        """The rate at time t (0 after the end)."""
        k = int(t // self.step_s)
        return float(self.rates[k]) if 0 <= k < self.rates.size else 0.0

    def rescaled(self, peak_rate: float) -> Trace:
        """The same shape with its maximum at `peak_rate` events/s."""
        if peak_rate <= 0:
            raise TraceError(f"{self.name}: peak rate must be > 0, got {peak_rate}")
        if self.peak == 0:
            raise TraceError(f"{self.name}: an all-zero trace cannot be rescaled")
        return Trace(self.rates * (peak_rate / self.peak), self.step_s, self.name)

    def compressed(self, time_scale: float) -> Trace:
        """Time runs `time_scale` times faster: one trace hour in 3600/time_scale seconds."""
        if time_scale <= 0:
            raise TraceError(f"{self.name}: time scale must be > 0, got {time_scale}")
        return Trace(self.rates, self.step_s / time_scale, self.name)

    def sliced(self, start_s: float, end_s: float | None = None) -> Trace:
        """The part between start_s and end_s (trace seconds)."""
        a = int(start_s // self.step_s)
        b = self.rates.size if end_s is None else int(np.ceil(end_s / self.step_s))
        if not 0 <= a < b:
            raise TraceError(f"{self.name}: empty slice [{start_s}, {end_s})")
        return Trace(self.rates[a:b], self.step_s, self.name)

    def stats(self) -> TraceStats:
        """Summary figures of this trace as sampled (rates in events/s)."""
        median = float(np.median(self.rates))
        return TraceStats(
            duration_s=self.duration_s,
            samples=int(self.rates.size),
            step_s=self.step_s,
            mean=float(self.rates.mean()),
            median=median,
            p99=float(np.percentile(self.rates, 99)),
            max=self.peak,
            peak_to_median=self.peak / median if median > 0 else float("inf"),
            total_events=float(self.rates.sum() * self.step_s),
        )

    def per_second(self) -> np.ndarray:
        """Rates resampled to 1 s steps (step-wise constant), for engines that tick each second."""
        n = max(1, int(np.ceil(self.duration_s)))
        idx = np.minimum((np.arange(n) / self.step_s).astype(int), self.rates.size - 1)
        return self.rates[idx]
