"""Calibrate the simulator's micro-batch model from a finished Spark run's progress reports."""

from __future__ import annotations

import json
import statistics
from typing import Any

from elastream.runtime.sim import SimSettings
from elastream.runtime.spark.runtime import SparkEngine

BatchGap = tuple[str, str, float, int]  # operator, batch start (ISO time), overhead s, events


def batch_gaps(engine: SparkEngine) -> list[BatchGap]:
    """For every non-empty micro-batch: its wall time minus its slowest replica's busy time, that
    is what the batch cost beyond the operator's own work (offsets, planning, WAL, scheduling,
    Python workers). Needs the queries' progress history, kept by `spark_session`."""
    per_batch = {(op, batch): (busy, n) for op, batch, busy, n in engine.store.batch_work()}
    gaps: list[BatchGap] = []
    for name, query in engine.queries.items():
        for progress in query.recentProgress:
            batch = _batch_key(progress)
            if batch is None or (name, batch) not in per_batch:
                continue
            busy, n = per_batch[(name, batch)]
            wall = progress["durationMs"]["triggerExecution"] / 1000.0
            gaps.append((name, progress["timestamp"], wall - busy, int(n)))
    return gaps


def _batch_key(progress: dict[str, Any]) -> str | None:
    source = progress["sources"][0]
    start, end = (json.loads(source.get(k) or "null") for k in ("startOffset", "endOffset"))
    if not start or not end or start == end:
        return None
    return f"{start['off']}-{end['off']}"


def calibrated_settings(engine: SparkEngine, **overrides: Any) -> SimSettings:
    """Simulator settings for the same runtime: micro-batch queues and each query's measured mean
    batch overhead (every batch weighs the same, so busy periods dominate); the trigger comes
    from the run configuration, as in the runtime."""
    gaps = batch_gaps(engine)
    by_op: dict[str, list[float]] = {}
    for name, _, gap, _ in gaps:
        by_op.setdefault(name, []).append(gap)
    overall = statistics.fmean(g for _, _, g, _ in gaps) if gaps else 0.0
    return SimSettings(
        queue_model="micro_batch",
        batch_overhead_s=max(0.0, overall),
        batch_overhead_ms={op: max(1e-3, 1000 * statistics.fmean(v)) for op, v in by_op.items()},
        **overrides,
    )
