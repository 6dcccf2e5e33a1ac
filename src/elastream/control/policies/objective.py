"""`objective`: the fewest replicas whose predicted end-to-end latency keeps the run's latency
objective (p99 or mean), planned on the forecast arrival rates and the queues left behind.

Derivation (equation numbers O1-O12 are docs/policies.md's, section "objective"). Per interval t,
for operator i with r replicas:

1. Rates. ρ_i = μ_i / busy_i is one replica's true rate (DS2; `flow.true_rate`). Each source's
   rate x_p(t) = λ_p(t) / td joins its history; a forecaster of the modelling registry (Holt by
   default, `prediction.forecasting`) forecasts the next intervals (Caladrius IV-A). The rate
   planned over a lookahead of A seconds is the forecast's peak over it, never below what was
   just observed:  P_p(A) = max(x_p(t), max_{k ≤ ⌈A/td⌉} F_p(t + k))                      (O1)
   with F the upper edge of the forecast's prediction interval at `level` (0.98; or the
   point forecast with `bound: point`): the plan covers the rate's forecast error.
   The rates follow the operators through the observed selectivities s_{p,i} = λ^p_i / μ_p
   (PSPS Eq. 2c; Caladrius Eq. 12 below saturation), with every upstream queue spread over
   the bound B of the objective (its events must leave within B):
       λ̂_i = Σ_{p ∈ pred(i)} s_{p,i}·(λ̂_p + q_p / B),    λ̂_source = β·P_source(A)         (O2)
   β ≥ 1 is the burst factor of step 7 (O8).
2. The queue when the change acts. A replica change takes `actuation_s` = a to act; until then
   the r_i(t) replicas keep serving, so the queue the new count inherits is
       q'_i = max(0, q_i + (λ̂_i − r_i(t)·ρ_i)·a)                                             (O3)
3. Latency of operator i with r replicas (the replicas share its queue, an M/M/r server,
   `prediction.queueing`): the last event already queued leaves after the queue drains,
   q'_i / (r·ρ_i); a new event then waits W_i(r) at rate λ̂_i and is served in 1/ρ_i:
       L_i(r) = q'_i / (r·ρ_i) + W_i(r) + 1/ρ_i   (W stationary: ∞ when λ̂_i ≥ r·ρ_i; O11)   (O4)
   W is the Erlang-C mean wait C(r, λ̂/ρ) / (rρ − λ̂) for a mean objective, and for a p99
   objective the 0.99-quantile of the M/M/r wait, whose tail is P(W > w) = C·e^{−(rρ−λ̂)w}:
       W^{p}_i(r) = max(0, ln(C / (1 − p)) / (r·ρ_i − λ̂_i))                                   (O5)
   These are stationary: near or above saturation they grow without bound, but the count holds
   only until the next decision acts, T = td + a. Over T a queue that starts empty holds at most
   the fluid backlog (λ̂ − c)⁺·T plus its fluctuation; with the net input as a Brownian motion of
   variance σ² = λ̂ + c per second (Poisson arrivals, exponential service), the reflection
   principle P(sup_{s ≤ T} B_s > x) = 2·Φ̄(x / σ√T) puts its p99 at z·σ√T, z = Φ⁻¹(0.995), and
   its mean at √(2/π)·σ√T. An event behind it waits that queue over c = r·ρ_i, and the wait used
   is the smaller of the two:
       W_i(r) = min(W^{stat}_i(r), ((λ̂_i − c)⁺·T + z·√((λ̂_i + c)·T)) / c)                    (O11)
   On a shared machine each replica also lengthens the operator's micro-batches (Spark: one
   task per replica on the same cores). Its batch time d_i = td / n_i (n_i the batches its
   busiest replica took part in) is fitted as d_i = a_i + b·r_i, one intercept per operator and
   a common slope b ≥ 0 (least squares over the last `batch_window` points), and an event sits
   through k batches (the one running when it arrives and its own: k = 2 at the p99, 1.5 on
   average), so L_i gains
       g·(r − 1),   g = k·b  (or the configured `replica_cost_s`)                             (O12)
4. End to end: a path's latency is the sum of its operators' (an upper bound for the p99), and
   the pipeline's is its critical path's (Caladrius IV-B3), plus a fixed engine overhead h:
       L(r) = h + max_{paths π} Σ_{i ∈ π} L_i(r_i)                                           (O6)
5. Choice. Each L_i is decreasing and convex in r (Erlang-C delay is convex in the servers), so
   the fewest replicas with L(r) ≤ B are found greedily: start every operator at the smallest
   stable count within its pool that keeps its own bound (if the objective names one), then
   add one replica at a time on the critical path where it cuts the most latency,
       i* = argmax_{i ∈ π*, r_i < max_i} L_i(r_i) − L_i(r_i + 1),                            (O7)
   until L(r) ≤ B, the path is at its pools' limits, or no replica on it lowers L (O12). For
   one path this is the optimum of a separable convex allocation; on a DAG it is the greedy on
   the current critical path (the property test checks it against brute force).
   When no count in the pools keeps B (a backlog too large to drain within B, or a rate beyond
   the pools) the choice is the fastest recovery: the smallest stretch k ≥ 1 (bisected on a log
   scale up to 64) for which some count keeps L ≤ k·B with the queues of O2 spread over k·B,
   and its fewest replicas; beyond the pools at every k, the greedy run to its end (the least
   latency it reaches: pools full on the path unless a replica's cost g outweighs its gain):
       k* = min{k ≥ 1 : min_r L_k(r) ≤ k·B}                                                   (O10)
6. Scale out early, scale in late. Scale-ups use the lookahead A = td + a (the forecast rise
   before the next decision has acted is provisioned now, O1). r_in solves step 5 with
   P(A_in) over the longer horizon A_in and the bound (1 − m)·B (margin m). A scale-up goes
   at once to max(r_up, r_in) (one change, not several); a count below the current one is
   taken only as far as the objective also holds with the margin over A_in:
   max(r_up, min(r(t), r_in)). Before the forecaster has `min_history` intervals nothing is
   known of the horizon, so no count goes down.
7. Calibration. The model assumes Poisson arrivals at the interval's mean rate; arrivals
   burstier within an interval show as a measured latency above the model's. In an interval
   whose replica counts did not change, the model is inverted on the measured latency ℓ(t)
   (as Caladrius Eq. 13 inverts Eq. 12):
       β(t) = min{β ∈ [1, β_max] : L(r(t); β·x(t), q(t − 1)) ≥ ℓ(t)}                         (O8)
   and the plan multiplies the source rates by the largest β of the last `burst_window`
   intervals. A measured latency within the resolution ε (`resolution_s`: the simulator's step)
   of L(r(t); x(t)) is explained as it is (β = 1): otherwise a few ms of rounding would read as
   the largest burst whenever nothing queues (β is the factor the model needs to add latency).

No guard is needed for the scale-in (step 6 is the hysteresis); the guard layer still clamps to
the pools. The per-interval verdict of a run against its objective is in `model.objective`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

from pydantic import Field, model_validator

from elastream.base.settings import Settings
from elastream.control.flow import FlowState, propagate, source_rates, true_rate, update_flow
from elastream.control.policy import POLICIES, Decision, Policy
from elastream.model.objective import Objective, Statistic, interval_latency_ms
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.model.snapshot import Snapshot
from elastream.prediction.forecasting import Series, forecast, get_forecaster
from elastream.prediction.queueing import erlang_c

P99 = 0.99
Z_P99_SUP = NormalDist().inv_cdf(1 - (1 - P99) / 2)  # O11: p99 of a Brownian path's maximum
BATCHES_PER_PASSAGE = {"p99": 2.0, "mean": 1.5}  # O12: k, batches an event sits through
MEAN_SUP = math.sqrt(2 / math.pi)  # O11: mean of a standard Brownian path's maximum over [0, 1]
MAX_STRETCH = 64.0  # O10: the largest stretch k of the bound tried before filling the pools
STRETCH_STEPS = 12  # O10: bisection steps on k (k found within a factor 64^(1/4096))


class ObjectiveConfig(Settings):
    """Options of the objective policy."""

    objective: Objective | None = Field(
        None, description="the latency objective (default: the run's `objective`)"
    )
    forecaster: str = Field("holt", description="forecast model of the modelling registry")
    forecaster_params: dict[str, Any] = Field(
        default_factory=dict, description="the forecaster's own parameters (docs/modeling.md)"
    )
    bound: Literal["upper", "point"] = Field(
        "upper", description="plan for the prediction interval's upper edge, or the point (O1)"
    )
    level: float = Field(
        0.98, gt=0, lt=1, description="coverage of the forecast's prediction interval (O1)"
    )
    history_s: float = Field(600.0, gt=0, description="seconds of source-rate history fitted")
    min_history: int = Field(4, ge=2, description="intervals before forecasting (before: x_p(t))")
    actuation_s: float = Field(
        0.0, ge=0, description="a: time a replica change takes to act, s (O3, lookahead td + a)"
    )
    scale_in_horizon_s: float | None = Field(
        None, gt=0, description="A_in: a scale-in must hold over this forecast horizon (None: 3·td)"
    )
    margin: float = Field(
        0.3, ge=0, lt=1, description="m: a scale-in must keep the latency under (1 − m)·bound"
    )
    overhead_s: float = Field(
        0.0, ge=0, description="h: fixed latency of every path (engine batching, network), s"
    )
    burst_window: int = Field(
        10, ge=1, description="intervals over which the largest burst factor β is kept (O8)"
    )
    burst_after_change: bool = Field(
        False,
        description="also calibrate β on an interval whose replica counts had just changed "
        "(its latency then shows the change, not the arrivals)",
    )
    burst_max: float = Field(
        4.0, ge=1, description="largest burst factor β the calibration may find (O8)"
    )
    resolution_s: float = Field(
        0.1,
        ge=0,
        description="ε: a measured latency within this of the model's is explained (β = 1, O8): "
        "the measurement's resolution (the simulator's step), not a burst",
    )
    transient: bool = Field(
        True,
        description="cap the stationary wait by the wait a queue builds within the next td + a "
        "(O11); off: a count below the planned rate is never taken",
    )
    replica_cost_s: float | None = Field(
        None,
        ge=0,
        description="g: latency each replica beyond the first adds to an operator's passage, s "
        "(O12); None: learned from the snapshots' micro-batches (0 when they carry none)",
    )
    batch_window: int = Field(
        60, ge=2, description="(operator, replicas, batch time) points the O12 fit keeps"
    )
    et_default_s: float = Field(
        DEFAULT_ET_S, gt=0, description="1 / ρ before any rate is measured, s"
    )

    @model_validator(mode="after")
    def _needs_objective(self) -> ObjectiveConfig:
        if self.objective is None:
            raise ValueError(
                "objective: missing; set `objective: {latency_p99_s: ...}` in the run settings"
            )
        get_forecaster(self.forecaster)  # an unknown model is named at once
        return self

    @property
    def target(self) -> Objective:
        assert self.objective is not None  # the validator guarantees it
        return self.objective


@dataclass(frozen=True, slots=True)
class ObjectiveState:
    flow: FlowState = FlowState()
    history: tuple[tuple[str, tuple[float, ...]], ...] = field(default=())
    queues: tuple[tuple[str, int], ...] = field(default=())  # q_i at the end of t − 1
    bursts: tuple[float, ...] = field(default=())  # β of the last intervals (O8)
    replicas: tuple[tuple[str, int], ...] = field(default=())  # r_i during t − 1
    batches: tuple[tuple[str, int, float], ...] = field(default=())  # (i, r_i, d_i) of O12


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
    replica_cost_s: float = 0.0  # g of O12: latency each replica beyond the first adds


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
    return s.queue / (r * s.rho) + wait + 1.0 / s.rho + s.replica_cost_s * (r - 1)  # O12


def critical_path(
    stations: Mapping[str, Station], r: Mapping[str, int], statistic: Statistic
) -> tuple[float, list[str]]:
    """max over source-to-sink paths of Σ L_i (O6 without h), and that path's operators.
    `stations` is in topological order."""
    best: dict[str, tuple[float, list[str]]] = {}
    for name, s in stations.items():
        upstream = max((best[p] for p in s.preds if p in best), key=lambda b: b[0], default=None)
        base, path = upstream if upstream is not None else (0.0, [])
        best[name] = (base + station_latency(s, r[name], statistic), [*path, name])
    return max(best.values(), key=lambda b: b[0], default=(0.0, []))


def smallest_start(s: Station, statistic: Statistic) -> int:
    """The smallest count in the pool that is stable and keeps the operator's own bound."""
    for r in range(s.low, s.high + 1):
        latency = station_latency(s, r, statistic)
        if math.isfinite(latency) and (s.own_bound_s is None or latency <= s.own_bound_s):
            return r
    return s.high


def choose_replicas(
    stations: Mapping[str, Station], bound_s: float, statistic: Statistic
) -> dict[str, int]:
    """Step 5: the fewest replicas whose critical path keeps L ≤ bound (O6, O7)."""
    r = {name: smallest_start(s, statistic) for name, s in stations.items()}
    while True:
        latency, path = critical_path(stations, r, statistic)
        if latency <= bound_s or not math.isfinite(latency):
            return r
        gains = {
            name: station_latency(stations[name], r[name], statistic)
            - station_latency(stations[name], r[name] + 1, statistic)
            for name in path
            if r[name] < stations[name].high
        }
        best = max(gains, key=lambda name: gains[name], default=None)
        if best is None or gains[best] <= 0:
            return r  # no replica on the path lowers the latency any more (O12)
        r[best] += 1  # O7


def plan(
    snapshot: Snapshot,
    flow: FlowState,
    rates: Mapping[str, float],
    config: ObjectiveConfig,
    bound_s: float,
    burst: float,
    replica_cost_s: float = 0.0,
) -> tuple[dict[str, int], dict[str, Station], float]:
    """Step 5 with its fallback (O10): the fewest replicas keeping L ≤ `bound_s`, with the
    stations it was planned on and the stretch k (1: the objective is kept). When no count in
    the pools keeps it (a backlog too large to drain within B, or a rate beyond the pools), the
    fewest replicas that keep the smallest stretched bound k·`bound_s` with the queues spread
    over k·B: the fastest recovery the pools allow. Beyond the pools at any k: the least latency
    the greedy reaches (bound 0)."""
    statistic = config.target.statistic

    def attempt(k: float) -> tuple[dict[str, int], dict[str, Station], bool]:
        stations = stations_for(
            snapshot,
            flow,
            rates,
            config,
            burst=burst,
            drain_s=k * config.target.bound_s,
            replica_cost_s=replica_cost_s,
        )
        r = choose_replicas(stations, k * bound_s, statistic)
        return r, stations, critical_path(stations, r, statistic)[0] <= k * bound_s

    r, stations, kept = attempt(1.0)
    if kept:
        return r, stations, 1.0
    low, high = 1.0, MAX_STRETCH
    best, _, kept = attempt(high)
    if not kept:  # beyond the pools at every k: the least latency the greedy reaches (O7, O12)
        return choose_replicas(stations, 0.0, statistic), stations, math.inf
    for _ in range(STRETCH_STEPS):  # O10: bisect k on a log scale (keeping L is monotone in k)
        mid = math.sqrt(low * high)
        r_mid, _, kept = attempt(mid)
        low, high = (low, mid) if kept else (mid, high)
        best = r_mid if kept else best
    return best, stations, high


def planned_rates(
    history: Mapping[str, tuple[float, ...]], td: float, config: ObjectiveConfig, *leads: float
) -> list[dict[str, float]]:
    """P_p(A) of O1 for every lookahead A in `leads`, from one forecast per source."""
    steps = [max(1, math.ceil(a / td - 1e-9)) for a in leads]
    out: list[dict[str, float]] = [{} for _ in leads]
    for name, values in history.items():
        observed = values[-1]
        if len(values) < config.min_history:
            for plan in out:
                plan[name] = observed
            continue
        series = Series(list(values), step_s=td)
        params = {"level": config.level, **config.forecaster_params}
        predicted = forecast(series, config.forecaster, max(steps), params)
        values = predicted.upper if config.bound == "upper" else predicted.point
        for plan, k in zip(out, steps, strict=True):
            plan[name] = max(observed, float(max(values[:k])))
    return out


def stations_for(
    snapshot: Snapshot,
    flow: FlowState,
    sources: Mapping[str, float],
    config: ObjectiveConfig,
    *,
    burst: float = 1.0,
    queues: Mapping[str, int] | None = None,
    actuation_s: float | None = None,
    drain_s: float | None = None,
    replica_cost_s: float = 0.0,
) -> dict[str, Station]:
    """Every operator's λ̂ (O2, the source rates times the burst factor β of O8, upstream
    queues spread over `drain_s`, by default the bound B) and inherited queue (O3), in
    topological order; `queues` replaces the snapshot's (O8 uses q(t − 1))."""
    objective = config.target
    queue = {
        o.name: (o.queue if queues is None else queues.get(o.name, 0)) for o in snapshot.operators
    }
    horizon = objective.bound_s if drain_s is None else drain_s
    drain = {name: q / horizon for name, q in queue.items()}
    scaled = {name: rate * burst for name, rate in sources.items()}
    demand = propagate(snapshot, flow, scaled, drain)  # λ̂_i + q_i / B, O2
    act = config.actuation_s if actuation_s is None else actuation_s
    operators = {o.name for o in snapshot.operators}
    stations: dict[str, Station] = {}
    for o in snapshot.operators:
        rho = true_rate(flow, o.name, config.et_default_s)
        arrival = max(0.0, demand[o.name] - drain[o.name])
        inherited = max(0.0, queue[o.name] + (arrival - o.replicas * rho) * act)  # O3
        own = objective.operators.get(o.name)
        stations[o.name] = Station(
            o.name,
            tuple(p for p, _ in o.received_from if p in operators),
            arrival,
            inherited,
            rho,
            o.min_replicas,
            o.max_replicas,
            None if own is None else own.bound_s,
            (snapshot.td / max(1, snapshot.intervals) + act) if config.transient else 0.0,
            replica_cost_s,
        )
    return stations


def batch_points(snapshot: Snapshot) -> list[tuple[str, int, float]]:
    """(i, r_i, d_i) of the interval for O12: d_i = td / n_i, operator i's mean micro-batch time,
    n_i the most micro-batches one of its replicas took part in (none without batch counts)."""
    td = snapshot.td / max(1, snapshot.intervals)
    points = []
    for o in snapshot.operators:
        batches = max(o.replica_batches, default=0)
        if batches > 0 and o.processed > 0:
            points.append((o.name, o.replicas, td / batches))
    return points


def batch_growth_s(points: Sequence[tuple[str, int, float]]) -> float:
    """b of O12: the slope of the batch time in the replica count, least squares with one
    intercept per operator (d_i = a_i + b·r_i); 0 while no count has varied or when the slope
    comes out negative (more replicas never make the model faster than it is)."""
    by_operator: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for name, r, d in points:
        by_operator[name].append((r, d))
    num = den = 0.0
    for pairs in by_operator.values():
        r_mean = sum(r for r, _ in pairs) / len(pairs)
        d_mean = sum(d for _, d in pairs) / len(pairs)
        num += sum((r - r_mean) * (d - d_mean) for r, d in pairs)
        den += sum((r - r_mean) ** 2 for r, _ in pairs)
    return max(0.0, num / den) if den > 0 else 0.0


def replica_cost(
    config: ObjectiveConfig, points: Sequence[tuple[str, int, float]], statistic: Statistic
) -> float:
    """g of O12: the configured value, else k·b with k the batches an event passes through (the
    one running when it arrives and its own: 2 at the p99, 1.5 on average)."""
    if config.replica_cost_s is not None:
        return config.replica_cost_s
    return BATCHES_PER_PASSAGE[statistic] * batch_growth_s(points)


def burst_factor(
    snapshot: Snapshot,
    flow: FlowState,
    previous: Mapping[str, int],
    config: ObjectiveConfig,
    replica_cost_s: float = 0.0,
) -> float | None:
    """β(t) of O8: the smallest factor on the interval's observed rates for which the model,
    with the replicas that ran and the queues they started from, predicts the latency that was
    measured (the model inverted, as Caladrius Eq. 13 inverts Eq. 12). None: nothing measured."""
    objective = config.target
    measured = interval_latency_ms(snapshot, objective.statistic)
    if measured is None:
        return None
    target = measured / 1000.0 - config.overhead_s
    ran = snapshot.replicas()
    observed = source_rates(snapshot)

    def model(beta: float) -> float:
        stations = stations_for(
            snapshot,
            flow,
            observed,
            config,
            burst=beta,
            queues=previous,
            actuation_s=0.0,
            replica_cost_s=replica_cost_s,
        )
        return critical_path(stations, ran, objective.statistic)[0]

    low, high = 1.0, config.burst_max
    if model(low) + config.resolution_s >= target:
        return low
    if model(high) < target:
        return high
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (low, mid) if model(mid) >= target else (mid, high)
    return high


def decide(
    snapshot: Snapshot, state: ObjectiveState, config: ObjectiveConfig
) -> tuple[Decision, ObjectiveState]:
    flow = update_flow(snapshot, state.flow)
    keep = max(config.min_history, math.ceil(config.history_s / snapshot.td))
    history = dict(state.history)
    for name, x in source_rates(snapshot).items():
        history[name] = (*history.get(name, ()), x)[-keep:]
    changed = dict(state.replicas) != snapshot.replicas()
    points = (*state.batches, *batch_points(snapshot))[-config.batch_window :]
    g = replica_cost(config, points, config.target.statistic)
    calibrate = state.queues and (config.burst_after_change or not changed)
    beta_t = burst_factor(snapshot, flow, dict(state.queues), config, g) if calibrate else None
    bursts = state.bursts if beta_t is None else (*state.bursts, beta_t)[-config.burst_window :]
    beta = max(bursts, default=1.0)  # O8: plan for the largest recent burst
    td = snapshot.td / max(1, snapshot.intervals)
    lead_in = config.scale_in_horizon_s or 3 * td
    up_rates, in_rates = planned_rates(history, td, config, td + config.actuation_s, lead_in)
    objective = config.target
    bound = objective.bound_s - config.overhead_s
    r_up, up_stations, stretch = plan(snapshot, flow, up_rates, config, bound, beta, g)
    current = snapshot.replicas()
    r_in = r_up
    if any(r_up[name] != current[name] for name in r_up):
        r_in, _, _ = plan(snapshot, flow, in_rates, config, (1 - config.margin) * bound, beta, g)
    forecasting = all(len(values) >= config.min_history for values in history.values())
    targets = {
        name: step_six(current[name], r_up[name], r_in[name] if forecasting else current[name])
        for name in r_up
    }
    predicted, _ = critical_path(up_stations, targets, objective.statistic)
    recovery = "" if stretch == 1.0 else f" recovery k={stretch:.2f}"
    reasons = {
        name: f"λ̂={s.arrival:.1f}/s β={beta:.2f} q'={s.queue:.0f} ρ={s.rho:.1f}/s "
        f"L={station_latency(s, targets[name], objective.statistic):.2f}s "
        f"path={predicted + config.overhead_s:.2f}s/{objective.bound_s:g}s g={g:.3f}s{recovery}"
        for name, s in up_stations.items()
    }
    queues = tuple((o.name, o.queue) for o in snapshot.operators)
    new_state = ObjectiveState(
        flow, tuple(history.items()), queues, bursts, tuple(current.items()), tuple(points)
    )
    return Decision.of(targets, reasons), new_state


def step_six(current: int, up: int, hold: int) -> int:
    """Step 6: a scale-up goes at once to what also holds over the scale-in horizon with the
    margin (one change instead of several); a scale-in goes no lower than that."""
    if up > current:
        return max(up, hold)
    return max(up, min(current, hold))


POLICY = POLICIES.register(
    "objective",
    Policy(
        "objective",
        decide,
        ObjectiveConfig,
        ObjectiveState(),
        "fewest replicas whose predicted latency keeps the run's latency objective",
    ),
)
