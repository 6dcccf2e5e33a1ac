"""Typed requests and responses of the modelling service (and of `elastream whatif`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from elastream.prediction.forecasting import FORECASTERS
from elastream.prediction.graph import Grouping

_FROZEN = ConfigDict(extra="forbid", frozen=True)


def _known_model(name: str) -> str:
    if name not in FORECASTERS:
        raise ValueError(f"unknown forecast model {name!r}; known: {', '.join(FORECASTERS)}")
    return name


class EdgeSpec(BaseModel):
    model_config = _FROZEN
    source: str = Field(..., min_length=1, description="upstream component")
    target: str = Field(..., min_length=1, description="downstream component")
    grouping: Grouping = Field(Grouping.SHUFFLE, description="how tuples are partitioned")
    stream: str = Field("default", min_length=1, description="the upstream's output stream")


class GraphSpec(BaseModel):
    """A pipeline graph given inline (else it is looked up by the pipeline's name)."""

    model_config = _FROZEN
    components: list[str] = Field(..., min_length=1, description="component names")
    edges: list[EdgeSpec] = Field(default_factory=list, description="data-flow edges")


class HistorySelection(BaseModel):
    """Which part of the metrics history the models are fit from."""

    model_config = _FROZEN
    pipeline: str = Field(..., min_length=1, description="pipeline name in the history")
    run_ids: list[str] | None = Field(None, description="runs to use (None: every run)")
    history_s: float | None = Field(
        None, gt=0, description="use only the last S seconds of each selected run"
    )


class ForecastSpec(BaseModel):
    """Forecast settings: model, horizon and the model's parameters."""

    model_config = _FROZEN
    model: str = Field("holt-winters", description="forecaster name (see GET /models)")
    horizon_s: float = Field(..., gt=0, le=3.0e7, description="how far ahead, in seconds")
    params: dict[str, float | int | str | bool | None] = Field(
        default_factory=dict, description="the forecaster's parameters (see GET /models)"
    )

    _check_model = field_validator("model")(_known_model)


class ForecastRequest(HistorySelection):
    """Forecast the source rate of the pipeline's source components."""

    forecast: ForecastSpec = Field(..., description="model, horizon and parameters")
    sources: list[str] | None = Field(
        None, description="operators whose source rate is forecast (None: the graph's sources)"
    )
    graph: GraphSpec | None = Field(None, description="inline graph (None: look it up)")


class ForecastResult(BaseModel):
    model_config = _FROZEN
    model: str = Field(..., description="forecaster used")
    step_s: float = Field(..., description="seconds between forecast values")
    start_s: float = Field(..., description="time of the first forecast value (history time)")
    level: float = Field(..., description="coverage of the prediction interval")
    point: list[float] = Field(..., description="point forecast (events/s)")
    lower: list[float] = Field(..., description="interval lower bound (events/s)")
    upper: list[float] = Field(..., description="interval upper bound (events/s)")


class PredictionRequest(HistorySelection):
    """Predict the pipeline at a proposed parallelism and source rate, or at the forecast."""

    parallelism: dict[str, Annotated[int, Field(ge=1, le=10_000)]] = Field(
        ..., description="replicas per component; components left out keep their last one"
    )
    source_rate: float | None = Field(
        None, ge=0, le=1.0e12, description="the source rate to predict at, events/s"
    )
    forecast: ForecastSpec | None = Field(
        None, description="predict at the forecast's peak upper bound instead of source_rate"
    )
    cores: float | None = Field(None, gt=0, le=1.0e6, description="host cores (None: unbounded)")
    headroom: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="the risk is high above (1 - headroom) × the saturating source rate",
    )
    arrival_scv: float = Field(
        1.0,
        ge=0,
        le=1.0e6,
        description="squared coefficient of variation of the inter-arrival times",
    )
    graph: GraphSpec | None = Field(None, description="inline graph (None: look it up)")

    @model_validator(mode="after")
    def _one_rate(self) -> PredictionRequest:
        if (self.source_rate is None) == (self.forecast is None):
            raise ValueError("give exactly one of source_rate and forecast")
        return self


class ComponentResult(BaseModel):
    model_config = _FROZEN
    name: str = Field(..., description="component")
    parallelism: int = Field(..., description="replicas")
    source_rate: float = Field(..., description="offered events/s")
    input_rate: float = Field(..., description="admitted events/s")
    output_rates: dict[str, float] = Field(..., description="events/s per output stream")
    saturation_point: float | None = Field(
        ..., description="source rate where it saturates, events/s; null if never measured"
    )
    saturation_throughput: float | None = Field(..., description="its output rate there, events/s")
    risk: Literal["low", "high", "unknown"] = Field(
        ..., description="risk of backpressure at this rate"
    )
    cpu: float | None = Field(..., description="cores it uses; null if not measured")
    latency_s: float | None = Field(..., description="sojourn time; null if unstable/unknown")
    basis: str = Field(..., description="which equation set the per-replica split")
    core_limited: bool = Field(..., description="the host's cores cap this component")
    output_per_input: float = Field(
        ..., description="fitted output events per input event below saturation"
    )
    fit_error: float = Field(..., description="relative RMSE of the fitted output curve")
    replica_saturation_point: float | None = Field(
        ..., description="fitted input rate one replica saturates at, events/s; null if never"
    )
    replica_saturation_throughput: float | None = Field(
        ..., description="fitted output rate of one replica at saturation, events/s"
    )
    input_fit_error: float = Field(..., description="relative RMSE of the fitted input curve")
    points_below: int = Field(..., description="replica-intervals below saturation in the fit")
    points_above: int = Field(..., description="replica-intervals above saturation in the fit")


class PredictionResult(BaseModel):
    model_config = _FROZEN
    source_rate: float = Field(..., description="the source rate predicted at, events/s")
    saturation_point: float | None = Field(
        ..., description="source rate at which the pipeline saturates, events/s; null if unknown"
    )
    risk: Literal["low", "high", "unknown"] = Field(
        ..., description="risk of backpressure at this rate"
    )
    bottleneck: str | None = Field(..., description="component or 'host' saturating first")
    critical_path: list[str] = Field(..., description="path through the bottleneck")
    critical_path_output: float = Field(
        ..., description="output rate of the critical path, events/s"
    )
    latency_s: float | None = Field(..., description="end-to-end latency; null if unstable")
    cpu: float | None = Field(..., description="total cores")
    components: list[ComponentResult] = Field(..., description="per component")


class JobAccepted(BaseModel):
    model_config = _FROZEN
    job_id: str = Field(..., description="job identifier")
    status: Literal["pending", "done", "failed"] = Field(..., description="current state")
    location: str = Field(..., description="where to GET the job")
    cached: bool = Field(False, description="an identical earlier request's job")


class JobStatus(BaseModel):
    model_config = _FROZEN
    job_id: str = Field(..., description="job identifier")
    kind: str = Field(..., description="forecast, prediction or a planner's name")
    status: Literal["pending", "done", "failed"] = Field(..., description="current state")
    result: dict | None = Field(None, description="the result once done")
    error: str | None = Field(None, description="the error once failed")
    cached: bool = Field(False, description="served from an identical earlier request")


class ModelInfo(BaseModel):
    model_config = _FROZEN
    name: str = Field(..., description="model name")
    kind: Literal["forecast", "performance"] = Field(..., description="what it models")
    description: str = Field(..., description="what it does")
    available: bool = Field(..., description="installed here")
    params: dict = Field(default_factory=dict, description="JSON schema of its parameters")
