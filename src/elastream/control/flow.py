"""Flow helpers shared by the rate-based policies: observed selectivities, true rates, and
target rates propagated through the pipeline in topological order."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from elastream.control.policy import Decision, ceil_eps, demand_reason
from elastream.model.snapshot import OperatorStats, Snapshot

Edge = tuple[str, str]


def update_selectivity(snapshot: Snapshot, edges: Mapping[Edge, float]) -> dict[Edge, float]:
    """s_{p,i} = λ^p_i(t) / μ_p(t) for every edge whose source processed something in t (PSPS
    Eq. 2c's θ^p_i, DS2's o_p / λ_p); the last known value elsewhere."""
    mu = dict(snapshot.sources) | {o.name: o.processed for o in snapshot.operators}
    updated = dict(edges)
    for o in snapshot.operators:
        for pred, received in o.received_from:
            if mu.get(pred, 0) > 0:
                updated[(pred, o.name)] = received / mu[pred]
    return updated


@dataclass(frozen=True, slots=True)
class FlowState:
    """What the rate-based policies remember between intervals: last known selectivities and
    true rates (used when an interval measured nothing)."""

    selectivity: tuple[tuple[Edge, float], ...] = field(default=())
    true_rate: tuple[tuple[str, float], ...] = field(default=())


def measured_true_rate(stats: OperatorStats) -> float | None:
    """ρ_i measured in this interval: processed per busy second, else 1 / et_i, else None."""
    if stats.processed > 0 and stats.busy_s > 0:
        return stats.processed / stats.busy_s
    if stats.service_time_s is not None and stats.service_time_s > 0:
        return 1.0 / stats.service_time_s
    return None


def source_rates(snapshot: Snapshot) -> dict[str, float]:
    """λ_p(t) / td for every source p: its output rate in events/s, its external backlog
    (files not yet read, Redis lag) counted as arriving within the next interval (arrival
    pressure: a source held back by a full queue still asks for capacity)."""
    return {name: n / snapshot.interval_s for name, n in snapshot.source_demand().items()}


def rate_history(
    snapshot: Snapshot,
    history: Mapping[str, tuple[float, ...]],
    min_history: int,
    history_s: float,
) -> dict[str, tuple[float, ...]]:
    """Each source's rate history (events/s, one value per interval) with this interval's
    `source_rates` appended, kept to its last max(min_history, ⌈history_s / td⌉) values: what
    the forecasting policies (proactive, objective) fit."""
    keep = max(min_history, math.ceil(history_s / snapshot.interval_s))
    updated = dict(history)
    for name, x in source_rates(snapshot).items():
        updated[name] = (*updated.get(name, ()), x)[-keep:]
    return updated


def update_flow(snapshot: Snapshot, state: FlowState) -> FlowState:
    """Refresh the selectivity of every edge whose source processed something, and every true
    rate measured in t; keep the last known values elsewhere."""
    edges = update_selectivity(snapshot, dict(state.selectivity))
    rates = dict(state.true_rate)
    for o in snapshot.operators:
        rho = measured_true_rate(o)
        if rho is not None:
            rates[o.name] = rho
    return FlowState(tuple(edges.items()), tuple(rates.items()))


def propagate(
    snapshot: Snapshot,
    state: FlowState,
    sources: Mapping[str, float],
    extra: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """D_i = Σ_p s_{p,i} · D_p + extra_i in topological order (`snapshot.operators` is sorted);
    a source's D is its entry in `sources`, events/s."""
    selectivity = dict(state.selectivity)
    extra = extra or {}
    demand: dict[str, float] = dict(sources)
    for o in snapshot.operators:
        inflow = sum(
            selectivity.get((pred, o.name), 1.0) * demand.get(pred, 0.0)
            for pred, _ in o.received_from
        )
        demand[o.name] = inflow + extra.get(o.name, 0.0)
    return {o.name: demand[o.name] for o in snapshot.operators}


def true_rate(state: FlowState, name: str, et_default_s: float) -> float:
    """The last known true rate ρ of one replica of `name`, events per busy second."""
    return dict(state.true_rate).get(name, 1.0 / et_default_s)


def replicas_for(demand: float, rho: float, utilization: float = 1.0) -> int:
    """r = ⌈D / (ρ · u)⌉: replicas whose planned share of their true rate covers the demand."""
    return ceil_eps(demand / (rho * utilization))


def catch_up(snapshot: Snapshot, horizon_s: float | None) -> dict[str, float]:
    """c_i = |q_i(t)| / H, the extra rate that empties each queue within the horizon."""
    if horizon_s is None:
        return {}
    return {o.name: o.queue / horizon_s for o in snapshot.operators}


class Sizing(Protocol):
    """The options of a policy that sizes operators on propagated demand (lagaware, proactive)."""

    drain_s: float | None  # H: clear each queue within this long, s (None: td / 2)
    target_utilization: float  # u: the planned share of ρ
    et_default_s: float  # 1 / ρ before any rate is measured, s


def size_operators(
    snapshot: Snapshot, flow: FlowState, planned: Mapping[str, float], sizing: Sizing
) -> Decision:
    """r_i = ⌈D_i / (ρ_i·u)⌉ with D_i the planned source rates propagated downstream plus every
    queue drained within H; lagaware and proactive size operators so."""
    drain_s, utilization = sizing.drain_s, sizing.target_utilization
    horizon = snapshot.interval_s / 2 if drain_s is None else drain_s
    demand = propagate(snapshot, flow, planned, catch_up(snapshot, horizon))
    targets: dict[str, int] = {}
    reasons: dict[str, str] = {}
    details: dict[str, str] = {}
    for o in snapshot.operators:
        rho = true_rate(flow, o.name, sizing.et_default_s)
        targets[o.name] = replicas_for(demand[o.name], rho, utilization)
        reasons[o.name] = demand_reason(demand[o.name], targets[o.name], rho * utilization, o.queue)
        details[o.name] = f"D={demand[o.name]:.1f}/s q={o.queue} ρ={rho:.1f}/s"
    return Decision.of(targets, reasons, details)
