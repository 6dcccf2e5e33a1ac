"""Calibrate the simulator's micro-batch models from finished Spark runs: each operator's
steady per-event time as Spark measured it, the warm-up its replicas pay on their first share
(`warmups`: the busy time beyond the steady one where replicas first served; `warmup_ms`), and
the batches' fixed costs (Eq. O1 per operator query, Eq. P1 for the pipeline's one query) fitted
to the runs' progress reports.

`PYTHONPATH=src python -m reproductions.simulator.agreement` runs the agreement workloads on
Spark, fits these constants over their runs and writes them (docs/simulator.md, "Agreement with
the Spark runtime")."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from elastream.control.mape import RunResult
from elastream.model.snapshot import OperatorStats, Snapshot
from elastream.prediction.batch_overhead import BatchRecord, OverheadModel, fit_overhead
from elastream.runtime.queues.records import BatchWork
from elastream.runtime.sim import SimSettings
from elastream.runtime.sim.batch import pack
from elastream.runtime.spark.runtime import PIPELINE_QUERY, SparkEngine


@dataclass(frozen=True)
class SparkRecord:
    """What calibration reads from a finished Spark run, taken from its engine (so it can be
    kept, pickled and fitted again without Spark): its layout, its operators, every query's
    progress reports, the store's work per (operator, batch) and per operator its shares' events
    and busy seconds."""

    layout: str
    operators: tuple[str, ...]
    progress: dict[str, list[dict[str, Any]]]  # query -> its progress reports (JSON)
    batch_work: list[BatchWork]
    work: dict[str, tuple[int, float]]  # operator -> (events, busy seconds) of all its shares
    snapshots: tuple[Snapshot, ...] = ()  # the run's intervals (the warm-up is read from them)

    @classmethod
    def of(cls, engine: SparkEngine, result: RunResult) -> SparkRecord:
        """The record of a run that ended (the engine keeps its store and queries) with its
        result."""
        ops = tuple(engine.pipeline.operator_names)
        work = {}
        for op in ops:
            stats = engine.store.task_stats(op, float("-inf"), float("inf")).values()
            work[op] = (sum(w.events for w in stats), sum(w.busy_s for w in stats))
        return cls(
            layout=engine.config.spark.layout,
            operators=ops,
            progress={
                name: [json.loads(p.json) for p in query.recentProgress]
                for name, query in engine.queries.running.items()
            },
            batch_work=list(engine.store.batch_work()),
            work=work,
            snapshots=result.snapshots,
        )


def spark_et_s(
    runs: Sequence[SparkRecord], warmup: Mapping[str, Warmup] | None = None
) -> dict[str, float]:
    """Each operator's per-event time on Spark (what the runtime's Monitor reports as et_i, its
    data path included): its shares' busy seconds over their events, all runs together, less
    the `warmup` its replicas paid."""
    warmup = warmup or {}
    et = {}
    for op in sorted({op for run in runs for op in run.work}):
        events = sum(run.work[op][0] for run in runs if op in run.work)
        busy = sum(run.work[op][1] for run in runs if op in run.work)
        paid = warmup[op].total_s if op in warmup else 0.0
        if events:
            et[op] = (busy - paid if busy > paid else busy) / events
    return et


@dataclass(frozen=True)
class Warmup:
    """What an operator's replicas paid for their first shares on Spark: per replica, s, and
    how many replicas paid it."""

    per_replica_s: float
    replicas: int

    @property
    def total_s(self) -> float:
        return self.per_replica_s * self.replicas


def warmups(runs: Sequence[SparkRecord]) -> dict[str, Warmup]:
    """Each operator's warm-up (on Spark a Python worker's first task of the operator: its
    imports and set-up), read from the runs' intervals: in those where replicas served their
    first share, the busy seconds beyond the steady per-event time (busy over processed in the
    other intervals), per such replica. Runs without intervals: none."""
    if not runs or not all(run.snapshots for run in runs):
        return {}
    steady: dict[str, list[float]] = {}  # busy s, events: intervals without a first share
    first: dict[str, list[float]] = {}  # busy s, events, replicas: intervals with one
    for op, stats, new in _intervals(runs):
        if new:
            sums = first.setdefault(op, [0.0, 0.0, 0.0])
            sums[2] += new
        else:
            sums = steady.setdefault(op, [0.0, 0.0])
        sums[0] += stats.busy_s
        sums[1] += stats.processed
    out = {}
    for op, (busy, events, n) in first.items():
        if op in steady and steady[op][1]:
            extra = busy - steady[op][0] / steady[op][1] * events  # the excess over et x events
            out[op] = Warmup(max(extra, 0.0) / n, int(n))
    return out


def _intervals(runs: Sequence[SparkRecord]) -> Iterator[tuple[str, OperatorStats, int]]:
    """(operator, its stats, how many of its replicas served their first share) of every
    interval of the runs."""
    for run in runs:
        served: dict[str, set[int]] = {}
        for snap in run.snapshots:
            for stats in snap.operators:
                seen = served.setdefault(stats.name, set())
                active = stats.replica_batches[: stats.replicas]
                new = {j for j, n in enumerate(active) if n and j not in seen}
                seen |= new
                yield stats.name, stats, len(new)


def batch_records(run: SparkRecord, service_time_s: Mapping[str, float]) -> list[BatchRecord]:
    """Every non-empty micro-batch of the run: when it started, its wall time (Spark's
    triggerExecution), its offset commit, its tasks and the work of its slowest, the work of a
    share being its events times `service_time_s[op]` (the simulator's per-event time).

    `operator` layout: a record per batch of each operator's query, a task per share.
    `pipeline` layout: a record per batch of the one query (op PIPELINE_QUERY), its shares packed
    into tasks as the runtime packs them (Eq. P2); a share's events are known per operator as
    the largest and the total, so the others are taken as equal."""
    work = {(w.op, w.batch): w for w in run.batch_work}
    pipeline = run.layout == "pipeline"
    records: list[BatchRecord] = []
    for name, reports in run.progress.items():
        for progress in reports:
            ranges = _ranges(progress, name)
            parts = [work.get((op, f"{a}-{b}")) for op, (a, b) in ranges.items()]
            if not parts or None in parts:  # empty, or not a batch the store planned as one
                continue
            shares = [w for part in parts if part for w in _share_work(part, service_time_s)]
            tasks = pack(shares) if pipeline else shares
            durations = progress["durationMs"]
            records.append(
                BatchRecord(
                    op=PIPELINE_QUERY if pipeline else name,
                    start_s=_epoch_s(progress["timestamp"]),
                    wall_s=durations["triggerExecution"] / 1000.0,
                    work_s=max(tasks),
                    replicas=len(tasks),
                    commit_s=durations.get("commitOffsets", 0) / 1000.0,
                )
            )
    return records


def _share_work(part: BatchWork, service_time_s: Mapping[str, float]) -> list[float]:
    """The work of each share of an operator's part of a batch: the largest, the rest equal."""
    et = service_time_s[part.op]
    rest = (part.events - part.largest) / (part.tasks - 1) if part.tasks > 1 else 0.0
    return [part.largest * et] + [rest * et] * (part.tasks - 1)


def _ranges(progress: dict[str, Any], query: str) -> dict[str, tuple[int, int]]:
    """The batch's non-empty offset range per operator: the pipeline source's offsets name the
    operators; the operator layout's ({"off": n}) are those of the query's operator."""
    source = progress["sources"][0]
    start, end = (_offsets(source.get(k)) for k in ("startOffset", "endOffset"))
    ranges = {op: (int(start.get(op, 0)), int(b)) for op, b in end.items()}
    return {query if op == "off" else op: r for op, r in ranges.items() if r[1] > r[0]}


def _offsets(value: str | dict[str, int] | None) -> dict[str, int]:
    """A source's offsets in a progress report: JSON text (PySpark's objects) or parsed."""
    if isinstance(value, str):
        value = json.loads(value)
    return value or {}


def _epoch_s(stamp: str) -> float:
    """Spark's progress timestamp (ISO 8601, UTC, 'Z') in seconds since the epoch."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def overhead_settings(model: OverheadModel, pipeline: bool) -> dict[str, Any]:
    """The SimSettings fields of a fitted batch-cost model: Eq. P1's a and b for the pipeline
    layout, Eq. O1's a_i, b and c for the operator layout. Eq. O2's spread is left out: measured
    against Spark it made the figures depend on the seed and agree no better
    (docs/simulator.md); `model.cv` is there for whoever wants it (`batch_overhead_cv`)."""
    common = {
        "batch_overhead_per_replica_ms": 1000 * model.per_replica_s,
        "batch_commit_share": model.commit_share,
    }
    if pipeline:
        return {"batch_overhead_s": model.base_s[PIPELINE_QUERY], **common}
    return {
        "batch_overhead_ms": {op: 1000 * a for op, a in model.base_s.items()},
        "batch_overhead_per_busy_query_ms": 1000 * model.per_busy_query_s,
        **common,
    }


@dataclass(frozen=True)
class Calibration:
    """The simulator's settings for Spark runs, with the batches and the model they came from."""

    settings: SimSettings
    records: list[BatchRecord]
    model: OverheadModel


def calibrate(*runs: SparkRecord, **overrides: Any) -> Calibration:
    """Simulator settings for the runtime that made these runs (one layout, one pipeline): the
    micro-batch model of their layout (queue_model pipeline or micro_batch), each operator's
    per-event time as Spark measured it (`et_ms`) and the batch-cost model fitted to every
    batch of every run (Eq. P1 or O1); the trigger and batch_s come from the run configuration,
    as in the runtime. `overrides` are further settings (they win over the fitted ones)."""
    if not runs:
        raise ValueError("calibrate: no Spark run given")
    layouts = {run.layout for run in runs}
    if len(layouts) > 1:
        raise ValueError(f"calibrate: runs of several spark.layouts ({sorted(layouts)}): one")
    pipeline = layouts == {"pipeline"}
    warmup = warmups(runs)
    et = spark_et_s(runs, warmup)
    records = [rec for run in runs for rec in batch_records(run, et)]
    model = fit_overhead(records)
    fitted = overhead_settings(model, pipeline) | {
        "et_ms": {op: 1000 * s for op, s in et.items()},
        "warmup_ms": {op: 1000 * w.per_replica_s for op, w in warmup.items() if w.per_replica_s},
    }
    values = {"queue_model": "pipeline" if pipeline else "micro_batch"} | fitted | overrides
    return Calibration(SimSettings(**values), records, model)
