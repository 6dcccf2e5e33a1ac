"""The paper's four data arrival patterns (Fig. 7): stepwise, two-level, random walks (Eq. 6);
and load patterns cut from real rate traces, rescaled to a range of machines."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from elastream.leasing.hosts import LeasingError


class Pattern(StrEnum):
    STEPWISE = "stepwise"
    TWO_LEVEL = "two_level"
    RANDOM_WALK_1 = "random_walk_1"
    RANDOM_WALK_2 = "random_walk_2"


LOW, MID, HIGH = 2, 5, 8  # machines: "ranging from two to eight machines"
STEP_S = 240.0  # stepwise: a level change every 4 min; two-level: every 8 min
WALK_STEP_S = 60.0  # our choice: the random walks take one step of Eq. 6 per minute
WALK_SEEDS = {Pattern.RANDOM_WALK_1: 1, Pattern.RANDOM_WALK_2: 2}  # two fixed realisations


def random_walk(steps: int, seed: int, start: int = 4, lo: int = 1, hi: int = 8) -> np.ndarray:
    """Eq. 6: machine_n = machine_{n-1} - 1 if R < 0.4, unchanged if 0.4 <= R <= 0.6, +1 if
    R > 0.6 (R uniform in [0, 1)); kept between `lo` and `hi` machines."""
    rng = np.random.default_rng(seed)
    out = np.empty(steps, dtype=int)
    m = start
    for n in range(steps):
        r = rng.random()
        if r < 0.4:
            m -= 1
        elif r > 0.6:
            m += 1
        m = min(hi, max(lo, m))
        out[n] = m
    return out


@dataclass(frozen=True)
class TraceLoad:
    """A load pattern from a real rate trace: `levels` machines every `step_s` seconds, linearly
    interpolated between samples and held after the last one (`value` names it in tables)."""

    value: str
    levels: tuple[float, ...]
    step_s: float

    def __post_init__(self) -> None:
        if len(self.levels) < 2 or self.step_s <= 0:
            raise LeasingError(f"trace load {self.value!r}: needs >= 2 levels and a step > 0")
        if min(self.levels) < 0:
            raise LeasingError(f"trace load {self.value!r}: machine levels must be >= 0")

    def at(self, times_s: np.ndarray) -> np.ndarray:
        grid = np.arange(len(self.levels)) * self.step_s
        return np.interp(times_s, grid, np.asarray(self.levels, dtype=float))


def trace_load(
    name: str, rates: np.ndarray, step_s: float, low: float = 2.0, high: float = 13.0
) -> TraceLoad:
    """A rate trace rescaled linearly so that its lowest rate is `low` machines and its highest
    `high` (defaults: 2 machines, which 2 hosts carry, and 13, which need 8: the "2-8 hosts"
    of issue 41)."""
    r = np.asarray(rates, dtype=float)
    span = float(r.max() - r.min())
    if r.size < 2 or not np.all(np.isfinite(r)) or span <= 0:
        raise LeasingError(f"trace {name!r}: needs >= 2 finite rates that are not all equal")
    levels = low + (high - low) * (r - r.min()) / span
    return TraceLoad(name, tuple(float(x) for x in levels), step_s)


Load = Pattern | TraceLoad  # what a simulation replays


def machines(pattern: Load, times_s: np.ndarray) -> np.ndarray:
    """Number of emitting machines at each time (s since the start)."""
    if np.any(times_s < 0):
        raise LeasingError("pattern times must be non-negative")
    if isinstance(pattern, TraceLoad):
        return pattern.at(times_s)
    if pattern is Pattern.STEPWISE:
        cycle = np.array([LOW, MID, HIGH, MID])  # a staircase approximating a sine
        return cycle[(times_s // STEP_S).astype(int) % 4]
    if pattern is Pattern.TWO_LEVEL:
        cycle = np.array([LOW, HIGH])
        return cycle[(times_s // (2 * STEP_S)).astype(int) % 2]
    if pattern in WALK_SEEDS:
        idx = (times_s // WALK_STEP_S).astype(int)
        walk = random_walk(int(idx.max()) + 1, WALK_SEEDS[pattern])
        return walk[idx]
    raise LeasingError(f"unknown arrival pattern {pattern!r}")
