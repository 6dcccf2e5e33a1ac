"""The planning file format (infra YAML next to the pipeline), merged with a pipeline's topology."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, model_validator

from elastream.base.settings import Settings, line_of
from elastream.placement.model import (
    Application,
    Bounds,
    Infrastructure,
    LinkOverride,
    LinkSpec,
    NodeSpec,
    OperatorSpec,
    PlacementError,
    StreamSpec,
)

SOURCE_SERVICE_RATE = 1e9  # a pipeline source with no service_rate: no processing latency


class OperatorAttrs(Settings):
    """Placement attributes of one operator, keyed by its name in the planning file."""

    service_rate: float | None = Field(None, gt=0, description="mu_i, tuples/s per replica")
    resources: float = Field(1.0, gt=0, description="Res_i per replica")
    cost: float = Field(1.0, ge=0, description="C_i per replica per resource unit")
    max_replicas: int | None = Field(None, ge=1, description="k_i (default: pipeline max or 1)")
    candidates: tuple[str, ...] | None = Field(None, description="V_res^i; omitted: every node")
    pinned: str | None = Field(None, description="the one node of a pinned operator")
    source_rate: float | None = Field(None, gt=0, description="tuples/s emitted by a source")

    @model_validator(mode="after")
    def _one_placement_rule(self) -> OperatorAttrs:
        if self.pinned is not None and self.candidates is not None:
            raise ValueError("give either pinned or candidates, not both")
        return self

    def node_set(self) -> tuple[str, ...] | None:
        return (self.pinned,) if self.pinned is not None else self.candidates


class PlanningFile(Settings):
    """The whole infra YAML: resource graph, operator attributes, stream rates, bounds."""

    nodes: tuple[NodeSpec, ...] = Field(..., min_length=1, description="the computing nodes")
    default_link: LinkSpec = Field(LinkSpec(delay_ms=0.0), description="QoS of unlisted links")
    links: tuple[LinkOverride, ...] = Field((), description="links whose QoS differs")
    operators: dict[str, OperatorAttrs] = Field({}, description="attributes per operator name")
    streams: tuple[StreamSpec, ...] = Field((), description="stream rates and tuple sizes")
    bounds: Bounds | None = Field(None, description="Eq. 21 normalization (default: derived)")

    def infrastructure(self) -> Infrastructure:
        return Infrastructure(nodes=self.nodes, default_link=self.default_link, links=self.links)


def parse_planning(data: Any, where: str) -> PlanningFile:
    """Validate a loaded planning file; errors name the file, the field and (when the data came
    from the line-aware reader) the line."""
    try:
        return PlanningFile.model_validate(data)
    except ValidationError as exc:
        raise PlacementError(f"{where}: {_first_error(exc, data)}") from exc


def _first_error(exc: ValidationError, data: Any = None) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    message = f"{loc}: {err['msg']}" if loc else err["msg"]
    line = line_of(data, err["loc"])
    return f"{message} (line {line})" if line else message


def application_from(plan_file: PlanningFile, pipeline: dict | None, where: str) -> Application:
    """The application graph: the pipeline's topology (or the file's own) plus the attributes."""
    try:
        if pipeline is None:
            return _standalone(plan_file)
        return _from_pipeline(plan_file, pipeline, where)
    except ValidationError as exc:
        raise PlacementError(f"{where}: {_first_error(exc)}") from exc


def _standalone(plan_file: PlanningFile) -> Application:
    """No pipeline: every operator and stream is in the planning file."""
    ops = []
    for name, attrs in plan_file.operators.items():
        if attrs.service_rate is None:
            raise PlacementError(f"operators.{name}: service_rate is required")
        ops.append(_operator(name, attrs, attrs.service_rate, attrs.max_replicas or 1, None))
    return Application(operators=tuple(ops), streams=plan_file.streams)


def _operator(
    name: str, attrs: OperatorAttrs, mu: float, k: int, rate: float | None
) -> OperatorSpec:
    return OperatorSpec(
        name=name,
        service_rate=mu,
        resources=attrs.resources,
        cost=attrs.cost,
        max_replicas=k,
        candidates=attrs.node_set(),
        source_rate=attrs.source_rate or rate,
    )


def _from_pipeline(plan_file: PlanningFile, pipeline: dict, where: str) -> Application:
    """Sources and operators of the pipeline become V_dsp; streams into sinks are dropped."""
    sources = {s["name"]: s for s in pipeline.get("sources", [])}
    operators = {o["name"]: o for o in pipeline.get("operators", [])}
    for name in plan_file.operators:
        if name not in sources and name not in operators:
            raise PlacementError(f"{where}: operators.{name}: not a source or operator")
    ops = []
    for name, spec in [*sources.items(), *operators.items()]:
        attrs = plan_file.operators.get(name, OperatorAttrs())
        mu = attrs.service_rate
        if mu is None and spec.get("service_time_ms"):
            mu = 1000.0 / float(spec["service_time_ms"])
        if mu is None and name in sources:
            mu = SOURCE_SERVICE_RATE
        if mu is None:
            raise PlacementError(
                f"{where}: operator {name!r} has no service rate: give operators.{name}."
                "service_rate here or service_time_ms in the pipeline"
            )
        k = attrs.max_replicas or int((spec.get("replicas") or {}).get("max", 1))
        rate = float(spec.get("rate", 10.0)) if name in sources else None
        ops.append(_operator(name, attrs, mu, k, rate))
    known = {o.name for o in ops}
    given = {(s.src, s.dst): s for s in plan_file.streams}
    streams = []
    for edge in pipeline.get("streams", []):
        key = (edge["from"], edge["to"])
        if key[0] in known and key[1] in known:
            streams.append(given.pop(key, StreamSpec(src=key[0], dst=key[1])))
    if given:
        src, dst = next(iter(given))
        raise PlacementError(f"{where}: streams: {src} -> {dst} is not a stream of the pipeline")
    return Application(operators=tuple(ops), streams=tuple(streams))
