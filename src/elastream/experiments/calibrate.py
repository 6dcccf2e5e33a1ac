"""Calibrate the simulator's micro-batch model from a finished Spark run's progress reports."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from elastream.prediction.batch_overhead import BatchRecord, OverheadModel, fit_overhead
from elastream.runtime.sim import SimSettings
from elastream.runtime.sim.profile import profile_pipeline
from elastream.runtime.spark.runtime import SparkEngine

# The simulator's micro-batch model (an independent batch loop per operator, Eq. O1's contention
# term between them) is the `operator` layout's; the `pipeline` layout's one batch loop for all
# operators is not modelled (docs/simulator.md, "Agreement with the Spark runtime").
CALIBRATED_LAYOUT = "operator"


def batch_records(engine: SparkEngine, et_s: Mapping[str, float]) -> list[BatchRecord]:
    """Every non-empty micro-batch of every query: when it started, its wall time (Spark's
    triggerExecution), its task count, its largest share's events times `et_s[op]` (the
    per-event time the simulator uses) and its offset commit (after the outputs have left).
    Needs the queries' progress history, kept by `spark_session`."""
    work = {(w.op, w.batch): w for w in engine.store.batch_work()}
    records: list[BatchRecord] = []
    for name, query in engine.queries.items():
        for progress in query.recentProgress:
            batch = work.get((name, _batch_key(progress)))
            if batch is None:
                continue
            records.append(
                BatchRecord(
                    op=name,
                    start_s=_epoch_s(progress["timestamp"]),
                    wall_s=progress["durationMs"]["triggerExecution"] / 1000.0,
                    work_s=batch.largest * et_s[name],
                    replicas=batch.tasks,
                    commit_s=progress["durationMs"].get("commitOffsets", 0) / 1000.0,
                )
            )
    return records


def _batch_key(progress: dict[str, Any]) -> str | None:
    """The batch's name in the queue store ("start-end" offsets); None for an empty batch."""
    source = progress["sources"][0]
    start, end = (json.loads(source.get(k) or "null") for k in ("startOffset", "endOffset"))
    if not start or not end or start == end:
        return None
    return f"{start['off']}-{end['off']}"


def _epoch_s(stamp: str) -> float:
    """Spark's progress timestamp (ISO 8601, UTC, 'Z') in seconds since the epoch."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def overhead_settings(model: OverheadModel) -> dict[str, Any]:
    """The SimSettings fields of a fitted batch-overhead model (Eq. O1). Eq. O2's spread is left
    out: measured against Spark it made the figures depend on the seed and agree no better
    (docs/simulator.md); `model.cv` is there for whoever wants it (`batch_overhead_cv`)."""
    return {
        "batch_overhead_ms": {op: 1000 * a for op, a in model.base_s.items()},
        "batch_overhead_per_replica_ms": 1000 * model.per_replica_s,
        "batch_overhead_per_busy_query_ms": 1000 * model.per_busy_query_s,
        "batch_commit_share": model.commit_share,
    }


@dataclass(frozen=True)
class Calibration:
    """The simulator's settings for a Spark run, with the batches and the model they came from."""

    settings: SimSettings
    records: list[BatchRecord]
    model: OverheadModel


def calibrate(engine: SparkEngine, **overrides: Any) -> Calibration:
    """Simulator settings for the same runtime: micro-batch queues and the batch overhead model
    (Eq. O1) fitted to every batch of the run, against the per-event times of the simulator's
    own profile of the pipeline; the trigger comes from the run configuration, as in the
    runtime. `overrides` are further settings (they win over the fitted ones)."""
    layout = engine.config.spark.layout
    if layout != CALIBRATED_LAYOUT:
        raise ValueError(
            f"calibrate: the run used spark.layout {layout!r}; the simulator's micro-batch model "
            f"is calibrated from a run in spark.layout {CALIBRATED_LAYOUT!r} (one query per "
            "operator): run it with that layout"
        )
    settings = SimSettings(queue_model="micro_batch", **overrides)
    seed = engine.config.seed if settings.seed is None else settings.seed
    profile = profile_pipeline(engine.pipeline, settings, seed)
    et = {name: profile.op(name).et_s for name in engine.pipeline.operator_names}
    records = batch_records(engine, et)
    model = fit_overhead(records)
    fitted = overhead_settings(model)
    update = {k: v for k, v in fitted.items() if k not in overrides}
    return Calibration(settings.model_copy(update=update), records, model)
