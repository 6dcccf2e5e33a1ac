"""`psps`: queue-aware predictive replica counts of Wladdimiro et al. (seed 000, Eq. 1-4, Alg. 2).

Per interval t and operator O_i, in topological order:

    θ^p_i(t) = λ^p_i(t) / μ_p(t)                      (Eq. 2c) share of p's output sent to O_i
    θ_i(t)   = Σ_{p ∈ pred(O_i)} θ^p_i(t) · θ_p(t)      (Eq. 2b) share of λ_G reaching O_i
    λ̂^r_i(t+1) = λ_G(t) · θ_i(t)                      (Eq. 2a) predicted arrivals
    λ̂^q_i(t+1) = |q_i(t)|                             (Eq. 3)  backlog to clear
    λ̂_i(t+1) = λ̂^r_i(t+1) + λ̂^q_i(t+1)               (Eq. 4)
    r_i(t+1) = ⌈λ̂_i(t+1) · et_i / td⌉                 (Eq. 1)  replicas to process it within td

A source is a predecessor whose μ is what it emitted and whose θ is its share of λ_G. λ_G(t)
counts an external source's backlog (files not yet read, Redis lag: `Snapshot.demand_events`)
as arriving in t+1: a source held back by a full queue still asks for replicas. Predicting
from λ_G rather than from λ^r_i avoids the domino effect of Fig. 4: a predecessor that just scaled
out does not make its successors chase its catch-up burst one interval late. Where μ_p(t) = 0 the
ratio is undefined and the last known θ^p_i is kept (1.0 before any is known). Where et_i was not
measured in t (no event processed) the last measured value is kept, then `et_default_s`.
The plan (Alg. 2) is the difference k_i = r_i(t+1) - r_i(t), enacted by the engine; the guard
layer clamps it to the pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.flow import update_selectivity
from elastream.control.policy import POLICIES, Decision, Policy, ceil_eps, demand_reason
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.model.snapshot import Snapshot


class PspsConfig(Settings):
    """Options of the psps policy."""

    et_default_s: float = Field(
        DEFAULT_ET_S,
        gt=0,
        description="et_i before anything is measured, s (the paper's start-up benchmark)",
    )


@dataclass(frozen=True, slots=True)
class PspsState:
    theta_edges: tuple[tuple[tuple[str, str], float], ...] = field(default=())  # last θ^p_i
    et: tuple[tuple[str, float], ...] = field(default=())  # last measured et_i


@dataclass(frozen=True, slots=True)
class Prediction:
    """The intermediate values of Table II for one operator."""

    theta: float
    arrivals: int  # λ̂^r_i(t+1)
    backlog: int  # λ̂^q_i(t+1)
    total: int  # λ̂_i(t+1)
    replicas: int  # r_i(t+1)
    et: float  # et_i, s


def source_thetas(snapshot: Snapshot) -> dict[str, float]:
    """θ of each source: its share of λ_G, external backlogs included (evenly split when
    nothing was emitted)."""
    demand = snapshot.source_demand()
    lam_g = sum(demand.values())
    n = len(demand)
    return {s: (d / lam_g if lam_g else 1.0 / n) for s, d in demand.items()}


def predict(
    snapshot: Snapshot, state: PspsState, config: PspsConfig
) -> tuple[dict[str, Prediction], PspsState]:
    """Eq. 1-4 for every operator, propagating θ in topological order."""
    theta = source_thetas(snapshot)
    edges = update_selectivity(snapshot, dict(state.theta_edges))  # Eq. 2c
    ets = dict(state.et)
    lam_g = snapshot.demand_events
    out: dict[str, Prediction] = {}
    for o in snapshot.operators:
        theta_i = 0.0
        for pred, _ in o.received_from:
            theta_i += edges.get((pred, o.name), 1.0) * theta.get(pred, 0.0)  # Eq. 2b
        theta[o.name] = theta_i
        if o.service_time_s is not None and o.service_time_s > 0:
            ets[o.name] = o.service_time_s
        et = ets.get(o.name, config.et_default_s)
        arrivals = ceil_eps(lam_g * theta_i)  # Eq. 2a
        total = arrivals + o.queue  # Eq. 3, 4
        out[o.name] = Prediction(
            theta_i, arrivals, o.queue, total, ceil_eps(total * et / snapshot.interval_s), et
        )
    return out, PspsState(tuple(edges.items()), tuple(ets.items()))


def decide(snapshot: Snapshot, state: PspsState, config: PspsConfig) -> tuple[Decision, PspsState]:
    predictions, state = predict(snapshot, state, config)
    targets = {name: p.replicas for name, p in predictions.items()}
    td = snapshot.interval_s
    reasons = {
        name: demand_reason(p.total / td, p.replicas, 1 / p.et, p.backlog)
        for name, p in predictions.items()
    }
    details = {
        name: f"θ={p.theta:.3f} λ̂r={p.arrivals} λ̂q={p.backlog} λ̂={p.total} et={p.et * 1000:.1f}ms"
        for name, p in predictions.items()
    }
    return Decision.of(targets, reasons, details), state


POLICY = POLICIES.register(
    "psps",
    Policy(
        "psps",
        decide,
        PspsConfig,
        PspsState(),
        "queue-aware prediction, PSPS Eq. 1-4",
        fast_forward_exact=True,
    ),
)
