"""`dabs`: DABS-Storm's proactive parallelization (Kombi et al. 2019) as seed 000 Section III
describes it: a regression-predicted input plus pending events over a measured capacity.

Per interval t, for every source p, a least-squares line through its last N observed rates
x_{t-N+1..t} (events/s) is extended one interval ahead:

    b = Σ_k (k - k̄)(x_k - x̄) / Σ_k (k - k̄)²,   a = x̄ - b·k̄,   x̂_p(t+1) = max(0, a + b·N)

(k = 0..N-1; with one point, x̂ is that point). The prediction flows through the observed edge
selectivities in topological order, exactly as in DS2 (`ds2.propagate`), giving each operator's
predicted input rate Λ̂_i. The operator's load adds its pending events, to be processed within
the next interval, and its capacity is the measured throughput of one replica per busy second
(an idle replica's per-wall-second throughput measures its input, not its capacity, and would
pin r_i at its current value):

    L_i = Λ̂_i + |q_i(t)| / td,    κ_i = μ_i(t) / busy_i(t) (1 / et_i if unmeasured),
    r_i = ⌈L_i / κ_i⌉

DABS-Storm reconfigures by restarting the topology, which empties the queues; the benchmark
enacts this policy with the simulator's `restart` reconfiguration model (benchmarks/*.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.flow import (
    FlowState,
    propagate,
    replicas_for,
    source_rates,
    true_rate,
    update_flow,
)
from elastream.control.policy import POLICIES, Decision, Policy, demand_reason
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.model.snapshot import Snapshot


class DabsConfig(Settings):
    """Options of the dabs policy."""

    window: int = Field(5, ge=1, description="N: intervals in the regression")
    et_default_s: float = Field(
        DEFAULT_ET_S, gt=0, description="1 / κ before any throughput is measured, s"
    )


@dataclass(frozen=True, slots=True)
class DabsState:
    flow: FlowState = FlowState()
    history: tuple[tuple[str, tuple[float, ...]], ...] = field(default=())  # last N rates/source


def linear_forecast(values: tuple[float, ...]) -> float:
    """Least-squares line through (k, values[k]), k = 0..n-1, evaluated at k = n, floored at 0."""
    n = len(values)
    if n == 0:
        raise ValueError("linear_forecast needs at least one value")
    if n == 1:
        return max(0.0, values[0])
    k_mean = (n - 1) / 2
    x_mean = sum(values) / n
    sxx = sum((k - k_mean) ** 2 for k in range(n))
    sxy = sum((k - k_mean) * (x - x_mean) for k, x in enumerate(values))
    slope = sxy / sxx
    return max(0.0, x_mean + slope * (n - k_mean))


def push_history(
    history: dict[str, tuple[float, ...]], rates: dict[str, float], window: int
) -> dict[str, tuple[float, ...]]:
    """Append this interval's rate of every source, keeping the last `window` values."""
    return {name: (*history.get(name, ()), rate)[-window:] for name, rate in rates.items()}


def decide(snapshot: Snapshot, state: DabsState, config: DabsConfig) -> tuple[Decision, DabsState]:
    flow = update_flow(snapshot, state.flow)
    history = push_history(dict(state.history), source_rates(snapshot), config.window)
    predicted = {name: linear_forecast(values) for name, values in history.items()}
    inflow = propagate(snapshot, flow, predicted)
    targets: dict[str, int] = {}
    reasons: dict[str, str] = {}
    details: dict[str, str] = {}
    for o in snapshot.operators:
        load = inflow[o.name] + o.queue / snapshot.interval_s
        kappa = true_rate(flow, o.name, config.et_default_s)
        targets[o.name] = replicas_for(load, kappa)
        reasons[o.name] = demand_reason(load, targets[o.name], kappa, o.queue)
        details[o.name] = f"Λ̂={inflow[o.name]:.1f}/s q={o.queue} L={load:.1f}/s κ={kappa:.1f}/s"
    state = DabsState(flow, tuple(history.items()))
    return Decision.of(targets, reasons, details), state


POLICY = POLICIES.register(
    "dabs",
    Policy("dabs", decide, DabsConfig, DabsState(), "regression + pending, DABS-Storm (2019)"),
)
