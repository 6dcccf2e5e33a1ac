"""A PySpark streaming data source over all of a pipeline's operator queues at once (the `pipeline`
layout, docs/runtime.md "Layouts"): an offset per operator, every operator admitted as
`admitted_end` does, one partition per active replica of every operator with admitted events.

A micro-batch of this one query moves every operator one step: an operator's outputs appended in
batch k are admitted for its successor in batch k + 1. Plan-time methods run in the query's one
helper process, `read` in executor Python workers, as for `elastream_queue`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

from elastream.model.pipeline import Pipeline
from elastream.runtime.spark.source import (
    DROP_EVERY_S,
    CapNote,
    admitted_end,
    plan_batches,
)
from elastream.runtime.spark.task import pipeline_for, run_share, store_for
from elastream.runtime.spark.watermark import advance

PIPELINE_SOURCE_NAME = "elastream_pipeline"
PIPELINE_SCHEMA = "op STRING, replica INT, events INT, fresh INT, outputs INT, busy DOUBLE"
ARROW_SCHEMA = pa.schema(  # PIPELINE_SCHEMA as Arrow: `read` yields one RecordBatch per task
    [("op", pa.string())]
    + [(name, pa.int32()) for name in ("replica", "events", "fresh", "outputs")]
    + [("busy", pa.float64())]
)
# Shares whose estimated work (events x et_ij) adds up to at most this share one task: a task
# costs about 30 ms here whatever it does (docs/runtime.md, "Layouts"), so packing small shares
# saves more than it serializes.
PACK_S = 0.02


@dataclass(frozen=True)
class Share:
    """Replica `replica` of operator `op`: its share of `op`'s batch [start, end), as planned,
    and its estimated work (its events times the replica's et_ij, s)."""

    op: str
    replica: int
    start: int
    end: int
    work_s: float = 0.0


@dataclass(frozen=True)
class SharesPartition(InputPartition):
    """One task: shares run one after the other, each with its own plan, order and commit."""

    shares: tuple[Share, ...]


def pipeline_operators(db: str) -> list[str]:
    """The run's operators in topological order, from the pipeline the driver recorded."""
    return list(Pipeline.model_validate(store_for(db).meta("pipeline")).topological_order)


def pipeline_shares(db: str, start: dict, end: dict) -> list[Share]:
    """Every operator's shares of its range [start[op], end[op]) (`plan_batches`: the recorded
    plans, grouping and keyed-state ownership), without the replicas the plan gives no event: an
    idle operator, or an idle replica, costs no task."""
    shares = []
    pipeline = pipeline_for(db)
    for op, stop in end.items():
        first = int(start.get(op, 0))
        if int(stop) == first:
            continue
        _, _, et, replica_et = store_for(db).control(op)
        for plan in plan_batches(db, op, first, int(stop)):
            # a watermarked operator's every share commits, empty or not (its watermark
            # advances once all of a batch's shares have: docs/state.md)
            every = pipeline.watermarked(op)
            for j in range(plan.replicas) if every else sorted(set(plan.owners)):
                et_j = replica_et[j] if j < len(replica_et) and replica_et[j] > 0 else et
                work = plan.owners.count(j) * et_j
                shares.append(Share(op, j, plan.start, plan.end, work))
    return shares


def pack(shares: list[Share], pack_s: float = PACK_S) -> list[SharesPartition]:
    """Tasks for `shares`: consecutive small shares together while their estimated work stays
    within `pack_s`; a larger share alone (replicas of a busy operator keep running in
    parallel)."""
    tasks: list[list[Share]] = []
    load = pack_s  # the open task's work so far (none open yet)
    for share in shares:
        if not tasks or share.work_s > pack_s or load + share.work_s > pack_s:
            tasks.append([share])
            load = share.work_s
        else:
            tasks[-1].append(share)
            load += share.work_s
    return [SharesPartition(tuple(task)) for task in tasks]


class PipelineStreamReader(DataSourceStreamReader):
    def __init__(self, db: str) -> None:
        self.db = db
        self.ops = pipeline_operators(db)
        self.dropped_at = time.monotonic()
        self.cap_notes = {op: CapNote() for op in self.ops}

    def initialOffset(self) -> dict:
        return {op: 0 for op in self.ops}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """Each operator admitted from its own offset, capped by its own replicas' work in one
        batch (`admitted_end`), so one slow operator cannot lengthen the batch beyond batch_s."""
        pipeline, store = pipeline_for(self.db), store_for(self.db)
        for op in self.ops:
            if pipeline.watermarked(op):
                advance(store, pipeline, op)
        return {
            op: admitted_end(self.db, op, int(start.get(op, 0)), limit, self.cap_notes[op])
            for op in self.ops
        }

    def reportLatestOffset(self) -> dict:
        store = store_for(self.db)
        return {op: store.latest(op) for op in self.ops}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        parts = pack(pipeline_shares(self.db, start, end))
        # a batch in which no operator has events (Spark may plan one at start-up)
        return parts or [SharesPartition(())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The task's shares in order, one summary row each, as one Arrow batch (PySpark's
        row-by-row conversion of tuples cost 1-2 ms a task here, this 0.2 ms)."""
        if not isinstance(partition, SharesPartition):
            raise TypeError(f"{PIPELINE_SOURCE_NAME} source got a foreign partition: {partition!r}")
        rows = []
        for share in partition.shares:
            r = run_share(self.db, share.op, share.start, share.end, share.replica)
            rows.append((share.op, r.replica, r.events, r.fresh, r.outputs, r.busy_s))
        if rows:
            columns = zip(*rows, strict=True)
            arrays = [pa.array(c, type=f.type) for c, f in zip(columns, ARROW_SCHEMA, strict=True)]
            yield pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)

    def commit(self, end: dict) -> None:
        """Retention per operator, at most every DROP_EVERY_S (as `elastream_queue`)."""
        now = time.monotonic()
        if now - self.dropped_at >= DROP_EVERY_S:
            store = store_for(self.db)
            for op, stop in end.items():
                store.drop_consumed(op, int(stop))
            self.dropped_at = now


class PipelineDataSource(DataSource):
    """`spark.readStream.format("elastream_pipeline").option("db", queues)`, where `queues` is the
    queue store's address (the store's `pipeline` meta names the operators)."""

    @classmethod
    def name(cls) -> str:
        return PIPELINE_SOURCE_NAME

    def schema(self) -> str:
        return PIPELINE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        if "db" not in self.options:
            raise ValueError(f"{PIPELINE_SOURCE_NAME} source needs option: db")
        return PipelineStreamReader(self.options["db"])
