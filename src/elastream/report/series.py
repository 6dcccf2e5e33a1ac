"""Plain tables derived from a run: interval×operator rows, interval rows, operator aggregates."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, is_dataclass
from enum import Enum
from pathlib import PurePath
from typing import Any

from elastream.control.mape import RunResult
from elastream.control.policy import Decision
from elastream.model.metrics import INTERVAL_SERIES, OPERATOR_SERIES
from elastream.model.metrics import interval_rows as metric_interval_rows
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import OperatorStats, Snapshot

TIMESERIES_COLUMNS = tuple(m.name for m in OPERATOR_SERIES)
INTERVAL_COLUMNS = tuple(m.name for m in INTERVAL_SERIES)

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Interval:
    """One MAPE interval: what was measured and what was decided at its end."""

    snapshot: Snapshot
    decision: Decision


def intervals(result: RunResult, pipeline: Pipeline) -> list[Interval]:
    """Pair snapshots with decisions, checking they describe this pipeline."""
    snaps, decs = result.snapshots, result.decisions
    if len(snaps) != len(decs):
        raise ValueError(
            f"run result has {len(snaps)} snapshots but {len(decs)} decisions "
            "(one decision per interval expected)"
        )
    known = set(pipeline.operator_names)
    for i, snap in enumerate(snaps):
        for stats in snap.operators:
            if stats.name not in known:
                raise ValueError(
                    f"snapshot {i} (t={snap.t}): operator {stats.name!r} "
                    f"is not in pipeline {pipeline.name!r}"
                )
    return [Interval(s, d) for s, d in zip(snaps, decs, strict=True)]


def utilization(stats: OperatorStats, td: float) -> float:
    """Mean utilisation of the operator's active replicas during the interval.

    PSPS Eq. 5: U_ij(t) = μ_ij(t)·et_i / td for replica j; the operator's figure is the mean over
    its r_i active replicas. Without per-replica figures the measured busy time gives the same
    mean: (Σ_j busy_ij) / (r_i · td)."""
    if stats.utilization:
        return stats.mean_utilization
    if stats.replicas <= 0 or td <= 0:
        return 0.0
    return stats.busy_s / (stats.replicas * td)


def et_ms(stats: OperatorStats) -> float | None:
    return None if stats.et_s is None else stats.et_s * 1000.0


def per_second(n: float, td: float) -> float:
    return n / td if td > 0 else 0.0


def timeseries_rows(items: Sequence[Interval]) -> list[Row]:
    """One row per interval and operator (columns: TIMESERIES_COLUMNS)."""
    rows: list[Row] = []
    for item in items:
        snap, targets = item.snapshot, item.decision.as_dict()
        for o in snap.operators:
            rows.append(
                {
                    "t": snap.t,
                    "operator": o.name,
                    "received": o.received,
                    "processed": o.processed,
                    "queue": o.queue,
                    "replicas": o.replicas,
                    "et_ms": et_ms(o),
                    "utilization": utilization(o, snap.td),
                    "target": targets.get(o.name),
                    "dropped_timeout": o.dropped_timeout,
                    "dropped_overflow": o.dropped_overflow,
                    "emitted": o.emitted,
                    "min_replicas": o.min_replicas,
                    "max_replicas": o.max_replicas,
                    "reason": item.decision.reason(o.name),
                }
            )
    return rows


def interval_rows(items: Sequence[Interval]) -> list[Row]:
    """One row per interval with the system-level figures (columns: INTERVAL_COLUMNS)."""
    return metric_interval_rows([item.snapshot for item in items])


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _aggregate(name: str, snaps: Sequence[Snapshot], pipeline: Pipeline) -> Row:
    pool = pipeline.operator(name).replicas
    seen = [(s, s.op(name)) for s in snaps if any(o.name == name for o in s.operators)]
    replicas = [o.replicas for _, o in seen]
    ets = [et for _, o in seen if (et := et_ms(o)) is not None]
    timeout = sum(o.dropped_timeout for _, o in seen)
    overflow = sum(o.dropped_overflow for _, o in seen)
    return {
        "min_replicas": pool.min,
        "max_replicas": pool.max,
        "replicas_mean": _mean(replicas),
        "replicas_max": max(replicas, default=None),
        "replica_seconds": sum(o.replicas * s.td for s, o in seen),
        "received": sum(o.received for _, o in seen),
        "processed": sum(o.processed for _, o in seen),
        "emitted": sum(o.emitted for _, o in seen),
        "dropped": timeout + overflow,
        "dropped_timeout": timeout,
        "dropped_overflow": overflow,
        "queue_max": max((o.queue for _, o in seen), default=None),
        "utilization_mean": _mean([utilization(o, s.td) for s, o in seen]),
        "et_ms_mean": _mean(ets),
    }


def operator_aggregates(items: Sequence[Interval], pipeline: Pipeline) -> dict[str, Row]:
    """Whole-run figures per operator, in topological order."""
    snaps = [item.snapshot for item in items]
    return {name: _aggregate(name, snaps, pipeline) for name in pipeline.topological_order}


def jsonable(value: Any, where: str = "value") -> Any:
    """Plain JSON data from settings-like values (paths and enums as text, NaN/inf as null)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Enum):
        return jsonable(value.value, where)
    if isinstance(value, PurePath):
        return str(value)
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value), where)
    if hasattr(value, "model_dump"):  # pydantic models
        return jsonable(value.model_dump(mode="json"), where)
    raise TypeError(f"{where} = {value!r} ({type(value).__name__}) cannot be written as JSON")


def summary_document(
    result: RunResult, pipeline: Pipeline, items: Sequence[Interval], *, title: str, settings: dict
) -> Row:
    """Everything summary.json holds: the run metrics, what ran, and per-operator aggregates."""
    return {
        "title": title,
        "pipeline": pipeline.name,
        "policy": settings.get("policy"),
        **jsonable(result.summary.as_dict()),
        "operators": jsonable(operator_aggregates(items, pipeline)),
        "settings": jsonable(settings, "settings"),
    }
