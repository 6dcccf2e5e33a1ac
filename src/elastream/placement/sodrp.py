"""S-ODRP (paper Alg. 1) as pure functions: plan, measure what the plan runs, re-plan."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from elastream.base.settings import Settings
from elastream.placement.model import Application, PlacementError, PlanRequest, Weights
from elastream.placement.service import Clock, plan


class Measurements(Settings):
    """Rates measured over a window while a plan runs (Alg. 1 line 6)."""

    stream_rates: dict[str, float] = Field(
        {}, description="'src->dst' -> measured tuples/s on that stream"
    )
    service_rates: dict[str, float] = Field(
        {}, description="operator -> measured tuples/s one replica serves"
    )
    source_rates: dict[str, float] = Field({}, description="source operator -> tuples/s emitted")


def minimum_cost(request: PlanRequest) -> PlanRequest:
    """Alg. 1 line 4: the early assignment minimizes the deployment cost (w_c = 1)."""
    return request.model_copy(update={"weights": Weights(c=1.0)})


def with_measurements(request: PlanRequest, measured: Measurements) -> PlanRequest:
    """The request with its stream, service and source rates replaced by measured ones."""
    app = request.application
    ops = {o.name: o for o in app.operators}
    for name in [*measured.service_rates, *measured.source_rates]:
        if name not in ops:
            raise PlacementError(f"measurements: unknown operator {name!r}")
    streams = {f"{s.src}->{s.dst}": s for s in app.streams}
    for key in measured.stream_rates:
        if key not in streams:
            raise PlacementError(f"measurements: unknown stream {key!r} (use 'src->dst')")
    new_ops = tuple(
        o.model_copy(
            update={
                "service_rate": measured.service_rates.get(o.name, o.service_rate),
                "source_rate": measured.source_rates.get(o.name, o.source_rate),
            }
        )
        for o in app.operators
    )
    new_streams = tuple(
        s.model_copy(update={"rate": measured.stream_rates[key]})
        if key in measured.stream_rates
        else s
        for key, s in streams.items()
    )
    updated = Application(operators=new_ops, streams=new_streams)
    return request.model_copy(update={"application": updated})


def replan(
    request: PlanRequest, measured: Measurements, clock: Clock | None = None
) -> dict[str, Any]:
    """Alg. 1 line 8: solve ODRP again with what was measured."""
    return plan(with_measurements(request, measured), clock)


def early_plan(request: PlanRequest, clock: Clock | None = None) -> dict[str, Any]:
    """Alg. 1 lines 4-5: without measured rates, the plan of least deployment cost."""
    return plan(minimum_cost(request), clock)
