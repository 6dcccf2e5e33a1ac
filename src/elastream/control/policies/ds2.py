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

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.flow import (
    FlowState,
    catch_up,
    propagate,
    replicas_for,
    source_rates,
    true_rate,
    update_flow,
)
from elastream.control.policy import POLICIES, Decision, Policy, demand_reason
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.model.snapshot import Snapshot


class Ds2Config(Settings):
    """Options of the ds2 policy."""

    target_utilization: float = Field(
        1.0, gt=0, le=1, description="u: the share of a replica's true rate to plan for"
    )
    catch_up_s: float | None = Field(
        None, gt=0, description="H: drain each queue within this long, s (None: ignore queues)"
    )
    et_default_s: float = Field(
        DEFAULT_ET_S, gt=0, description="1 / ρ before any rate is measured, s"
    )


def decide(snapshot: Snapshot, state: FlowState, config: Ds2Config) -> tuple[Decision, FlowState]:
    state = update_flow(snapshot, state)
    drain = catch_up(snapshot, config.catch_up_s)
    demand = propagate(snapshot, state, source_rates(snapshot), drain)
    targets: dict[str, int] = {}
    reasons: dict[str, str] = {}
    details: dict[str, str] = {}
    u = config.target_utilization
    for name, rate in demand.items():
        rho = true_rate(state, name, config.et_default_s)
        targets[name] = replicas_for(rate, rho, u)
        reasons[name] = demand_reason(rate, targets[name], rho * u)
        details[name] = f"D={rate:.1f}/s ρ={rho:.1f}/s u={u:g}"
    return Decision.of(targets, reasons, details), state


POLICY = POLICIES.register(
    "ds2",
    Policy(
        "ds2",
        decide,
        Ds2Config,
        FlowState(),
        "true processing rates, DS2 (OSDI 2018)",
        fast_forward_exact=True,
    ),
)
