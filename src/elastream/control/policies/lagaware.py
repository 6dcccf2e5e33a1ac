"""`lagaware`: elastream's own policy — PSPS's queue awareness on DS2's true rates, planned for a
short-horizon Holt forecast, with every backlog drained within a bounded horizon.

Derivation. PSPS (seed 000) sizes O_i for the events it must process in t+1 (Eq. 4): the
arrivals predicted from λ_G(t) (Eq. 2a) plus its queue |q_i(t)| (Eq. 3), at et_i per event
(Eq. 1). Three things make it lag a moving load:

1. Eq. 2a predicts λ_G(t+1) = λ_G(t): on a rising edge every interval is under-provisioned by
   the rise. Here each source's rate x_p(t) = λ_p(t) / td feeds Holt's linear (double
   exponential) smoothing,

       ℓ_p(t) = α·x_p(t) + (1 - α)·(ℓ_p(t-1) + b_p(t-1))
       b_p(t) = β·(ℓ_p(t) - ℓ_p(t-1)) + (1 - β)·b_p(t-1),

   and the planned rate is P_p = max(x_p(t), ℓ_p(t) + b_p(t)): the trend may raise the plan one
   interval ahead of a rise, but a falling forecast never plans below what was just seen (a
   wrong "down" costs queueing, timeouts and latency; a wrong "up" one interval of a replica).
2. Eq. 2a-2b propagate λ_G but not the queues: when O_p drains its backlog, O_i receives that
   burst on top of its predicted share and queues it one interval later (the domino effect of
   Fig. 4). As in DS2 with catch-up (`ds2.propagate`), the drain rate of every queue flows
   downstream through the observed selectivities s_{p,i} = λ^p_i / μ_p (Eq. 2c):

       D_i = Σ_{p ∈ pred(O_i)} s_{p,i}·D_p + |q_i(t)| / H,     D_source = P_source.

   Eq. 3 drains a queue within one td; events queued at a burst's onset are then still waiting
   when t_out expires. H = `drain_s` defaults to td / 2: the backlog of the onset is cleared
   within t_out for td ≤ t_out, which is what keeps the processed share at ≥ 0.999.
3. et_i is a start-up benchmark (Eq. 1); the true rate of a replica, ρ_i = μ_i / busy_i (DS2),
   follows the operator as it runs:

       r_i(t+1) = ⌈D_i / (ρ_i·u)⌉                                         (Eq. 1 in rates)

   with u = `target_utilization`, 1 by default: under the load-balancing grouping (Alg. 1) an
   idle replica starts the interval at U = 0 and receives every event until it catches up with
   the busiest, so headroom (u < 1) lengthens those bursts and raises latency instead of
   lowering it (docs/policies.md has the measurements).

Scale-downs are made lazy by the guard layer, not here (asymmetric stabilization): recommended
guards are a scale-down stabilization window of 3·td and nothing on scale-ups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.flow import FlowState, size_operators, source_rates, update_flow
from elastream.control.policy import POLICIES, Decision, Policy
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.model.snapshot import Snapshot
from elastream.prediction.forecasters import holt_step


class LagAwareConfig(Settings):
    """Options of the lagaware policy."""

    alpha: float = Field(0.6, gt=0, le=1, description="Holt level smoothing α")
    beta: float = Field(0.3, gt=0, le=1, description="Holt trend smoothing β")
    drain_s: float | None = Field(
        None, gt=0, description="H: clear each queue within this long, s (None: td / 2)"
    )
    target_utilization: float = Field(1.0, gt=0, le=1, description="u: planned share of ρ")
    et_default_s: float = Field(
        DEFAULT_ET_S, gt=0, description="1 / ρ before any rate is measured, s"
    )


@dataclass(frozen=True, slots=True)
class Holt:
    """Holt's level ℓ and trend b of one source rate, events/s."""

    level: float
    trend: float = 0.0

    def update(self, x: float, alpha: float, beta: float) -> Holt:
        return Holt(*holt_step(self.level, self.trend, x, alpha, beta))

    @property
    def forecast(self) -> float:
        """ℓ + b: the rate one interval ahead, floored at 0."""
        return max(0.0, self.level + self.trend)


@dataclass(frozen=True, slots=True)
class LagAwareState:
    flow: FlowState = FlowState()
    holt: tuple[tuple[str, Holt], ...] = field(default=())


def plan_sources(
    snapshot: Snapshot, holt: dict[str, Holt], config: LagAwareConfig
) -> tuple[dict[str, float], dict[str, Holt]]:
    """P_p = max(x_p, ℓ_p + b_p) for every source, and the updated smoothers."""
    planned: dict[str, float] = {}
    updated: dict[str, Holt] = {}
    for name, x in source_rates(snapshot).items():
        previous = holt.get(name)
        smoother = Holt(x) if previous is None else previous.update(x, config.alpha, config.beta)
        updated[name] = smoother
        planned[name] = max(x, smoother.forecast)
    return planned, updated


def decide(
    snapshot: Snapshot, state: LagAwareState, config: LagAwareConfig
) -> tuple[Decision, LagAwareState]:
    flow = update_flow(snapshot, state.flow)
    planned, holt = plan_sources(snapshot, dict(state.holt), config)
    return size_operators(snapshot, flow, planned, config), LagAwareState(flow, tuple(holt.items()))


POLICY = POLICIES.register(
    "lagaware",
    Policy(
        "lagaware",
        decide,
        LagAwareConfig,
        LagAwareState(),
        "Holt forecast + propagated queue drain on true rates (elastream's own)",
    ),
)
