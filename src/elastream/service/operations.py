"""The one implementation of forecasts and what-if predictions, behind the service and the CLI."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from elastream.history import HistoryRow, HistoryStore, points_by_operator, source_series
from elastream.prediction.forecasting import FitCache
from elastream.prediction.graph import ModelError, PipelineGraph
from elastream.prediction.performance import (
    ComponentModel,
    Host,
    Prediction,
    fit_pipeline,
    predict,
)
from elastream.service.graphs import GraphDirectory, graph_from_spec
from elastream.service.schemas import (
    ComponentResult,
    ForecastRequest,
    ForecastResult,
    ForecastSpec,
    GraphSpec,
    HistorySelection,
    PredictionRequest,
    PredictionResult,
)

GraphResolver = Callable[[str], PipelineGraph]


def _window(rows: list[HistoryRow], history_s: float | None) -> list[HistoryRow]:
    """Keep the last `history_s` seconds of each run."""
    if history_s is None:
        return rows
    ends: dict[str, float] = {}
    for row in rows:
        ends[row.run_id] = max(ends.get(row.run_id, -math.inf), row.t + row.interval_s)
    return [r for r in rows if r.t >= ends[r.run_id] - history_s]


class _Lru:
    """A small thread-safe least-recently-used map (values are computed outside the lock)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        with self._lock:
            self._items[key] = value
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


@dataclass
class Modeller:
    """Fits models from the history store and answers forecast and prediction requests.

    History reads and fitted pipeline models are cached by the store's version and the
    selection, so new rows invalidate them and repeated what-ifs do not refit.
    """

    store: HistoryStore
    graphs: GraphResolver = field(default_factory=lambda: GraphDirectory(None))
    cache: FitCache = field(default_factory=FitCache)
    _rows: _Lru = field(default_factory=lambda: _Lru(8), repr=False)
    _fits: _Lru = field(default_factory=lambda: _Lru(16), repr=False)

    def graph(self, pipeline: str, inline: GraphSpec | None) -> PipelineGraph:
        return graph_from_spec(pipeline, inline) if inline else self.graphs(pipeline)

    def _key(self, sel: HistorySelection, extra: Hashable) -> tuple:
        runs = None if sel.run_ids is None else tuple(sel.run_ids)
        return (self.store.version(), sel.pipeline, runs, sel.history_s, extra)

    def rows(self, sel: HistorySelection, operators: list[str] | None = None) -> list[HistoryRow]:
        key = self._key(sel, None if operators is None else tuple(operators))
        return self._rows.get(key, lambda: self._read(sel, operators))

    def _read(self, sel: HistorySelection, operators: list[str] | None) -> list[HistoryRow]:
        rows = self.store.rows(sel.pipeline, sel.run_ids, operators)
        if not rows:
            raise ModelError(f"history: no rows for pipeline {sel.pipeline!r} in this selection")
        return _window(rows, sel.history_s)

    def forecast(self, req: ForecastRequest) -> ForecastResult:
        sources = req.sources or list(self.graph(req.pipeline, req.graph).sources())
        return self.forecast_sources(req, sources, req.forecast)

    def forecast_sources(
        self, sel: HistorySelection, sources: list[str], spec: ForecastSpec
    ) -> ForecastResult:
        series = source_series(self.rows(sel, sources), sources)
        horizon = max(1, math.ceil(spec.horizon_s / series.step_s))
        fc = self.cache.fit(series, spec.model, dict(spec.params)).forecast(horizon)
        return ForecastResult(
            model=spec.model,
            step_s=fc.step_s,
            start_s=fc.start_s,
            level=fc.level,
            point=[float(x) for x in fc.point],
            lower=[float(x) for x in fc.lower],
            upper=[float(x) for x in fc.upper],
        )

    def fit(self, sel: HistorySelection, graph: PipelineGraph) -> dict[str, ComponentModel]:
        return self._fitted(sel, graph)[0]

    def _fitted(
        self, sel: HistorySelection, graph: PipelineGraph
    ) -> tuple[dict[str, ComponentModel], dict[str, int]]:
        """The fitted components and each one's last measured parallelism."""

        def make() -> tuple[dict[str, ComponentModel], dict[str, int]]:
            rows = self.rows(sel, list(graph.components))
            last = {r.operator: r.parallelism for r in sorted(rows, key=lambda r: r.t)}
            return fit_pipeline(graph, points_by_operator(rows)), last

        return self._fits.get(self._key(sel, graph), make)

    def predict(self, req: PredictionRequest) -> PredictionResult:
        graph = self.graph(req.pipeline, req.graph)
        unknown = sorted(set(req.parallelism) - set(graph.components))
        if unknown:
            raise ModelError(f"parallelism names unknown component(s): {', '.join(unknown)}")
        models, last = self._fitted(req, graph)
        parallelism = {c: req.parallelism.get(c, last.get(c, 1)) for c in graph.components}
        rate = req.source_rate
        if rate is None:
            assert req.forecast is not None  # the request's validator guarantees one of them
            fc = self.forecast_sources(req, list(graph.sources()), req.forecast)
            rate = max(0.0, max(fc.upper))
        host = Host(cores=req.cores, arrival_scv=req.arrival_scv, headroom=req.headroom)
        return to_result(predict(graph, models, parallelism, rate, host), models)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _fit_fields(model: ComponentModel) -> dict:
    fit = model.instance
    return {
        "output_per_input": fit.alpha,
        "fit_error": fit.output_fit_error,
        "replica_saturation_point": _finite(fit.sp),
        "replica_saturation_throughput": _finite(fit.st),
        "input_fit_error": fit.input_fit_error,
        "points_below": fit.points_below,
        "points_above": fit.points_above,
    }


def to_result(pred: Prediction, models: dict[str, ComponentModel]) -> PredictionResult:
    return PredictionResult(
        source_rate=pred.source_rate,
        saturation_point=_finite(pred.saturation_point),
        risk=pred.risk,  # type: ignore[arg-type]
        bottleneck=pred.bottleneck,
        critical_path=list(pred.critical_path),
        critical_path_output=pred.critical_path_output,
        latency_s=pred.latency,
        cpu=pred.cpu,
        components=[
            ComponentResult(
                name=c.name,
                parallelism=c.parallelism,
                source_rate=c.source_rate,
                input_rate=c.input_rate,
                output_rates=dict(c.output_rates),
                saturation_point=_finite(c.saturation_point),
                saturation_throughput=_finite(c.saturation_throughput),
                risk=c.risk,  # type: ignore[arg-type]
                cpu=c.cpu,
                latency_s=c.latency,
                basis=c.basis,
                core_limited=c.core_limited,
                **_fit_fields(models[c.name]),
            )
            for c in pred.components.values()
        ],
    )
