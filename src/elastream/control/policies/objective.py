"""`objective`: the fewest replicas whose predicted end-to-end latency keeps the run's latency
objective; its derivation, equations O1-O19 and measured results are in docs/objective.md."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from elastream.control.flow import (
    FlowState,
    propagate,
    rate_history,
    source_rates,
    true_rate,
    update_flow,
)
from elastream.control.policies.objective_config import ObjectiveConfig, ObjectiveState
from elastream.control.policies.objective_model import (
    BATCHES_WAITED,
    MAX_STRETCH,
    STRETCH_STEPS,
    BatchModel,
    Station,
    batch_period_s,
    choose_replicas,
    critical_path,
    station_latency,
)
from elastream.control.policy import POLICIES, Decision, Policy, demand_reason
from elastream.model.objective import Objective, Statistic, interval_latency_ms
from elastream.model.snapshot import Snapshot
from elastream.prediction.forecasting import forecast
from elastream.prediction.series import Series

UTILIZATION_FIT_MAX = 0.9  # O13: ū, the largest measured utilisation the fit divides out
QUEUES_KEPT = 8  # O8: intervals of queues kept for the events that arrived before t − 1


def plan(
    snapshot: Snapshot,
    flow: FlowState,
    rates: Mapping[str, float],
    config: ObjectiveConfig,
    bound_s: float,
    burst: float,
    batch: BatchModel | None = None,
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
            snapshot, flow, rates, config, burst=burst, drain_s=k * config.target.bound_s
        )
        r = choose_replicas(stations, k * bound_s, statistic, batch)
        return r, stations, critical_path(stations, r, statistic, batch)[0] <= k * bound_s

    r, stations, kept = attempt(1.0)
    if kept:
        return r, stations, 1.0
    low, high = 1.0, MAX_STRETCH
    best, _, kept = attempt(high)
    if not kept:  # beyond the pools at every k: the least latency the greedy reaches (O7, O14)
        return choose_replicas(stations, 0.0, statistic, batch), stations, math.inf
    for _ in range(STRETCH_STEPS):  # O10: bisect k on a log scale (keeping L is monotone in k)
        mid = math.sqrt(low * high)
        r_mid, _, kept = attempt(mid)
        low, high = (low, mid) if kept else (mid, high)
        best = r_mid if kept else best
    return best, stations, high


Bound = Literal["errors", "upper", "point"]


def forecast_bound(td: float, config: ObjectiveConfig) -> Bound:
    """O17: the forecast O1 plans on. A rise the point forecast missed queues for at most
    T = td + a before the next decision sizes for it; when T ≤ (1 − m)·(B − h) that wait fits
    in the objective with the margin, so the point forecast; otherwise the point widened by
    its measured errors (O18)."""
    if config.bound != "auto":
        return config.bound
    room = (1 - config.margin) * (config.target.bound_s - config.overhead_s)
    return "point" if td + config.actuation_s <= room else "errors"


def error_scales(snapshot: Snapshot, flow: FlowState, config: ObjectiveConfig) -> dict[str, float]:
    """c_p of O18: the rate of source p that keeps one replica of its slowest operator busy,
    min_i ρ_i / s_{p→i}, with s_{p→i} the share of p's events that reach operator i."""
    scales = {}
    for name, _ in snapshot.sources:
        reach = propagate(snapshot, flow, {name: 1.0})
        rates = [
            true_rate(flow, op, config.et_default_s) / share
            for op, share in reach.items()
            if share > 0
        ]
        scales[name] = min(rates, default=1.0 / config.et_default_s)
    return scales


def log_error(observed: float, predicted: float, scale: float) -> float:
    """e_p(t) of O18: ln((x + c) / (F + c)), the forecast's error relative to the forecast
    plus one replica's worth of the source's rate."""
    return math.log((observed + scale) / (max(predicted, 0.0) + scale))


def error_quantile(errors: Sequence[float], level: float) -> float:
    """Q_p of O18: the k-th largest measured error, k = ⌊(1 − level)·n⌋ (0: the largest), at
    least 0; 0 before any error is measured."""
    if not errors:
        return 0.0
    k = math.floor((1 - level) * len(errors))
    return max(0.0, sorted(errors, reverse=True)[k])


def widened(point: float, quantile: float, scale: float, ceiling: float = math.inf) -> float:
    """O18's planned rate: (F + c)·e^Q − c, the point forecast raised by the error quantile,
    no higher than the ceiling X + c of O19 unless the point itself is."""
    raised = (max(point, 0.0) + scale) * math.exp(quantile) - scale
    return max(point, min(raised, ceiling))


def updated_errors(
    state: ObjectiveState, snapshot: Snapshot, scales: Mapping[str, float], keep: int
) -> dict[str, tuple[float, ...]]:
    """Each source's last `keep` one-step errors e_p of O18, with this interval's: the rate
    just observed against the point forecast made for it one interval before."""
    errors = dict(state.errors)
    predicted = dict(state.forecasts)
    for name, x in source_rates(snapshot).items():
        if name in predicted:
            e = log_error(x, predicted[name], scales[name])
            errors[name] = (*errors.get(name, ()), e)[-keep:]
    return errors


def forecast_rates(
    history: Mapping[str, tuple[float, ...]],
    td: float,
    config: ObjectiveConfig,
    leads: Sequence[float],
    errors: Mapping[str, Sequence[float]] | None = None,
    scales: Mapping[str, float] | None = None,
) -> tuple[list[dict[str, float]], dict[str, float]]:
    """P_p(A) of O1 for every lookahead A in `leads` from one forecast per source (on the
    point, the upper edge or the point widened by its measured errors, as O17 says), and each
    source's point forecast for the next interval (O18 measures its error there)."""
    bound = forecast_bound(td, config)
    steps = [max(1, math.ceil(a / td - 1e-9)) for a in leads]
    out: list[dict[str, float]] = [{} for _ in leads]
    next_point: dict[str, float] = {}
    for name, values in history.items():
        observed = values[-1]
        if len(values) < config.min_history:
            for plan in out:
                plan[name] = observed
            continue
        series = Series(list(values), step_s=td)
        params = {"level": config.level, **config.forecaster_params}
        predicted = forecast(series, config.forecaster, max(steps), params)
        next_point[name] = float(predicted.point[0])
        planned = [float(v) for v in (predicted.upper if bound == "upper" else predicted.point)]
        if bound == "errors":
            scale = (scales or {}).get(name, 1.0 / config.et_default_s)
            quantile = error_quantile((errors or {}).get(name, ()), config.error_level)
            ceiling = max(values) + scale  # O19: X_p + c_p
            planned = [widened(v, quantile, scale, ceiling) for v in planned]
        for plan, k in zip(out, steps, strict=True):
            plan[name] = max(observed, max(planned[:k]))
    return out, next_point


def planned_rates(
    history: Mapping[str, tuple[float, ...]], td: float, config: ObjectiveConfig, *leads: float
) -> list[dict[str, float]]:
    """P_p(A) of O1 for every lookahead A in `leads` (`forecast_rates` without errors)."""
    return forecast_rates(history, td, config, leads)[0]


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
            (snapshot.interval_s / max(1, snapshot.intervals) + act) if config.transient else 0.0,
        )
    return stations


def measured_batch_s(snapshot: Snapshot) -> float | None:
    """D(t) of O13: td / n(t), n(t) the most micro-batches one replica of any operator took part
    in (the pipeline's one batch loop); None when the snapshot counts no batches."""
    batches = max((n for o in snapshot.operators for n in o.replica_batches), default=0)
    return snapshot.interval_s / batches if batches > 0 else None


def busiest_utilisation(snapshot: Snapshot) -> float:
    """max_j u_j(t) of O13, u_j(t) = busy_j / (r_j·td) over the operators that ran (0: none)."""
    td = snapshot.interval_s
    return max((o.busy_s / (o.replicas * td) for o in snapshot.operators if o.replicas), default=0)


def batch_point(snapshot: Snapshot) -> tuple[int, float] | None:
    """(R(t), o(t)) of O13: the tasks that ran and the batch time less its slowest share's
    work, D(t)·(1 − min(max_j u_j(t), ū))."""
    period = measured_batch_s(snapshot)
    if period is None:
        return None
    tasks = sum(o.replicas for o in snapshot.operators)
    return tasks, period * (1 - min(busiest_utilisation(snapshot), UTILIZATION_FIT_MAX))


def fit_batch(
    points: Sequence[tuple[int, float]],
    per_task_s: float | None = None,
    prior_s: float = 0.0,
    weight: float = 0.0,
) -> tuple[float, float] | None:
    """(a, b) of O13: least squares of o = a + b·R over the points with a prior of weight w on
    b around b₀ (b = b₀ while R has not varied), b ≥ 0 and a ≥ 0; a configured b is kept and
    only a fitted. None without points."""
    if not points:
        return None
    r_mean = sum(r for r, _ in points) / len(points)
    o_mean = sum(o for _, o in points) / len(points)
    if per_task_s is None:
        den = sum((r - r_mean) ** 2 for r, _ in points) + weight
        num = sum((r - r_mean) * (o - o_mean) for r, o in points) + weight * prior_s
        per_task_s = max(0.0, num / den) if den > 0 else 0.0
    return max(0.0, o_mean - per_task_s * r_mean), per_task_s


def batch_model(
    config: ObjectiveConfig, points: Sequence[tuple[int, float]], statistic: Statistic
) -> BatchModel | None:
    """O12 with O13's fit (None when no snapshot has counted batches: no batch term)."""
    fitted = fit_batch(
        points, config.batch_per_task_s, config.batch_prior_s, config.batch_prior_weight
    )
    if fitted is None:
        return None
    waited = BATCHES_WAITED[statistic]
    return BatchModel(fitted[0], fitted[1], config.batch_cap_s, waited, None, config.hop_batches)


@dataclass(frozen=True, slots=True)
class Measured:
    """What O8 and O15 invert the model on: the interval's measured latency (less h), and the
    rates and queues of the intervals its events arrived in."""

    target_s: float
    rates: dict[str, float]
    queues: dict[str, int]


def measured_for(
    snapshot: Snapshot,
    previous: Sequence[Mapping[str, int]],
    config: ObjectiveConfig,
    history: Mapping[str, tuple[float, ...]] | None = None,
) -> Measured | None:
    """The interval's measured latency ℓ(t) − h with the conditions its events met: they arrived
    as far back as n − 1 whole intervals, n = ⌊ℓ(t) / td⌋ + 1, so each source's highest rate
    over the last n intervals (from `history`, else the interval's own) and each operator's
    largest queue at their starts (`previous`: q at the end of t − n … t − 1, most recent last).
    None: nothing measured."""
    measured = interval_latency_ms(snapshot, config.target.statistic)
    if measured is None:
        return None
    observed = source_rates(snapshot)
    td = snapshot.interval_s / max(1, snapshot.intervals)
    back = math.floor(measured / 1000.0 / td) + 1
    if history is not None:
        observed = {name: max(history.get(name, (x,))[-back:]) for name, x in observed.items()}
    found = previous[-back:]
    ran = snapshot.replicas()
    queues = {name: max(q.get(name, 0) for q in found) for name in ran} if found else {}
    return Measured(measured / 1000.0 - config.overhead_s, observed, queues)


def burst_factor(
    snapshot: Snapshot,
    flow: FlowState,
    previous: Sequence[Mapping[str, int]],
    config: ObjectiveConfig,
    history: Mapping[str, tuple[float, ...]] | None = None,
) -> float | None:
    """β(t) of O8: the smallest factor on the rates the interval's measured events arrived at
    for which the model, with the replicas that ran and the queues those events found
    (`measured_for`), predicts the latency that was measured (the model inverted, as Caladrius
    Eq. 13 inverts Eq. 12); 1 when that latency is below f·(B − h) (O16). None: nothing
    measured."""
    seen = measured_for(snapshot, previous, config, history)
    if seen is None:
        return None
    ran = snapshot.replicas()

    def model(beta: float) -> float:
        stations = stations_for(
            snapshot, flow, seen.rates, config, burst=beta, queues=seen.queues, actuation_s=0.0
        )
        return critical_path(stations, ran, config.target.statistic)[0]

    low, high = 1.0, config.burst_max
    if seen.target_s < config.floor * (config.target.bound_s - config.overhead_s):
        return low  # O16: a latency this far below the bound calibrates nothing
    if model(low) + config.resolution_s >= seen.target_s:
        return low
    if model(high) < seen.target_s:
        return high
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (low, mid) if model(mid) >= seen.target_s else (mid, high)
    return high


def batch_spread(
    snapshot: Snapshot,
    flow: FlowState,
    previous: Sequence[Mapping[str, int]],
    config: ObjectiveConfig,
    batch: BatchModel,
    history: Mapping[str, tuple[float, ...]] | None = None,
) -> float | None:
    """φ(t) of O15: on a micro-batch engine, the factor on the interval's measured batch time
    D(t) at which the model, with the replicas that ran and the rates and queues the measured
    events met, predicts the measured latency: what the batches' spread (a passage's longest
    batches against their mean) adds; at least 1, at most `burst_max`. None: nothing
    measured, or no batches counted."""
    period = measured_batch_s(snapshot)
    seen = measured_for(snapshot, previous, config, history)
    if period is None or seen is None:
        return None
    stations = stations_for(snapshot, flow, seen.rates, config, queues=seen.queues, actuation_s=0.0)
    fixed = replace(batch, measured_s=period, spread=1.0)
    total, path = critical_path(stations, snapshot.replicas(), config.target.statistic, fixed)
    batched = (len(path) * batch.per_hop + batch.waited) * period
    if batched <= 0:
        return None
    return min(config.burst_max, max(1.0, (seen.target_s - (total - batched)) / batched))


def decide(
    snapshot: Snapshot, state: ObjectiveState, config: ObjectiveConfig
) -> tuple[Decision, ObjectiveState]:
    flow = update_flow(snapshot, state.flow)
    history = rate_history(snapshot, dict(state.history), config.min_history, config.history_s)
    changed = dict(state.replicas) != snapshot.replicas()
    point = batch_point(snapshot)
    points = state.batches if point is None else (*state.batches, point)[-config.batch_window :]
    points = tuple(points)
    objective = config.target
    batch = batch_model(config, points, objective.statistic)
    calibrate = bool(state.queues) and (config.burst_after_change or not changed)
    previous = [dict(q) for q in state.queues]
    beta_t = phi_t = None
    if calibrate and batch is not None and measured_batch_s(snapshot) is not None:
        phi_t = batch_spread(snapshot, flow, previous, config, batch, history)  # O15
    elif calibrate:
        beta_t = burst_factor(snapshot, flow, previous, config, history)  # O8
    bursts = state.bursts if beta_t is None else (*state.bursts, beta_t)[-config.burst_window :]
    spreads = state.spreads if phi_t is None else (*state.spreads, phi_t)[-config.spread_window :]
    beta = max(bursts, default=1.0)  # O8: plan for the largest recent burst
    if batch is not None:  # O15: and for the largest recent spread of the batches
        batch = replace(batch, spread=max(spreads, default=1.0))
    td = snapshot.interval_s / max(1, snapshot.intervals)
    lead_in = config.scale_in_horizon_s or 3 * td
    scales = error_scales(snapshot, flow, config)
    keep = max(1, math.ceil(config.error_window_s / td))
    errors = updated_errors(state, snapshot, scales, keep)  # O18
    leads = (td + config.actuation_s, lead_in)
    (up_rates, in_rates), next_point = forecast_rates(history, td, config, leads, errors, scales)
    bound = objective.bound_s - config.overhead_s
    r_up, up_stations, stretch = plan(snapshot, flow, up_rates, config, bound, beta, batch)
    current = snapshot.replicas()
    r_in = r_up
    if any(r_up[name] != current[name] for name in r_up):
        r_in, _, _ = plan(
            snapshot, flow, in_rates, config, (1 - config.margin) * bound, beta, batch
        )
    forecasting = all(len(values) >= config.min_history for values in history.values())
    targets = {
        name: step_six(current[name], r_up[name], r_in[name] if forecasting else current[name])
        for name in r_up
    }
    predicted, _ = critical_path(up_stations, targets, objective.statistic, batch)
    reasons = decision_reasons(up_stations, targets, objective, config, batch, beta)
    for name in reasons:
        reasons[name] += f" path={predicted + config.overhead_s:.2f}s/{objective.bound_s:g}s"
        reasons[name] += f" F={forecast_bound(td, config)}"
        reasons[name] += "" if stretch == 1.0 else f" recovery k={stretch:.2f}"
    queues = (*state.queues, tuple((o.name, o.queue) for o in snapshot.operators))[-QUEUES_KEPT:]
    new_state = ObjectiveState(
        flow,
        tuple(history.items()),
        queues,
        bursts,
        spreads,
        tuple(current.items()),
        points,
        tuple(next_point.items()),
        tuple(errors.items()),
    )
    sentences = objective_reasons(up_stations, targets, objective, predicted + config.overhead_s)
    return Decision.of(targets, sentences, reasons), new_state


def objective_reasons(
    stations: Mapping[str, Station], targets: Mapping[str, int], objective: Objective, path: float
) -> dict[str, str]:
    """Each operator's decision in words: its expected input, what its replicas serve and the
    pipeline's predicted latency against the bound."""
    bound = f"latency {objective.statistic} {path:.2f} s predicted of {objective.bound_s:g} s"
    return {
        name: f"{demand_reason(s.arrival, targets[name], s.rho, round(s.queue))}; {bound}"
        for name, s in stations.items()
    }


def decision_reasons(
    stations: Mapping[str, Station],
    targets: Mapping[str, int],
    objective: Objective,
    config: ObjectiveConfig,
    batch: BatchModel | None,
    beta: float,
) -> dict[str, str]:
    """Per operator: what the plan saw (λ̂, β, q', ρ), its latency, and the batch time D."""
    period = (
        ""
        if batch is None
        else (
            f" D={batch_period_s(stations, targets, batch):.2f}s"
            f" (a={batch.base_s:.2f}s b={batch.per_task_s:.3f}s φ={batch.spread:.2f})"
        )
    )
    return {
        name: f"λ̂={s.arrival:.1f}/s β={beta:.2f} q'={s.queue:.0f} ρ={s.rho:.1f}/s "
        f"L={station_latency(s, targets[name], objective.statistic):.2f}s{period}"
        for name, s in stations.items()
    }


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
