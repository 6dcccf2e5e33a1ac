"""The modelling service's FastAPI app: models, forecasts, predictions and pluggable planners."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI, HTTPException, Response
from pydantic import BaseModel

from elastream.prediction.forecasting import FORECASTERS
from elastream.service.jobs import JobManager
from elastream.service.operations import Modeller
from elastream.service.schemas import (
    ForecastRequest,
    ForecastResult,
    JobAccepted,
    JobStatus,
    ModelInfo,
    PredictionRequest,
    PredictionResult,
)

PERFORMANCE_MODELS = (
    ModelInfo(
        name="caladrius-throughput",
        kind="performance",
        description="piecewise-linear instance throughput min(α·t, ST) composed per component "
        "(Eq. 1-11), chained along the graph (Eq. 12), saturation point t'_0 (Eq. 13), "
        "backpressure risk (Eq. 14), with the host's core capacity",
        available=True,
    ),
    ModelInfo(
        name="cpu-psi",
        kind="performance",
        description="CPU load = ψ · input rate, ψ fitted from the history (Caladrius V-E)",
        available=True,
    ),
    ModelInfo(
        name="queueing-latency",
        kind="performance",
        description="per-component sojourn time, M/M/c or Kingman/Allen-Cunneen G/G/c with the "
        "measured service-time variance; end-to-end = the slowest source-sink path",
        available=True,
    ),
)


@dataclass(frozen=True)
class Planner:
    """An extra modelling endpoint, POST /plans/<name>, run as a job like the others."""

    name: str
    description: str
    request: type[BaseModel]
    response: type[BaseModel]
    run: Callable[[Modeller, BaseModel], BaseModel]


def _accepted(jobs: JobManager, job_id: str, response: Response, cached: bool) -> JobAccepted:
    status = jobs.status(job_id, cached)
    assert status is not None
    location = f"/jobs/{job_id}"
    response.headers["Location"] = location
    return JobAccepted(job_id=job_id, status=status.status, location=location, cached=cached)


def _add_planner(app: FastAPI, modeller: Modeller, jobs: JobManager, planner: Planner) -> None:
    request_type = planner.request

    def plan(body: BaseModel, response: Response) -> JobAccepted:
        job, hit = jobs.submit(
            planner.name, body, modeller.store.version(), lambda: planner.run(modeller, body)
        )
        return _accepted(jobs, job.job_id, response, hit)

    # the body's type is the planner's own request model (annotations here are strings)
    plan.__annotations__ = {"body": request_type, "response": Response, "return": JobAccepted}
    app.post(
        f"/plans/{planner.name}",
        status_code=202,
        response_model=JobAccepted,
        summary=planner.description,
        responses={200: {"model": planner.response}},
    )(plan)


def create_app(
    modeller: Modeller, planners: Mapping[str, Planner] | None = None, workers: int = 2
) -> FastAPI:
    """The app; `planners` mounts extra POST /plans/<name> job endpoints."""
    jobs = JobManager(workers)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        jobs.shutdown()

    app = FastAPI(
        lifespan=lifespan,
        title="elastream modelling service",
        description="Caladrius-style traffic forecasts and what-if performance predictions. "
        "POST a request: 202 with a job id and Location; GET /jobs/{id} until done or failed.",
        version="1.0",
    )
    app.state.jobs = jobs

    @app.get("/models", response_model=list[ModelInfo])
    def list_models() -> list[ModelInfo]:
        """Every forecast and performance model, with its description and parameters."""
        forecasters = [
            ModelInfo(
                name=s.name,
                kind="forecast",
                description=s.description,
                available=s.available(),
                params=s.params.model_json_schema(),
            )
            for s in map(FORECASTERS.get, FORECASTERS)
        ]
        return forecasters + list(PERFORMANCE_MODELS)

    @app.post("/forecasts", status_code=202, response_model=JobAccepted)
    def post_forecast(body: ForecastRequest, response: Response) -> JobAccepted:
        """Forecast the source rate of a pipeline (a job: result is a ForecastResult)."""
        job, hit = jobs.submit(
            "forecast", body, modeller.store.version(), lambda: modeller.forecast(body)
        )
        return _accepted(jobs, job.job_id, response, hit)

    @app.post("/predictions", status_code=202, response_model=JobAccepted)
    def post_prediction(body: PredictionRequest, response: Response) -> JobAccepted:
        """Predict throughput, backpressure, CPU and latency (a job: a PredictionResult)."""
        job, hit = jobs.submit(
            "prediction", body, modeller.store.version(), lambda: modeller.predict(body)
        )
        return _accepted(jobs, job.job_id, response, hit)

    @app.get(
        "/jobs/{job_id}", response_model=JobStatus, responses={404: {"description": "unknown"}}
    )
    def get_job(job_id: str) -> JobStatus:
        """pending, done with the result, or failed with the error."""
        status = jobs.status(job_id)
        if status is None:
            raise HTTPException(status_code=404, detail=f"unknown job {job_id!r}")
        return status

    @app.get("/schemas/results", include_in_schema=True)
    def result_schemas() -> dict:
        """JSON schemas of the job results: ForecastResult and PredictionResult."""
        return {
            "forecast": ForecastResult.model_json_schema(),
            "prediction": PredictionResult.model_json_schema(),
        }

    for planner in (planners or {}).values():
        _add_planner(app, modeller, jobs, planner)
    return app


__all__ = ["JobStatus", "Planner", "create_app"]
