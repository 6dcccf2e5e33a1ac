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
from elastream.model.metrics import interval_rows as metric_interval_rows
from elastream.model.objective import Objective
from elastream.model.pipeline import Pipeline
from elastream.model.series_columns import INTERVAL_SERIES, OPERATOR_SERIES
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


def service_ms(stats: OperatorStats) -> float | None:
    """The mean time one replica took per event in the interval, ms (None: nothing processed)."""
    return None if stats.service_time_s is None else stats.service_time_s * 1000.0


def per_second(n: float, td: float) -> float:
    return n / td if td > 0 else 0.0


def timeseries_rows(items: Sequence[Interval]) -> list[Row]:
    """One row per interval and operator (columns: TIMESERIES_COLUMNS)."""
    rows: list[Row] = []
    for item in items:
        snap, targets = item.snapshot, item.decision.as_dict()
        reasons, details = dict(item.decision.reasons), dict(item.decision.details)
        for o in snap.operators:
            rows.append(
                {
                    "t": snap.t,
                    "operator": o.name,
                    "received": o.received,
                    "processed": o.processed,
                    "queue": o.queue,
                    "replicas": o.replicas,
                    "service_ms": service_ms(o),
                    "utilization": utilization(o, snap.interval_s),
                    "target": targets.get(o.name),
                    "dropped_timeout": o.dropped_timeout,
                    "dropped_overflow": o.dropped_overflow,
                    "emitted": o.emitted,
                    "failed": o.failed,
                    "min_replicas": o.min_replicas,
                    "max_replicas": o.max_replicas,
                    "reason": reasons.get(o.name, ""),
                    "reason_detail": details.get(o.name, ""),
                }
            )
    return rows


def interval_rows(items: Sequence[Interval], objective: Objective | None = None) -> list[Row]:
    """One row per interval with the system-level figures (columns: INTERVAL_COLUMNS), each
    judged against the run's `objective` if it has one."""
    return metric_interval_rows([item.snapshot for item in items], objective)


class OperatorTotals:
    """Whole-run figures of one operator, folded in interval by interval (constant memory)."""

    def __init__(self, name: str, pipeline: Pipeline) -> None:
        pool = pipeline.operator(name).replicas
        self.pool = (pool.min, pool.max)
        self.intervals = 0
        self.replicas_sum = 0
        self.replicas_max = 0
        self.queue_max = 0
        self.replica_seconds: float = 0
        self.utilization_sum: float = 0
        self.et_sum: float = 0
        self.et_intervals = 0
        self.sums = [0] * len(SUMMED_COUNTS)

    def add(self, snap: Snapshot, o: OperatorStats) -> None:
        weight = snap.intervals
        self.intervals += weight
        self.replicas_sum += o.replicas * weight
        self.utilization_sum += utilization(o, snap.interval_s) * weight
        et = service_ms(o)
        if et is not None:
            self.et_sum += et * weight
            self.et_intervals += weight
        self.replicas_max = max(self.replicas_max, o.replicas)
        self.queue_max = max(self.queue_max, o.queue)
        self.replica_seconds += o.replicas * snap.interval_s
        sums = self.sums  # in the order of SUMMED_COUNTS
        sums[0] += o.received
        sums[1] += o.processed
        sums[2] += o.emitted
        sums[3] += o.dropped_timeout
        sums[4] += o.dropped_overflow
        sums[5] += o.failed

    @property
    def row(self) -> Row:
        """The figures so far (means and maxima None before the first interval)."""
        seen = self.intervals > 0
        counts = dict(zip(SUMMED_COUNTS, self.sums, strict=True))
        return {
            "min_replicas": self.pool[0],
            "max_replicas": self.pool[1],
            "replicas_mean": self.replicas_sum / self.intervals if seen else None,
            "replicas_max": self.replicas_max if seen else None,
            "replica_seconds": self.replica_seconds,
            **counts,
            "dropped": counts["dropped_timeout"] + counts["dropped_overflow"],
            "queue_max": self.queue_max if seen else None,
            "utilization_mean": self.utilization_sum / self.intervals if seen else None,
            "service_ms_mean": self.et_sum / self.et_intervals if self.et_intervals else None,
        }


SUMMED_COUNTS = (
    "received",
    "processed",
    "emitted",
    "dropped_timeout",
    "dropped_overflow",
    "failed",
)


class OperatorAggregates:
    """Every operator's whole-run figures, in topological order, updated per snapshot."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.totals = {name: OperatorTotals(name, pipeline) for name in pipeline.topological_order}

    def add(self, snap: Snapshot) -> None:
        for o in snap.operators:
            self.totals[o.name].add(snap, o)

    def rows(self) -> dict[str, Row]:
        return {name: dict(totals.row) for name, totals in self.totals.items()}


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
    result: RunResult,
    pipeline: Pipeline,
    operators: dict[str, Row],
    *,
    title: str,
    settings: dict,
    objective: Row | None = None,
) -> Row:
    """Everything summary.json holds: the run metrics, what ran, per-operator aggregates and,
    for a run with a latency objective, how many intervals met it (`objective`)."""
    return {
        "title": title,
        "pipeline": pipeline.name,
        "policy": settings.get("policy"),
        **jsonable(result.summary.as_dict()),
        "objective": jsonable(objective and run_objective(objective, result.summary.as_dict())),
        "operators": jsonable(operators),
        "settings": jsonable(settings, "settings"),
    }


def run_objective(block: Row, summary: Row) -> Row:
    """The objective block with the whole run's verdict: `measured_s`, the run's latency
    statistic over every sink event, and `met` (None when no event reached a sink)."""
    ms = summary.get(f"latency_ms_{block['statistic']}")
    measured = None if ms is None else ms / 1000.0
    met = None if measured is None else measured <= block["bound_s"]
    return {**block, "measured_s": measured, "met": met}


# what a merged point keeps of an operator's stats
MERGED_FIELDS = (
    "name",
    "replicas",
    "min_replicas",
    "max_replicas",
    "received_from",
    "queue",
    "service_time_s",
    "received",
    "processed",
    "emitted",
    "busy_s",
    "dropped_timeout",
    "dropped_overflow",
    "failed",
)
# the snapshot's figures a merged point adds up
SNAPSHOT_SUMS = (
    "completed",
    "sink_events",
    "dropped_restart",
    "query_restarts",
    "intervals",
    "idle_intervals",
)


def _weighted(a: float | None, wa: float, b: float | None, wb: float) -> float | None:
    """The mean of two optional values weighted by wa and wb (None where neither has weight)."""
    parts = [(v, w) for v, w in ((a, wa), (b, wb)) if v is not None and w > 0]
    total = sum(w for _, w in parts)
    return sum(v * w for v, w in parts) / total if total else None


class _MergedStats:
    """One operator over consecutive spans, merged one span at a time: counts add up; replicas
    and queue keep the larger (a downsampled plot shows the peaks); et is weighted by the
    events processed. Built into OperatorStats once, at the end (`stats`)."""

    __slots__ = (*MERGED_FIELDS, "original")

    def __init__(self, o: OperatorStats) -> None:
        self.original: OperatorStats | None = o  # not merged with anything yet
        self.name, self.replicas, self.queue = o.name, o.replicas, o.queue
        self.min_replicas, self.max_replicas = o.min_replicas, o.max_replicas
        self.received_from, self.service_time_s = o.received_from, o.service_time_s
        self.received, self.processed, self.emitted = o.received, o.processed, o.emitted
        self.busy_s, self.failed = o.busy_s, o.failed
        self.dropped_timeout, self.dropped_overflow = o.dropped_timeout, o.dropped_overflow

    def add(self, b: OperatorStats) -> None:
        """Merge in the next span's stats (the name, pool and senders are b's)."""
        self.original = None
        self.service_time_s = _weighted(
            self.service_time_s, self.processed, b.service_time_s, b.processed
        )
        self.name, self.min_replicas, self.max_replicas = b.name, b.min_replicas, b.max_replicas
        self.replicas = max(self.replicas, b.replicas)
        self.queue = max(self.queue, b.queue)
        self.received_from = b.received_from
        self.received += b.received
        self.processed += b.processed
        self.emitted += b.emitted
        self.busy_s += b.busy_s
        self.dropped_timeout += b.dropped_timeout
        self.dropped_overflow += b.dropped_overflow
        self.failed += b.failed

    def stats(self) -> OperatorStats:
        if self.original is not None:
            return self.original
        return OperatorStats(
            name=self.name,
            replicas=self.replicas,
            min_replicas=self.min_replicas,
            max_replicas=self.max_replicas,
            received=self.received,
            received_from=self.received_from,
            processed=self.processed,
            emitted=self.emitted,
            queue=self.queue,
            service_time_s=self.service_time_s,
            busy_s=self.busy_s,
            dropped_timeout=self.dropped_timeout,
            dropped_overflow=self.dropped_overflow,
            failed=self.failed,
        )


def merge_run(items: Sequence[Interval]) -> Interval:
    """Consecutive intervals as one point of a downsampled plot (the last one's decision):
    the same as merging them pairwise from the first (merge_intervals), each figure computed
    in the same order, without building the points in between."""
    if len(items) == 1:
        return items[0]
    first = items[0].snapshot
    td, sources = first.interval_s, first.sources
    ops = {o.name: _MergedStats(o) for o in first.operators}
    latency, counts = first.latency_ms_mean, [getattr(first, name) for name in SNAPSHOT_SUMS]
    for item in items[1:]:
        sb = item.snapshot
        td = td + sb.interval_s
        before = dict(sources)
        sources = tuple((name, before.get(name, 0) + n) for name, n in sb.sources)
        merged = {}
        for o in sb.operators:
            known = ops.get(o.name)
            if known is None:
                known = _MergedStats(o)
            else:
                known.add(o)
            merged[o.name] = known
        ops = merged
        sink = counts[SNAPSHOT_SUMS.index("sink_events")]
        latency = _weighted(latency, sink, sb.latency_ms_mean, sb.sink_events)
        counts = [c + getattr(sb, name) for c, name in zip(counts, SNAPSHOT_SUMS, strict=True)]
    last = items[-1]
    snapshot = Snapshot(
        t=last.snapshot.t,
        interval_s=td,
        sources=sources,
        operators=tuple(m.stats() for m in ops.values()),
        latency_ms_mean=latency,
        source_backlog=last.snapshot.source_backlog,
        **dict(zip(SNAPSHOT_SUMS, counts, strict=True)),
    )
    return Interval(snapshot, last.decision)


def merge_intervals(a: Interval, b: Interval) -> Interval:
    """Two consecutive intervals as one point of a downsampled plot (b's decision)."""
    return merge_run((a, b))
