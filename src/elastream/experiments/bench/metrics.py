"""One results row per run: the metrics of the one table (model/metric_catalog.py), SLA shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from elastream.control.mape import RunResult
from elastream.model.metric_catalog import SLA_FACTORS
from elastream.model.pipeline import Pipeline


def slowest_path_ms(pipeline: Pipeline) -> float:
    """The end-to-end processing time of an event on an idle, over-provisioned pipeline: the
    largest sum of per-event service times (service_time_ms, else et_ms) along a source-to-sink
    path. It is the default processing-time SLO of seed 004 ("the processing duration in a
    constant over-provisioning scenario")."""
    cost = {op.name: 1000.0 * (op.work_s() or 0.0) for op in pipeline.operators}
    best: dict[str, float] = {}
    for name in pipeline.topological_order:
        upstream = [best.get(p, 0.0) for p in pipeline.predecessors(name)]
        best[name] = max(upstream, default=0.0) + cost[name]
    ends = [best[p] for sink in pipeline.sink_names for p in pipeline.predecessors(sink)]
    return max(ends, default=0.0)


def sla_compliance(
    latency_ms: np.ndarray,
    counts: np.ndarray,
    lost: int,
    slo_ms: float,
    factors: Sequence[int] = SLA_FACTORS,
) -> dict[int, float | None]:
    """Share of events whose end-to-end latency is within factor × SLO (seed 004 "Metrics"),
    from a histogram: `counts[j]` events took `latency_ms[j]`.

    The denominator counts the events with a measured latency plus the `lost` ones (dropped by
    timeout, overflow or restart): a dropped event was never produced in time. None without any
    event."""
    total = int(counts.sum()) + lost
    if total == 0:
        return dict.fromkeys(factors)
    return {f: float(counts[latency_ms <= f * slo_ms].sum()) / total for f in factors}


Histogram = tuple[tuple[float, int], ...]  # (end-to-end latency ms, events)


def metrics_row(
    result: RunResult, histogram: Histogram | None, pipeline: Pipeline, slo_ms: float | None
) -> dict[str, Any]:
    """The metric columns of a results row; SLA compliance needs the engine's latency
    histogram (None: the SLA columns stay empty)."""
    s = result.summary
    slo = slo_ms if slo_ms is not None else slowest_path_ms(pipeline)
    lost = result.totals.events_in - result.totals.completed  # never finished: dropped or stuck
    sla: dict[int, float | None] = dict.fromkeys(SLA_FACTORS)
    if histogram is not None and slo > 0:
        table = np.asarray(histogram, dtype=float).reshape(-1, 2)
        sla = sla_compliance(table[:, 0], table[:, 1], lost, slo)
    return {
        "replica_seconds_saved_ratio": s.replica_seconds_saved_ratio,
        "throughput_degradation": s.throughput_degradation,
        "processed_ratio": s.processed_ratio,
        "latency_ms_mean": s.latency_ms_mean,
        "latency_ms_p99": s.latency_ms_p99,
        "slo_ms": slo,
        **{f"sla_{f}x": sla[f] for f in SLA_FACTORS},
        "reconfigurations": s.reconfigurations,
        "replica_seconds": s.replica_seconds,
        "replicas_mean": s.replicas_mean,
        "replicas_max": s.replicas_max,
        "overprovisioned_replicas": s.overprovisioned_replicas,
        "events_in": s.events_in,
        "events_completed": s.events_completed,
        "events_dropped_timeout": s.events_dropped_timeout,
        "events_dropped_overflow": s.events_dropped_overflow,
        "events_dropped_restart": s.events_dropped_restart,
        "intervals": s.intervals,
        "messages": s.messages,
    }
