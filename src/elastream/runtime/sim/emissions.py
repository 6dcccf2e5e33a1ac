"""What the simulated sources emit each step: the trace's integral, floored so that fractions carry
over and totals are exact (as the Spark feeder), computed a block of steps at a time."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from elastream.workloads.trace import Trace


def source_emissions(
    trace: Trace, steps: int, step_s: float, shares: Sequence[float], start: int = 0
) -> np.ndarray:
    """Events each source emits in each of the steps start .. start+steps-1: floor of the
    cumulative due count, so fractional remainders carry over and totals are exact (as
    spark/feeder.py: ∫ rate, then its share).

    The integral of a step-wise constant rate is piecewise linear in t, hence np.interp (which
    holds the total after the trace's end)."""
    emitted = _emitted_by(integral(trace), np.arange(start, start + steps + 1), step_s, shares)
    return np.diff(emitted, axis=1)


def integral(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The trace's bucket edges (s) and the events due by each."""
    edges = np.arange(trace.rates.size + 1) * trace.step_s
    return edges, np.concatenate(([0.0], np.cumsum(trace.rates * trace.step_s)))


def _emitted_by(
    due_by: tuple[np.ndarray, np.ndarray],
    steps: np.ndarray,
    step_s: float,
    shares: Sequence[float],
) -> np.ndarray:
    """Events each source has emitted before each of `steps` (sources × steps)."""
    due = np.interp(steps * step_s, *due_by)
    return np.floor(np.outer(np.asarray(shares), due) + 1e-9).astype(np.int64)


class Emissions:
    """The sources' emissions per step, computed a block of steps at a time, so that memory
    does not grow with the run's length (any range: `window`)."""

    BLOCK_STEPS = 36_000

    def __init__(self, trace: Trace, steps: int, step_s: float, shares: Sequence[float]) -> None:
        self.due_by = integral(trace)
        self.steps, self.step_s, self.shares = steps, step_s, list(shares)
        self.start = 0
        self.block = np.zeros((len(self.shares), 0), dtype=np.int64)  # steps start.. of the block
        self.rows: list[list[int]] = []
        self.quiet_until: list[int] = []  # per step of the block: first step with an emission
        self._load(0)

    def _load(self, start: int) -> None:
        self.start = start
        count = min(self.BLOCK_STEPS, self.steps - start)
        block = self.block = self._compute(start, start + count)
        self.rows = block.tolist()
        busy = np.flatnonzero(block.sum(axis=0) > 0)
        nxt = np.searchsorted(busy, np.arange(count))
        ends = np.append(busy, count)[nxt] + start
        self.quiet_until = ends.tolist()

    def _ensure(self, s: int) -> int:
        offset = s - self.start
        if not 0 <= offset < len(self.quiet_until):
            self._load(s)
            offset = 0
        return offset

    def at(self, s: int) -> list[int]:
        """Events of each source in step s (s < steps)."""
        offset = self._ensure(s)
        return [row[offset] for row in self.rows]

    def quiet_steps(self, s: int, end: int) -> int:
        """How many steps from s (up to `end`) no source emits anything."""
        if s >= self.steps:
            return end - s
        offset = self._ensure(s)
        return min(self.quiet_until[offset], end) - s

    def window(self, start: int, end: int) -> np.ndarray:
        """Emissions of steps start .. end-1 (sources × steps), the same as step by step: a
        slice of the block held when it covers them (each step's count is computed from its
        own edges, so a slice equals a fresh computation), else computed."""
        offset = start - self.start
        if offset >= 0 and end - self.start <= self.block.shape[1]:
            return self.block[:, offset : end - self.start]
        return self._compute(start, end)

    def window_lists(self, start: int, end: int) -> list[list[int]]:
        """`window` as one list per source (slices of the block's rows when it covers them):
        cheaper than an array for one interval's steps."""
        offset = start - self.start
        if offset >= 0 and end - self.start <= len(self.quiet_until):
            return [row[offset : end - self.start] for row in self.rows]
        return self._compute(start, end).tolist()

    def _compute(self, start: int, end: int) -> np.ndarray:
        emitted = _emitted_by(self.due_by, np.arange(start, end + 1), self.step_s, self.shares)
        return np.diff(emitted, axis=1)


def rate_changes(trace: Trace) -> list[float]:
    """The times (s) at which the trace's rate changes, ending with +inf: the ends of its
    constant stretches (fast-forward never skips across one)."""
    rates = trace.rates
    changes = np.flatnonzero(rates[1:] != rates[:-1]) + 1
    return [*(changes * trace.step_s).tolist(), trace.duration_s, math.inf]
