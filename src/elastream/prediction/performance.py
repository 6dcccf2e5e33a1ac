"""Performance prediction of a pipeline at a proposed parallelism and source rate (IV-B, V-E)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from elastream.prediction.cpu import (
    BatchCpuModel,
    core_capped_rate,
    effective_servers,
    fit_batch_cpu,
    fit_psi,
    predict_cpu,
)
from elastream.prediction.graph import (
    ANY_STREAM,
    Edge,
    Grouping,
    MeasuredPoint,
    ModelError,
    PipelineGraph,
    splits_evenly,
)
from elastream.prediction.queueing import sojourn_time
from elastream.prediction.throughput import (
    SATURATION_TOLERANCE,
    InstanceFit,
    backpressure_risk,
    even_shares,
    fit_instance,
    keyed_source_rates,
)

RANGE_TOLERANCE = 1e-9  # relative: a rate equal to the highest measured one is within range


@dataclass(frozen=True)
class ComponentModel:
    """A component fitted from its replicas' history: curve, ψ, service time, key bias, and
    the per-batch CPU model (Eq. C1) when the history counts micro-batches."""

    name: str
    grouping: Grouping
    instance: InstanceFit
    psi: float | None
    service_time: float | None
    service_scv: float | None
    key_shares: Mapping[int, tuple[float, ...]]
    batch_cpu: BatchCpuModel | None = None

    def shares(self, parallelism: int) -> tuple[tuple[float, ...], str]:
        """Per-replica shares of the source rate and the equation behind them.

        Key grouping at a measured parallelism keeps the measured bias (Eq. 10–11); at a new
        parallelism the hash-modulo routing cannot be inverted (IV-B2b), so the prediction is
        the uniform one of Eq. 9, flagged in `basis`.
        """
        if splits_evenly(self.grouping):
            return even_shares(parallelism), "Eq. 8-9 (even split)"
        if parallelism in self.key_shares:
            return self.key_shares[parallelism], "Eq. 10-11 (measured key bias)"
        return even_shares(parallelism), "Eq. 9 (key grouping at a new parallelism: uniform)"


def _key_shares(points: Sequence[MeasuredPoint]) -> dict[int, tuple[float, ...]]:
    """Measured source share per replica, per parallelism (the steady bias of IV-B2b)."""
    shares: dict[int, tuple[float, ...]] = {}
    for p in sorted({pt.parallelism for pt in points}):
        totals = np.zeros(p)
        for pt in points:
            if pt.parallelism == p:
                totals[pt.replica] += pt.source_rate
        if totals.sum() > 0:
            shares[p] = tuple(float(x) for x in totals / totals.sum())
    return shares


def _service_stats(points: Sequence[MeasuredPoint]) -> tuple[float | None, float | None]:
    """Mean per-event service time Σbusy/Σinput, and its SCV from the measured variance."""
    busy = [p for p in points if p.busy is not None and p.input_rate > 0]
    if not busy:
        return None, None
    mean = sum(p.busy or 0.0 for p in busy) / sum(p.input_rate for p in busy)
    var = [p.service_time_var for p in busy if p.service_time_var is not None]
    scv = float(np.mean(var)) / mean**2 if var and mean > 0 else None
    return (mean if mean > 0 else None), scv


def mean_service_time(points: Sequence[MeasuredPoint]) -> float | None:
    """Mean per-event service time in seconds, Σbusy/Σinput (None: never busy)."""
    return _service_stats(points)[0]


def fit_component(
    name: str,
    grouping: Grouping,
    points: Sequence[MeasuredPoint],
    tolerance: float = SATURATION_TOLERANCE,
) -> ComponentModel:
    """Fit one component from per-replica points of any number of runs and parallelisms (a
    point is saturated when it admitted less than 1 − `tolerance` of its source rate, or
    flagged backpressure).

    A component never measured in saturation keeps SP = inf: its risk is "unknown" above the
    highest source rate measured.
    """
    service_time, scv = _service_stats(points)
    return ComponentModel(
        name=name,
        grouping=grouping,
        instance=fit_instance(
            points, what=f"component {name!r}", tolerance=tolerance, require_saturation=False
        ),
        psi=fit_psi(points, what=f"component {name!r}"),
        service_time=service_time,
        service_scv=scv,
        key_shares=_key_shares(points) if grouping is Grouping.KEY_HASH else {},
        batch_cpu=fit_batch_cpu(points, what=f"component {name!r}"),
    )


def fit_pipeline(
    graph: PipelineGraph,
    points: Mapping[str, Sequence[MeasuredPoint]],
    tolerance: float = SATURATION_TOLERANCE,
) -> dict[str, ComponentModel]:
    """Fit every component of the graph; a component without history is an error naming it."""
    models = {}
    for comp in graph.components:
        if not points.get(comp):
            raise ModelError(f"pipeline {graph.name!r}: no history for component {comp!r}")
        models[comp] = fit_component(comp, graph.grouping_into(comp), points[comp], tolerance)
    return models


@dataclass(frozen=True)
class Host:
    """The machine the replicas share: C cores (None: a core per replica, as in Caladrius)."""

    cores: float | None = None
    arrival_scv: float = 1.0
    headroom: float = 0.1


@dataclass(frozen=True)
class ComponentPrediction:
    """Predicted rates (events/s), saturation point, risk, CPU (cores) and latency (s)."""

    name: str
    parallelism: int
    source_rate: float
    input_rate: float
    output_rates: Mapping[str, float]
    saturation_point: float
    saturation_throughput: float
    risk: str
    cpu: float | None
    latency: float | None
    basis: str
    core_limited: bool


@dataclass(frozen=True)
class Prediction:
    """The pipeline at one parallelism and source rate: Eq. 12–14 plus CPU and latency."""

    components: Mapping[str, ComponentPrediction]
    source_rate: float
    saturation_point: float
    risk: str
    bottleneck: str | None
    critical_path: tuple[str, ...]
    critical_path_output: float
    latency: float | None
    cpu: float | None


def component_saturation_point(model: ComponentModel, p: int, cores: float | None) -> float:
    """SP_c(p): the component's source rate at which its first replica (or the host) saturates."""
    return _capacity(model, p, cores)[0]


def _capacity(model: ComponentModel, p: int, cores: float | None) -> tuple[float, bool, str]:
    """Component saturation point SP_c(p) (source-rate units), whether cores cap it, basis."""
    shares, basis = model.shares(p)
    sp = model.instance.sp
    uncapped = min(sp / w for w in shares if w > 0) if any(w > 0 for w in shares) else math.inf
    capped = core_capped_rate(uncapped, model.psi, cores)
    return capped, capped < uncapped, basis


def _admitted(model: ComponentModel, p: int, source: float, cores: float | None) -> float:
    """Eq. 7 with Eq. 8 or Eq. 10 shares: Σ_i min(t_λ(i), SP), then the host cap."""
    shares, _ = model.shares(p)
    per_replica = keyed_source_rates(source, shares) if source > 0 else (0.0,) * p
    return core_capped_rate(sum(min(t, model.instance.sp) for t in per_replica), model.psi, cores)


def _latency(model: ComponentModel, p: int, input_rate: float, cores: float | None) -> float | None:
    """Sojourn time at the admitted rate: G/G/c if the SCV is known, else M/M/c.

    A saturated component (source above SP) has a growing backlog: no steady-state latency.
    """
    if model.service_time is None:
        return None
    servers = effective_servers(p, model.psi, model.service_time, cores)
    mu = (1.0 / model.service_time) * servers / p  # replicas beyond the cores slow each other
    value = sojourn_time(input_rate, mu, p, 1.0, model.service_scv)
    return float(value) if math.isfinite(value) else None


def linear_gains(graph: PipelineGraph, models: Mapping[str, ComponentModel]) -> dict[str, float]:
    """Source rate of each component per unit of t_0 in the linear regime (α products, Eq. 12)."""
    gains = dict.fromkeys(graph.components, 0.0)
    for src in graph.sources():
        gains[src] = 1.0
    for comp in graph.topological_order():
        for edge in graph.outgoing(comp):
            alpha = models[comp].instance.alpha_streams.get(edge.stream, 0.0)
            gains[edge.target] += alpha * gains[comp]
    return gains


def predict(
    graph: PipelineGraph,
    models: Mapping[str, ComponentModel],
    parallelism: Mapping[str, int],
    source_rate: float,
    host: Host = Host(),
) -> Prediction:
    """Chain the component models through the graph at source rate t_0 (Eq. 12, over a DAG).

    Each source component is offered t_0. The topology saturation point t'_0 = min_c SP_c/g_c
    inverts the chain (Eq. 13); the host adds t_0 ≤ C / Σ_c ψ_c·g_c. Risk by Eq. 14.
    """
    if source_rate < 0:
        raise ModelError(f"source rate must be ≥ 0, got {source_rate}")
    for comp in graph.components:
        if parallelism.get(comp, 0) < 1:
            raise ModelError(f"parallelism of component {comp!r} must be ≥ 1")
    unknown = sorted(set(parallelism) - set(graph.components))
    if unknown:
        raise ModelError(f"parallelism names unknown component(s): {', '.join(unknown)}")
    incoming: dict[str, float] = dict.fromkeys(graph.components, 0.0)
    for src in graph.sources():
        incoming[src] = source_rate
    gains = linear_gains(graph, models)
    preds: dict[str, ComponentPrediction] = {}
    for comp in graph.topological_order():
        preds[comp] = _predict_component(models[comp], parallelism[comp], incoming[comp], host)
        for edge in graph.outgoing(comp):
            incoming[edge.target] += _edge_rate(graph, preds[comp], edge)
    limits = {c: preds[c].saturation_point / g for c, g in gains.items() if g > 0}
    bottleneck: str | None = min(limits, key=lambda c: limits[c])
    t0_sat = limits[bottleneck]
    cpu_per_t0 = sum(models[c].psi * g for c, g in gains.items() if models[c].psi is not None)
    if host.cores is not None and cpu_per_t0 > 0 and host.cores / cpu_per_t0 < t0_sat:
        t0_sat, bottleneck = host.cores / cpu_per_t0, "host"
    if math.isinf(t0_sat):
        bottleneck = None
    path = _critical_path(graph, bottleneck, limits)
    cpus = [p.cpu for p in preds.values()]
    return Prediction(
        components=preds,
        source_rate=source_rate,
        saturation_point=t0_sat,
        risk=_topology_risk(source_rate, t0_sat, host.headroom, preds.values()),
        bottleneck=bottleneck,
        critical_path=path,
        critical_path_output=_processed(preds[path[-1]]),
        latency=_path_latency(graph, preds),
        cpu=None if any(c is None for c in cpus) else float(sum(c or 0.0 for c in cpus)),
    )


def _topology_risk(
    t0: float, t0_sat: float, headroom: float, preds: Iterable[ComponentPrediction]
) -> str:
    """Eq. 14 at t'_0; "unknown" when it is low only for want of a measured saturation."""
    risk = backpressure_risk(t0, t0_sat, headroom)
    if risk == "low" and any(p.risk == "unknown" for p in preds):
        return "unknown"
    return risk


def component_risk(model: ComponentModel, p: int, source: float, sp: float, h: float) -> str:
    """Eq. 14 for one component; beyond the measured range of an unsaturated one: unknown."""
    if not model.instance.saturation_seen and math.isinf(sp):
        shares, _ = model.shares(p)
        within = source * max(shares) <= model.instance.max_source * (1 + RANGE_TOLERANCE)
        return "low" if within else "unknown"
    return backpressure_risk(source, sp, h)


def _predict_component(
    model: ComponentModel, p: int, source: float, host: Host
) -> ComponentPrediction:
    sp, core_limited, basis = _capacity(model, p, host.cores)
    admitted = _admitted(model, p, source, host.cores)
    return ComponentPrediction(
        name=model.name,
        parallelism=p,
        source_rate=source,
        input_rate=admitted,
        output_rates={s: a * admitted for s, a in model.instance.alpha_streams.items()},
        saturation_point=sp,
        saturation_throughput=model.instance.alpha * sp,
        risk=component_risk(model, p, source, sp, host.headroom),
        cpu=None if model.psi is None else predict_cpu(model.psi, admitted),
        latency=None if source > sp else _latency(model, p, admitted, host.cores),
        basis=basis,
        core_limited=core_limited,
    )


def _critical_path(
    graph: PipelineGraph, bottleneck: str | None, limits: Mapping[str, float]
) -> tuple[str, ...]:
    """The path through the bottleneck (IV-B3); for the host, the path with the lowest limit."""
    paths = graph.paths()
    through = [p for p in paths if bottleneck in p]
    if through:
        return through[0]
    return min(paths, key=lambda p: min(limits.get(c, math.inf) for c in p))


def _edge_rate(graph: PipelineGraph, pred: ComponentPrediction, edge: Edge) -> float:
    """What a component sends along one edge. Outputs measured over all streams together
    (ANY_STREAM, the runtime's history) go whole to the edges of its one output stream; with
    several streams they cannot be split, and that is an error rather than a guess."""
    if edge.stream in pred.output_rates or ANY_STREAM not in pred.output_rates:
        return pred.output_rates.get(edge.stream, 0.0)
    streams = {e.stream for e in graph.outgoing(pred.name)}
    if len(streams) > 1:
        raise ModelError(
            f"component {pred.name!r}: outputs were measured over all streams together, but it "
            f"sends on {len(streams)} streams ({', '.join(sorted(streams))}): record per-stream "
            "output rates to predict them"
        )
    return pred.output_rates[ANY_STREAM]


def _processed(pred: ComponentPrediction) -> float:
    """A path's output: the last component's output, or, for a sink that emits nothing (the
    word count's counter), what it processes (V-D)."""
    emitted = float(sum(pred.output_rates.values()))
    return emitted if emitted > 0 else pred.input_rate


def _path_latency(graph: PipelineGraph, preds: Mapping[str, ComponentPrediction]) -> float | None:
    """Topology latency: the largest sum of component sojourn times over source-sink paths."""
    totals = []
    for path in graph.paths():
        parts = [preds[c].latency for c in path]
        if any(x is None for x in parts):
            return None
        totals.append(sum(x or 0.0 for x in parts))
    return max(totals) if totals else None
