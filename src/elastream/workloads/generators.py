"""Seeded synthetic workloads as Traces: spikes, steps, random walks, Brownian motion, sinusoids."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from elastream.base.registry import Registry
from elastream.workloads.trace import Trace, TraceError

Generator = Callable[..., Trace]

GENERATORS: Registry[Generator] = Registry("generator")


def _need(ok: bool, generator: str, message: str) -> None:
    if not ok:
        raise TraceError(f"{generator}: {message}")


def _grid(generator: str, duration: float, step: float) -> np.ndarray:
    """Sample start times 0, step, 2·step, … covering [0, duration)."""
    _need(duration > 0, generator, f"duration must be > 0 s, got {duration}")
    _need(step > 0, generator, f"step must be > 0 s, got {step}")
    return np.arange(math.ceil(duration / step - 1e-9)) * step


def _noisy(rates: np.ndarray, noise: float, rng: np.random.Generator, generator: str) -> np.ndarray:
    """Multiplicative Gaussian noise: each sample times (1 + noise·Z), floored at 0."""
    _need(noise >= 0, generator, f"noise must be >= 0, got {noise}")
    if noise == 0:
        return rates
    return np.maximum(rates * (1.0 + noise * rng.standard_normal(rates.size)), 0.0)


def constant(*, rate: float = 50.0, duration: float = 120.0, step: float = 1.0) -> Trace:
    """The same rate throughout."""
    _need(rate >= 0, "constant", f"rate must be >= 0, got {rate}")
    t = _grid("constant", duration, step)
    return Trace(np.full(t.size, float(rate)), step, "constant")


def sinusoid(
    *,
    mean: float = 100.0,
    amplitude: float = 50.0,
    period: float = 60.0,
    phase: float = 0.0,
    duration: float = 300.0,
    step: float = 1.0,
    noise: float = 0.0,
    seed: int = 0,
) -> Trace:
    """mean + amplitude·sin(2πt/period + phase), floored at 0 (phase in radians)."""
    _need(mean >= 0, "sinusoid", f"mean must be >= 0, got {mean}")
    _need(amplitude >= 0, "sinusoid", f"amplitude must be >= 0, got {amplitude}")
    _need(period > 0, "sinusoid", f"period must be > 0 s, got {period}")
    t = _grid("sinusoid", duration, step)
    rates = np.maximum(mean + amplitude * np.sin(2 * np.pi * t / period + phase), 0.0)
    rng = np.random.default_rng(seed)
    return Trace(_noisy(rates, noise, rng, "sinusoid"), step, "sinusoid")


def spike_envelope(
    t: np.ndarray, onset: float, ramp: float, hold: float, decay: float
) -> np.ndarray:
    """The spike's shape in [0, 1]: 0 before `onset`, a linear rise over `ramp` seconds, 1 for
    `hold` seconds at the peak, a linear return to 0 over `decay` seconds.

    Bodík et al. (SoCC 2010, ref. [23] of the PSPS paper) describe a volume spike by its onset,
    the steepness/duration of its ramp-up, its magnitude, its duration at the peak and its decay
    back to normal; this is the piecewise-linear curve through those four phases."""
    rise = np.clip((t - onset) / ramp, 0.0, 1.0) if ramp > 0 else (t >= onset).astype(float)
    top = onset + ramp + hold
    fall = np.clip(1.0 - (t - top) / decay, 0.0, 1.0) if decay > 0 else (t < top).astype(float)
    return np.where(t < top, rise, fall)


def _check_spike(generator: str, onset: float, ramp: float, hold: float, decay: float) -> None:
    for name, value in (("onset", onset), ("ramp", ramp), ("hold", hold), ("decay", decay)):
        _need(value >= 0, generator, f"{name} must be >= 0 s, got {value}")


def spike(
    *,
    peak: float = 300.0,
    magnitude: float = 10.0,
    onset: float = 60.0,
    ramp: float = 10.0,
    hold: float = 30.0,
    decay: float = 30.0,
    duration: float = 180.0,
    step: float = 1.0,
    noise: float = 0.0,
    seed: int = 0,
) -> Trace:
    """One workload spike after Bodík et al.: a baseline of peak/magnitude events/s rising to
    `peak` at `onset`+`ramp`, held for `hold` s, back to the baseline after `decay` s.

    The ramp-up steepness is (peak − baseline)/ramp events/s per second."""
    _need(peak > 0, "spike", f"peak must be > 0, got {peak}")
    _need(magnitude >= 1, "spike", f"magnitude must be >= 1 (peak over baseline), got {magnitude}")
    _check_spike("spike", onset, ramp, hold, decay)
    t = _grid("spike", duration, step)
    base = peak / magnitude
    # rate = baseline·(1 + (M − 1)·envelope): the baseline outside, M·baseline = peak at the top.
    rates = base * (1.0 + (magnitude - 1.0) * spike_envelope(t, onset, ramp, hold, decay))
    rng = np.random.default_rng(seed)
    return Trace(_noisy(rates, noise, rng, "spike"), step, "spike")


def _level_trace(
    generator: str, levels: Sequence[float], hold: float, duration: float, step: float
) -> Trace:
    """Cycle through `levels`, holding each for `hold` seconds."""
    _need(hold > 0, generator, f"hold must be > 0 s, got {hold}")
    t = _grid(generator, duration, step)
    index = (t // hold).astype(int) % len(levels)
    return Trace(np.asarray(levels, dtype=float)[index], step, generator)


def _check_machines(generator: str, unit: float, **machines: float) -> None:
    _need(unit > 0, generator, f"unit must be > 0 events/s per machine, got {unit}")
    for name, value in machines.items():
        _need(value >= 0, generator, f"{name} must be >= 0 machines, got {value}")


def stepwise(
    *,
    low: float = 2.0,
    mid: float = 5.0,
    high: float = 8.0,
    unit: float = 10.0,
    hold: float = 240.0,
    duration: float = 1920.0,
) -> Trace:
    """VISP pattern A (Hochreiner et al., "Data arrival pattern"): three load levels of
    low/mid/high machines emitting `unit` events/s each, stepping low → mid → high → mid → …
    (a staircase approximating a sine), one step every `hold` s (4 min in the paper)."""
    _check_machines("stepwise", unit, low=low, mid=mid, high=high)
    return _level_trace(
        "stepwise", [low * unit, mid * unit, high * unit, mid * unit], hold, duration, 1.0
    )


def twolevel(
    *,
    low: float = 2.0,
    high: float = 8.0,
    unit: float = 10.0,
    hold: float = 480.0,
    duration: float = 1920.0,
) -> Trace:
    """VISP pattern B: only the lowest and highest levels, alternating every `hold` s (8 min in
    the paper, twice the stepwise hold)."""
    _check_machines("twolevel", unit, low=low, high=high)
    return _level_trace("twolevel", [low * unit, high * unit], hold, duration, 1.0)


def random_walk_levels(
    n: int, start: int, low: int, high: int, rng: np.random.Generator
) -> np.ndarray:
    """n machine counts following Hochreiner et al. Eq. (6), kept within [low, high].

    Eq. (6): machine_n = machine_{n−1} − 1 if R < 0.4, machine_{n−1} if 0.4 ≤ R ≤ 0.6,
    machine_{n−1} + 1 if R > 0.6, with R uniform in [0, 1). The paper picked walks that stay
    between 1 and 8 machines; clamping at the bounds guarantees it for every seed."""
    r = rng.random(n - 1)
    moves = np.where(r < 0.4, -1, np.where(r > 0.6, 1, 0))
    levels = np.empty(n, dtype=int)
    levels[0] = start
    for k, move in enumerate(moves, start=1):
        levels[k] = min(max(levels[k - 1] + move, low), high)
    return levels


def randomwalk(
    *,
    start: int = 4,
    low: int = 1,
    high: int = 8,
    unit: float = 10.0,
    interval: float = 30.0,
    duration: float = 1200.0,
    seed: int = 0,
) -> Trace:
    """VISP patterns C/D: the machine count does one Eq. (6) move every `interval` s, starting
    at `start` machines, bounded to [low, high]; each machine emits `unit` events/s."""
    _check_machines("randomwalk", unit, low=low)
    _need(
        low <= start <= high, "randomwalk", f"need low <= start <= high, got {low}, {start}, {high}"
    )
    _need(interval > 0, "randomwalk", f"interval must be > 0 s, got {interval}")
    t = _grid("randomwalk", duration, 1.0)
    n_moves = int(t[-1] // interval) + 1
    levels = random_walk_levels(n_moves, start, low, high, np.random.default_rng(seed))
    return Trace(levels[(t // interval).astype(int)] * unit, 1.0, "randomwalk")


def brownian(
    *,
    start: float = 100.0,
    sigma: float = 10.0,
    drift: float = 0.0,
    duration: float = 200.0,
    step: float = 1.0,
    seed: int = 0,
) -> Trace:
    """A load following Brownian motion, as in Belkhiria & Tedeschi §5.1 (each operator's
    workload evolves by a Brownian motion over 200 steps): x(0) = start,
    x(t + dt) = x(t) + drift·dt + sigma·√dt·Z, reflected at 0 so rates stay non-negative.

    Without the reflection Var[x(t)] = sigma²·t: the spread grows linearly with time."""
    _need(start >= 0, "brownian", f"start must be >= 0, got {start}")
    _need(sigma >= 0, "brownian", f"sigma must be >= 0, got {sigma}")
    t = _grid("brownian", duration, step)
    rng = np.random.default_rng(seed)
    steps = drift * step + sigma * math.sqrt(step) * rng.standard_normal(t.size - 1)
    path = np.empty(t.size)
    path[0] = start
    for k, dx in enumerate(steps, start=1):
        path[k] = abs(path[k - 1] + dx)  # reflection at 0
    return Trace(path, step, "brownian")


def demo_trace(duration_s: float = 300.0, peak_rate: float = 300.0, seed: int = 0) -> Trace:
    """The `elastream demo` workload: a noisy baseline of about peak_rate/10 with 2–3 spikes of
    7–10× (the highest exactly at `peak_rate`), long enough at the top for replicas to follow."""
    _need(duration_s >= 30, "demo", f"duration must be >= 30 s, got {duration_s}")
    _need(peak_rate > 0, "demo", f"peak must be > 0, got {peak_rate}")
    rng = np.random.default_rng(seed)
    t = _grid("demo", duration_s, 1.0)
    n_spikes = 3 if duration_s >= 180 else 2
    slot = duration_s / n_spikes
    envelope = np.zeros(t.size)
    for k, magnitude in enumerate(rng.uniform(7.0, 10.0, n_spikes)):
        # Each spike lives in its own slot: onset 15–35 % in, 5 % ramp, 20 % hold, 15 % decay.
        onset = (k + rng.uniform(0.15, 0.35)) * slot
        shape = spike_envelope(t, onset, 0.05 * slot, 0.20 * slot, 0.15 * slot)
        envelope = np.maximum(envelope, (magnitude - 1.0) * shape)
    rates = _noisy(1.0 + envelope, 0.05, rng, "demo")
    return Trace(rates, 1.0, "demo").rescaled(peak_rate)


def demo(*, duration: float = 300.0, peak: float = 300.0, seed: int = 0) -> Trace:
    """`demo_trace` as a generator spec."""
    return demo_trace(duration, peak, seed)


for _fn in (constant, sinusoid, spike, stepwise, twolevel, randomwalk, brownian, demo):
    GENERATORS.register(_fn.__name__, _fn)
