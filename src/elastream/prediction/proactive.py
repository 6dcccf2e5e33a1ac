"""Forecast-driven parallelism: per component the smallest p with low backpressure risk (Eq. 14)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from elastream.prediction.forecasting import FitCache
from elastream.prediction.graph import ModelError, PipelineGraph
from elastream.prediction.performance import (
    ComponentModel,
    Host,
    Prediction,
    component_risk,
    component_saturation_point,
    linear_gains,
    predict,
)
from elastream.prediction.series import Forecast, Series

UNBOUNDED_HOST = Host()


@dataclass(frozen=True)
class ComponentPlan:
    """The chosen parallelism, the source rate it must absorb, and whether any p could."""

    name: str
    parallelism: int
    source_rate: float
    saturation_point: float
    feasible: bool
    reason: str


@dataclass(frozen=True)
class ProactivePlan:
    """Per-component plan for the provisioned rate, and the prediction at that plan."""

    rate: float
    components: Mapping[str, ComponentPlan]
    prediction: Prediction

    @property
    def parallelism(self) -> dict[str, int]:
        return {name: plan.parallelism for name, plan in self.components.items()}


def provisioning_rate(
    forecast: Forecast, lead_steps: int | None = None, bound: Literal["upper", "point"] = "upper"
) -> float:
    """The rate to provision for: the peak of the forecast (upper bound by default) over the
    next `lead_steps` steps (all of them by default), so scale-out happens before a spike."""
    values = forecast.upper if bound == "upper" else forecast.point
    if lead_steps is not None:
        if lead_steps < 1:
            raise ModelError(f"lead_steps must be ≥ 1, got {lead_steps}")
        values = values[:lead_steps]
    return float(np.max(values))


def _smallest_parallelism(
    model: ComponentModel, source: float, max_p: int, host: Host
) -> ComponentPlan:
    """Scan p = 1..max_p for the first one whose saturation point keeps the risk low."""
    sp, risk = 0.0, "high"
    for p in range(1, max_p + 1):
        sp = component_saturation_point(model, p, host.cores)
        risk = component_risk(model, p, source, sp, host.headroom)
        if risk == "low":
            return ComponentPlan(model.name, p, source, sp, True, "low risk")
    if risk == "unknown":
        reason = "never measured in saturation, and this rate is beyond the measured range"
    elif component_saturation_point(model, max_p, None) > sp:
        reason = "host cores cap it"
    else:
        reason = f"needs more than {max_p} replicas"
    return ComponentPlan(model.name, max_p, source, sp, False, reason)


def plan_parallelism(
    graph: PipelineGraph,
    models: Mapping[str, ComponentModel],
    rate: float,
    max_parallelism: Mapping[str, int],
    host: Host = UNBOUNDED_HOST,
) -> ProactivePlan:
    """Smallest p per component with t_c < (1 − headroom)·SP_c(p) at the provisioned rate.

    Once every component is below saturation its source rate is linear in t_0 (Eq. 12 with no
    min active), t_c = g_c·t_0, so components are sized independently; the prediction at the
    chosen plan then adds the host's cores (a plan can be infeasible: `feasible` says why).
    """
    if rate < 0 or not math.isfinite(rate):
        raise ModelError(f"provisioned rate must be a finite rate ≥ 0, got {rate}")
    missing = [c for c in graph.components if max_parallelism.get(c, 0) < 1]
    if missing:
        raise ModelError(f"max parallelism missing or < 1 for: {', '.join(missing)}")
    gains = linear_gains(graph, models)
    plans = {
        c: _smallest_parallelism(models[c], gains[c] * rate, max_parallelism[c], host)
        for c in graph.topological_order()
    }
    prediction = predict(graph, models, {c: p.parallelism for c, p in plans.items()}, rate, host)
    if prediction.bottleneck == "host" and prediction.risk == "high":
        plans = {
            c: ComponentPlan(
                p.name,
                p.parallelism,
                p.source_rate,
                p.saturation_point,
                False,
                "host cores saturate at this rate",
            )
            for c, p in plans.items()
        }
    return ProactivePlan(rate, plans, prediction)


def plan_from_history(
    history: Series,
    graph: PipelineGraph,
    models: Mapping[str, ComponentModel],
    max_parallelism: Mapping[str, int],
    horizon: int,
    lead_steps: int | None = None,
    forecaster: str = "seasonal-profile",
    params: dict | None = None,
    host: Host = UNBOUNDED_HOST,
    cache: FitCache | None = None,
) -> ProactivePlan:
    """The policy's whole pure step: forecast the source rate from its recent history, provision
    for max(last measured rate, forecast peak over the lead window), and size each component.

    `cache` keeps fitted forecasters across calls (the history hash is the key); time is only
    the series' own sample index, never a clock.
    """
    fitted = (cache or FitCache(size=1)).fit(history, forecaster, params)
    peak = provisioning_rate(fitted.forecast(horizon), lead_steps)
    rate = max(float(history.values[-1]), peak)
    return plan_parallelism(graph, models, rate, max_parallelism, host)
