"""`ds2`: true-processing-rate scaling of DS2 (Kalavri et al., OSDI 2018) and Flink's autoscaler.

DS2 sizes every operator from *true* rates: what one replica could process per second of busy
time, not what it happened to process per wall-clock second (an idle replica's observed rate
measures its input, not its capacity). Per interval t and operator O_i, in topological order:

    ρ_i     = μ_i(t) / busy_i(t)                   true rate of one replica (events per busy second;
                                                    1 / et_i when busy time was not measured)
    s_{p,i} = λ^p_i(t) / μ_p(t)                    observed selectivity of edge p -> i (what p sent
                                                    to i per event it processed; DS2's o_p / λ_p)
    D_i     = Σ_{p ∈ pred(O_i)} s_{p,i} · D_p + c_i  target rate O_i must process (events/s); for a
                                                    source p, D_p is its observed rate λ_p(t) / td
    c_i     = |q_i(t)| / H                         optional catch-up: drain the backlog within the
                                                    horizon H (Flink autoscaler's catch-up duration)
    r_i     = ⌈D_i / (ρ_i · u)⌉                    parallelism at target utilization u ∈ (0, 1]

The propagation is DS2's Eq. for the target input rate of an operator (the sum over its upstream
operators of their target output, i.e. selectivity times target input); the catch-up term of an
upstream operator flows downstream through the same sum, so a draining predecessor's burst is
provisioned for before it arrives. An edge whose source processed nothing in t keeps its last
known selectivity (1.0 before any is known); an operator that processed nothing keeps its last
true rate, then 1 / `et_default_s`.

The rule itself takes no measures against oscillation: DS2 waits for a decision to settle
before acting again, and Flink's autoscaler adds a stabilization interval and a scale-down
delay. Here those come from the single guard layer (`core/guards.py`); recommended settings:
`stabilization_s` = 2-3 · td and `scale_down_delay_s` = td.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from elastream.control.policy import POLICIES, Decision, Policy, ceil_eps
from elastream.model.snapshot import OperatorStats, Snapshot

Edge = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Ds2Config:
    target_utilization: float = 1.0  # u: the share of a replica's true rate to plan for
    catch_up_s: float | None = None  # H: drain each queue within this long (None: ignore queues)
    et_default_s: float = 0.01  # 1 / ρ before any rate is measured

    def __post_init__(self) -> None:
        if not 0 < self.target_utilization <= 1:
            raise ValueError(f"target_utilization must be in (0, 1], got {self.target_utilization}")
        if self.catch_up_s is not None and self.catch_up_s <= 0:
            raise ValueError(f"catch_up_s must be > 0 or None, got {self.catch_up_s}")
        if self.et_default_s <= 0:
            raise ValueError(f"et_default_s must be > 0, got {self.et_default_s}")


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
    if stats.et_s is not None and stats.et_s > 0:
        return 1.0 / stats.et_s
    return None


def source_rates(snapshot: Snapshot) -> dict[str, float]:
    """λ_p(t) / td for every source p: its observed output rate in events/s."""
    return {name: emitted / snapshot.td for name, emitted in snapshot.sources}


def update_flow(snapshot: Snapshot, state: FlowState) -> FlowState:
    """Refresh the selectivity of every edge whose source processed something, and every true
    rate measured in t; keep the last known values elsewhere."""
    mu = dict(snapshot.sources) | {o.name: o.processed for o in snapshot.operators}
    edges = dict(state.selectivity)
    rates = dict(state.true_rate)
    for o in snapshot.operators:
        for pred, received in o.received_from:
            if mu.get(pred, 0) > 0:
                edges[(pred, o.name)] = received / mu[pred]  # s_{p,i} = λ^p_i / μ_p
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


def decide(snapshot: Snapshot, state: FlowState, config: Ds2Config) -> tuple[Decision, FlowState]:
    state = update_flow(snapshot, state)
    drain = catch_up(snapshot, config.catch_up_s)
    demand = propagate(snapshot, state, source_rates(snapshot), drain)
    targets: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for name, rate in demand.items():
        rho = true_rate(state, name, config.et_default_s)
        targets[name] = replicas_for(rate, rho, config.target_utilization)
        reasons[name] = f"D={rate:.1f}/s ρ={rho:.1f}/s u={config.target_utilization:g}"
    return Decision.of(targets, reasons), state


POLICY = POLICIES.register(
    "ds2",
    Policy("ds2", decide, Ds2Config, FlowState(), "true processing rates, DS2 (OSDI 2018)"),
)
