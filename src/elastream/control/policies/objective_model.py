"""The latency model of the `objective` policy (O6-O12 of docs/objective.md): each operator as a
station, the micro-batch period, the waits a bound allows, and the fewest replicas that keep it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

from elastream.model.objective import Statistic
from elastream.prediction.queueing import erlang_c

P99 = 0.99
Z_P99_SUP = NormalDist().inv_cdf(1 - (1 - P99) / 2)  # O11: p99 of a Brownian path's maximum
BATCHES_WAITED = {"p99": 1.0, "mean": 0.5}  # O6: κ, the batch running when an event arrives
MEAN_SUP = math.sqrt(2 / math.pi)  # O11: mean of a standard Brownian path's maximum over [0, 1]
MAX_STRETCH = 64.0  # O10: the largest stretch k of the bound tried before filling the pools
STRETCH_STEPS = 12  # O10: bisection steps on k (k found within a factor 64^(1/4096))


@dataclass(frozen=True, slots=True)
class Station:
    """One operator as step 5 sees it: its load, its replica's true rate and its pool."""

    name: str
    preds: tuple[str, ...]  # operator predecessors (sources left out)
    arrival: float  # λ̂_i, events/s
    queue: float  # q'_i, events
    rho: float  # ρ_i, events per busy second
    low: int  # pool minimum
    high: int  # pool maximum
    own_bound_s: float | None = None  # the operator's own objective, if any
    horizon_s: float = 0.0  # T of O11 (0: the stationary wait only)

    def utilization(self, r: int) -> float:
        """u_i(r) = λ̂_i / (r·ρ_i) of O12 (0 when idle, ∞ with no replica and work)."""
        if self.arrival == 0:
            return 0.0
        return self.arrival / (r * self.rho) if r > 0 else math.inf


@dataclass(frozen=True, slots=True)
class BatchModel:
    """The micro-batch time of O12: D = min(o / (1 − u), o + c) with o = a + b·R; `measured_s`
    replaces it by the interval's measured D(t) (O8's inversion)."""

    base_s: float  # a
    per_task_s: float  # b
    cap_s: float  # c
    waited: float  # κ of O6
    measured_s: float | None = None
    per_hop: float = 1.0  # η of O6: batches an event takes per operator
    spread: float = 1.0  # φ of O15: the passage's batches against the mean batch time

    def period_s(self, tasks: int, utilization: float) -> float:
        """φ·D(r) of O12 and O15 for R = `tasks` and u = `utilization`."""
        if self.measured_s is not None:
            return self.spread * self.measured_s
        fixed = self.base_s + self.per_task_s * tasks
        capped = fixed + self.cap_s
        period = capped if utilization >= 1 else min(fixed / (1 - utilization), capped)
        return self.spread * period

    def slope_s(self, level: float | None) -> float:
        """∂D/∂R of O14's line at utilisation level v (v ≥ 1: the capped line a + b·R + c)."""
        if self.measured_s is not None or level is None:
            return 0.0
        slope = self.per_task_s if level >= 1 else self.per_task_s / (1 - level)
        return self.spread * slope


def wait_s(
    arrival: float, rho: float, r: int, statistic: Statistic, horizon_s: float = 0.0
) -> float:
    """W_i(r): the stationary M/M/r wait (O5), capped over a finite horizon by the transient
    wait (O11); ∞ when unstable and no horizon is given."""
    stationary = stationary_wait_s(arrival, rho, r, statistic)
    if horizon_s <= 0:
        return stationary
    return min(stationary, transient_wait_s(arrival, r * rho, horizon_s, statistic))


def stationary_wait_s(arrival: float, rho: float, r: int, statistic: Statistic) -> float:
    """The Erlang-C mean wait, or the p99 of the M/M/r wait (O5); ∞ when unstable."""
    capacity = r * rho
    if arrival >= capacity:
        return math.inf
    if arrival == 0:
        return 0.0
    c = erlang_c(arrival, rho, r)
    if statistic == "mean":
        return c / (capacity - arrival)
    if c <= 1 - P99:
        return 0.0  # at most 1 % of the events wait at all
    return math.log(c / (1 - P99)) / (capacity - arrival)


def transient_wait_s(
    arrival: float, capacity: float, horizon_s: float, statistic: Statistic
) -> float:
    """O11: the wait of an event within a horizon T that starts with an empty queue. The queue
    is the fluid backlog max(0, λ − c)·T plus the diffusion term of its fluctuations (net input
    variance σ² = λ + c, Poisson arrivals and exponential service): by the reflection principle
    P(sup_{s ≤ T} B_s > x) = 2·Φ̄(x / (σ√T)), so its p99 is z·σ√T with z = Φ⁻¹(0.995) and its
    mean √(2/π)·σ√T. An event behind that queue waits it over c."""
    if capacity <= 0:
        return math.inf
    z = Z_P99_SUP if statistic == "p99" else MEAN_SUP
    queue = max(0.0, arrival - capacity) * horizon_s + z * math.sqrt(
        (arrival + capacity) * horizon_s
    )
    return queue / capacity


def station_latency(s: Station, r: int, statistic: Statistic) -> float:
    """L_i(r) of O4: drain the queue, wait at the forecast rate (O5, O11), be served."""
    if r == 0:
        return 0.0 if s.arrival == 0 and s.queue == 0 else math.inf
    wait = wait_s(s.arrival, s.rho, r, statistic, s.horizon_s)
    return s.queue / (r * s.rho) + wait + 1.0 / s.rho


def batch_period_s(
    stations: Mapping[str, Station],
    r: Mapping[str, int],
    batch: BatchModel,
    level: float | None = None,
) -> float:
    """D(r) of O12 over every operator (one batch for the whole pipeline); `level` v replaces
    the utilisation u by its bound (O14: v < 1 for the line (a + b·R) / (1 − v), 1 for the
    capped line)."""
    used = max((s.utilization(r[n]) for n, s in stations.items()), default=0.0)
    return batch.period_s(sum(r.values()), used if level is None else level)


def critical_path(
    stations: Mapping[str, Station],
    r: Mapping[str, int],
    statistic: Statistic,
    batch: BatchModel | None = None,
    level: float | None = None,
) -> tuple[float, list[str]]:
    """max over source-to-sink paths of Σ (L_i + η·D) + κ·D (O6 without h; D of O12, 0 without
    a batch model), and that path's operators. `stations` is in topological order."""
    period = 0.0 if batch is None else batch_period_s(stations, r, batch, level)
    best: dict[str, tuple[float, list[str]]] = {}
    for name, s in stations.items():
        upstream = max((best[p] for p in s.preds if p in best), key=lambda b: b[0], default=None)
        base, path = upstream if upstream is not None else (0.0, [])
        latency = station_latency(s, r[name], statistic) + (
            0.0 if batch is None else batch.per_hop * period
        )
        best[name] = (base + latency, [*path, name])
    latency, path = max(best.values(), key=lambda b: b[0], default=(0.0, []))
    waited = 0.0 if batch is None or not path else batch.waited * period
    return latency + waited, path


def smallest_start(s: Station, statistic: Statistic, level: float | None = None) -> int | None:
    """The smallest count in the pool that is stable, keeps the operator's own bound and, at a
    utilisation level v (O14), keeps u_i ≤ v; None when v needs more than the pool."""
    for r in range(s.low, s.high + 1):
        if level is not None and level < 1 and s.utilization(r) > level:
            continue
        latency = station_latency(s, r, statistic)
        if math.isfinite(latency) and (s.own_bound_s is None or latency <= s.own_bound_s):
            return r
    return s.high if level is None or level >= 1 else None


def greedy(
    stations: Mapping[str, Station],
    bound_s: float,
    statistic: Statistic,
    batch: BatchModel | None = None,
    level: float | None = None,
) -> dict[str, int] | None:
    """Step 5 for one linear bound of the batch time (O14; without a batch model, O7 itself):
    from the smallest starts, a replica at a time where the critical path gains the most, net
    of what a task adds to its batches, until L ≤ bound or no replica gains. None: the level's
    utilisation bound needs more than a pool."""
    starts = {name: smallest_start(s, statistic, level) for name, s in stations.items()}
    if any(v is None for v in starts.values()):
        return None
    r: dict[str, int] = {name: v for name, v in starts.items() if v is not None}
    slope = 0.0 if batch is None else batch.slope_s(level)
    while True:
        latency, path = critical_path(stations, r, statistic, batch, level)
        if latency <= bound_s or not math.isfinite(latency):
            return r
        task = 0.0 if batch is None else (len(path) * batch.per_hop + batch.waited) * slope  # O14
        gains = {
            name: station_latency(stations[name], r[name], statistic)
            - station_latency(stations[name], r[name] + 1, statistic)
            - task
            for name in path
            if r[name] < stations[name].high
        }
        best = max(gains, key=lambda name: gains[name], default=None)
        if best is None or gains[best] <= 0:
            return r  # no replica on the path lowers the latency any more (O14)
        r[best] += 1  # O7


def levels(stations: Mapping[str, Station]) -> list[float]:
    """O14's cases: every utilisation u_j(r) below 1 within the pools, then the capped line
    (level 1: no bound on u)."""
    found = {s.utilization(r) for s in stations.values() for r in range(max(1, s.low), s.high + 1)}
    return [*sorted(v for v in found if v < 1), 1.0]


def choose_replicas(
    stations: Mapping[str, Station],
    bound_s: float,
    statistic: Statistic,
    batch: BatchModel | None = None,
) -> dict[str, int]:
    """Step 5: the fewest replicas whose critical path keeps L ≤ bound (O6, O7); with a batch
    time that depends on the counts, the fewest over O14's cases (ties: the least latency).
    When none keeps it, the case reaching the least latency."""
    if batch is None or batch.measured_s is not None:
        chosen = greedy(stations, bound_s, statistic, batch)
        assert chosen is not None  # without a level every start exists
        return chosen
    options = [r for v in levels(stations) if (r := greedy(stations, bound_s, statistic, batch, v))]

    def rank(r: dict[str, int]) -> tuple[bool, int, float]:
        latency = critical_path(stations, r, statistic, batch)[0]
        kept = latency <= bound_s
        return (not kept, sum(r.values()) if kept else 0, latency)

    return min(options, key=rank)
