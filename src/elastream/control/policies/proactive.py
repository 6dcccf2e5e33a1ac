"""`proactive`: Caladrius' forecast-driven sizing — each operator gets the smallest parallelism
whose throughput covers the forecast's peak over the next intervals, before the load arrives.

Caladrius (seed 002) forecasts a topology's source traffic (Section IV-A) and predicts, for a
proposed parallelism, each component's throughput and whether backpressure arises (Section IV-B,
Eq. 12-14). As a policy, at every interval t:

1. each source's rate x_p(t) = λ_p(t) / td is appended to its history (the last `history_s`
   seconds, one sample per interval); once `min_history` samples exist, a forecaster of the
   modelling registry (`prediction.forecasting`: by default `auto`, which backtests the
   candidates — naive, seasonal-naive, summary, Holt, seasonal profile — on the history itself
   over the lead and uses the lowest MASE, so it plans on no forecast worse than "same as now"
   in that backtest) forecasts the next ⌈lead_s / td⌉ intervals, and the planned rate is the
   peak of the forecast's `bound` (the point forecast by default; docs/policies.md measures the
   prediction interval's upper edge, which raised latency here) over them:
   P_p = max(x_p(t), max_{k ≤ lead} F_p(t + k))  (`prediction.proactive.provisioning_rate`);
2. the component source rates follow from the sources in topological order through the
   observed selectivities (Eq. 12 below saturation: t_c = Σ_pred s·t_pred), plus every queue's
   drain within H = `drain_s` (10 s by default), as in lagaware;
3. a component's saturation point at parallelism p is p·ST_c, with ST_c the instance's
   saturation throughput, measured online as the replica's true rate ρ_c = μ_c / busy_c (events
   per busy second); the risk is low when t_c ≤ u·SP_c(p) (Eq. 14 with headroom 1 - u), so
   r_c = ⌈D_c / (ρ_c·u)⌉ is the smallest low-risk parallelism.

Scale-downs are made lazy by the guard layer (a scale-down stabilization window), as for the
other rate-based policies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.flow import (
    FlowState,
    rate_history,
    size_operators,
    source_rates,
    update_flow,
)
from elastream.control.policy import POLICIES, Decision, Policy
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.model.snapshot import Snapshot
from elastream.prediction.forecasting import forecast, get_forecaster
from elastream.prediction.proactive import provisioning_rate
from elastream.prediction.series import Series

# no fitting, microseconds a fit: what a control loop can backtest every interval
FAST_CANDIDATES = ("naive", "seasonal-naive", "summary", "holt", "seasonal-profile")


class ProactiveConfig(Settings):
    """Options of the proactive policy."""

    forecaster: str = Field(
        "auto",
        description="forecast model of the modelling registry (elastream forecast); auto: the "
        "one with the lowest MASE in a backtest on the source's own history, naive included",
    )
    auto_candidates: list[str] = Field(
        default_factory=lambda: list(FAST_CANDIDATES),
        description="the models auto picks from, scored on the lead: those cheap enough to fit "
        "every interval (the forecast extra's take 0.1-5 s a fit: add them where td allows)",
    )
    forecaster_params: dict[str, Any] = Field(
        default_factory=dict, description="the forecaster's own parameters (docs/modeling.md)"
    )
    history_s: float = Field(
        600.0, gt=0, description="seconds of source-rate history the forecast is fitted on"
    )
    min_history: int = Field(
        4, ge=2, description="samples (intervals) needed before forecasting; before: x_p(t)"
    )
    lead_s: float | None = Field(
        None, gt=0, description="provision for the forecast peak of the next S seconds (None: td)"
    )
    bound: Literal["upper", "point"] = Field(
        "point", description="plan for the point forecast, or the prediction interval's upper edge"
    )
    drain_s: float | None = Field(
        10.0, gt=0, description="H: clear each queue within this long, s (None: td / 2)"
    )
    target_utilization: float = Field(
        1.0, gt=0, le=1, description="u: plan t_c ≤ u·SP_c (Eq. 14's headroom is 1 - u)"
    )
    et_default_s: float = Field(
        DEFAULT_ET_S, gt=0, description="1 / ρ before any rate is measured, s"
    )

    def model_post_init(self, context: Any) -> None:
        get_forecaster(self.forecaster)  # an unknown or missing model is named at once


@dataclass(frozen=True, slots=True)
class ProactiveState:
    flow: FlowState = FlowState()
    history: tuple[tuple[str, tuple[float, ...]], ...] = field(default=())


def planned_rate(values: tuple[float, ...], td: float, config: ProactiveConfig) -> float:
    """P_p: the forecast's peak over the lead, never below the rate just observed."""
    observed = values[-1]
    if len(values) < config.min_history:
        return observed
    lead = max(1, math.ceil((config.lead_s or td) / td))
    params = config.forecaster_params
    if config.forecaster == "auto":
        params = {"candidates": config.auto_candidates, "horizon": lead, **params}
    predicted = forecast(Series(list(values), step_s=td), config.forecaster, lead, params)
    return max(observed, provisioning_rate(predicted, lead, config.bound))


def decide(
    snapshot: Snapshot, state: ProactiveState, config: ProactiveConfig
) -> tuple[Decision, ProactiveState]:
    flow = update_flow(snapshot, state.flow)
    history = rate_history(snapshot, dict(state.history), config.min_history, config.history_s)
    planned = {
        name: planned_rate(history[name], snapshot.interval_s, config)
        for name in source_rates(snapshot)
    }
    state = ProactiveState(flow, tuple(history.items()))
    return size_operators(snapshot, flow, planned, config), state


POLICY = POLICIES.register(
    "proactive",
    Policy(
        "proactive",
        decide,
        ProactiveConfig,
        ProactiveState(),
        "Caladrius: size for the forecast peak of the next intervals on measured throughput",
    ),
)
