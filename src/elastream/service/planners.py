"""Planners mounted on the service (POST /plans/<name>): the forecast-driven (proactive)
parallelism plan and ODRP's joint replication and placement."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from elastream.prediction.performance import Host
from elastream.prediction.proactive import plan_parallelism, provisioning_rate
from elastream.prediction.series import Forecast
from elastream.service.app import Planner
from elastream.service.operations import Modeller
from elastream.service.placement_planner import ODRP
from elastream.service.schemas import ForecastSpec, GraphSpec, HistorySelection

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class ProactiveRequest(HistorySelection):
    """Forecast the sources, then size every component for the forecast's peak."""

    forecast: ForecastSpec = Field(..., description="forecaster and horizon")
    lead_s: float | None = Field(
        None, gt=0, description="provision for the peak of the next S seconds (None: horizon)"
    )
    bound: str = Field("upper", pattern="^(upper|point)$", description="forecast bound used")
    max_parallelism: dict[str, int] = Field(..., description="largest replica pool per component")
    cores: float | None = Field(None, gt=0, le=1.0e6, description="host cores (None: unbounded)")
    headroom: float = Field(0.1, ge=0, lt=1, description="keep t_c below (1-h)·SP_c")
    graph: GraphSpec | None = Field(None, description="inline graph (None: look it up)")


class ComponentPlanResult(BaseModel):
    model_config = _FROZEN
    name: str = Field(..., description="component")
    parallelism: int = Field(..., description="smallest replicas with low risk")
    source_rate: float = Field(..., description="rate the component must absorb")
    saturation_point: float | None = Field(..., description="SP_c at that parallelism")
    feasible: bool = Field(..., description="low risk reachable within the pool and cores")
    reason: str = Field(..., description="why (not) feasible")


class ProactiveResult(BaseModel):
    model_config = _FROZEN
    rate: float = Field(..., description="provisioned source rate t_0")
    risk: str = Field(..., description="backpressure risk at the plan (Eq. 14)")
    components: list[ComponentPlanResult] = Field(..., description="per component")


def run_proactive(modeller: Modeller, req: BaseModel) -> ProactiveResult:
    assert isinstance(req, ProactiveRequest)
    graph = modeller.graph(req.pipeline, req.graph)
    models = modeller.fit(req, graph)
    fc = modeller.forecast_sources(req, list(graph.sources()), req.forecast)
    arrays = (np.array(fc.point), np.array(fc.lower), np.array(fc.upper))
    forecast = Forecast(*arrays, fc.level, fc.step_s, fc.start_s)
    lead = None if req.lead_s is None else max(1, round(req.lead_s / fc.step_s))
    rate = provisioning_rate(forecast, lead, "upper" if req.bound == "upper" else "point")
    plan = plan_parallelism(
        graph, models, rate, req.max_parallelism, Host(cores=req.cores, headroom=req.headroom)
    )
    return ProactiveResult(
        rate=rate,
        risk=plan.prediction.risk,
        components=[
            ComponentPlanResult(
                name=p.name,
                parallelism=p.parallelism,
                source_rate=p.source_rate,
                saturation_point=p.saturation_point if p.saturation_point < float("inf") else None,
                feasible=p.feasible,
                reason=p.reason,
            )
            for p in plan.components.values()
        ],
    )


PROACTIVE = Planner(
    name="proactive",
    description="size each component for the forecast peak: smallest low-risk parallelism",
    request=ProactiveRequest,
    response=ProactiveResult,
    run=run_proactive,
)
PLANNERS = {planner.name: planner for planner in (PROACTIVE, ODRP)}
