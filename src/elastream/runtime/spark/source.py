"""A PySpark streaming data source over one operator's input queue: admission control in
`latestOffset`, one partition per active replica in `partitions`, the operator itself in `read`.

`latestOffset` and `partitions` run in Spark's per-query Python helper process, `read` in executor
Python workers: all of them learn the controller's decisions from the queue store, never from
driver objects.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from elastream.model.grouping import assign
from elastream.runtime.queues import BatchPlan, ControlTable, DataPath, QueueError
from elastream.runtime.spark.task import context_for, pipeline_for, run_share, store_for
from elastream.runtime.spark.watermark import advance, plan_watermarks

SOURCE_NAME = "elastream_queue"
DROP_EVERY_S = 5.0
SCHEMA = "replica INT, events INT, fresh INT, outputs INT, busy DOUBLE"
INTERVAL_KEY = "history_interval"  # meta: the runtime's current interval, {"start", "due"} (s)


@dataclass(frozen=True)
class ReplicaPartition(InputPartition):
    """Replica `replica`'s share of the micro-batch [start, end) (the store holds the plan, so a
    re-run of the batch divides it the same way)."""

    replica: int
    start: int
    end: int


def plan_partitions(db: str, op: str, start: int, end: int) -> list[ReplicaPartition]:
    """One partition per replica of each batch planned in [start, end) (`plan_batches`)."""
    if end == start:  # an empty batch (Spark plans one at start-up)
        replicas = store_for(db).control(op).replicas
        return [ReplicaPartition(j, start, end) for j in range(replicas)]
    plans = plan_batches(db, op, start, end)
    return [ReplicaPartition(j, p.start, p.end) for p in plans for j in range(p.replicas)]


def plan_batches(db: str, op: str, start: int, end: int) -> list[BatchPlan]:
    """The batches planned in the non-empty range [start, end): the plans recorded when
    Spark first planned these offsets (whatever r_i is now), then a new one for the rest, divided
    with the operator's grouping. A range spans several recorded batches only when Spark replays
    it after a restart with asynchronous progress tracking (`plan_range`).

    For load balancing (PSPS Alg. 1) every replica starts the batch with U = 0, since each has
    finished its share of the previous micro-batch; each event then costs that replica its own
    et_ij / td, so a slower replica gets fewer events and the batch ends when all do.

    For a stateful operator each replica owns a contiguous range of key groups for r_i, and an
    event goes to the owner of its key's group: a change of r_i moves ownership at this batch
    boundary, recorded with the plan (docs/state.md)."""
    store = store_for(db)
    replicas, _, et, replica_et = store.control(op)
    spec = context_for(db, op).spec
    grouping = spec.grouping
    groups = None if spec.stateless else spec.key_groups
    td = float(store.meta("td", 1.0))
    ets = [
        replica_et[j] if j < len(replica_et) and replica_et[j] > 0 else et for j in range(replicas)
    ]

    def divide(keys: list[str]) -> list[int]:
        return assign(
            grouping, keys, replicas, seed=start, service_time_s=ets, td_s=td, groups=groups
        )

    plans = store.plan_range(op, start, end, replicas, divide)
    if not spec.stateless:
        _check_replay_order(store, plans)
    pipeline = pipeline_for(db)
    if pipeline.watermarked(op):
        plan_watermarks(store, pipeline, op, plans)
    return plans


def _check_replay_order(store: DataPath, plans: list[BatchPlan]) -> None:
    """A stateful operator's shares of one range run side by side, so only the last batch of a
    replayed range may still be unfinished: an earlier one would race it for the keyed state.
    (Spark runs an operator's batches one after the other, so a replay never finds that.)"""
    for plan in plans[:-1]:
        owners = set(plan.owners)  # a replica given no event never commits a share
        if not all(store.share_done(plan.op, plan.batch, j) for j in owners):
            raise QueueError(
                f"operator {plan.op!r}: the replayed batch {plan.batch} is unfinished but not "
                "the last of its range; its keyed state cannot be rebuilt in order"
            )


def cap_hit_key(op: str) -> str:
    """The store's meta key holding when `op`'s admission was last capped (wall-clock s)."""
    return f"cap_hit:{op}"


def open_interval(store: ControlTable, start: float, td: float) -> None:
    """The runtime's Monitor step opens a history interval at `start` (wall-clock s); its next
    collect is due at start + td, not sooner."""
    store.set_meta(INTERVAL_KEY, {"start": start, "due": start + td})


def _interval_start(store: ControlTable, now: float) -> float:
    """When the runtime's current history interval started; +inf when that is not known, or
    when its collect is due (the next interval may have begun already)."""
    interval = store.meta(INTERVAL_KEY)
    if not interval or now >= interval["due"]:
        return math.inf
    return float(interval["start"])


@dataclass
class CapNote:
    """When one reader last noted its operator's capped admission (wall-clock s)."""

    written_at: float = -math.inf


def _note_cap_hit(store: ControlTable, op: str, note: CapNote) -> None:
    """Note the capped admission (`cap_hit_key`) once per history interval: the runtime flags
    an interval [t0, t1) when the noted time is ≥ t0, so a later note in the same interval adds
    nothing; one meta read instead of a write on every capped batch."""
    now = time.time()
    if note.written_at >= _interval_start(store, now):
        return
    store.set_meta(cap_hit_key(op), now)
    note.written_at = now


def admitted_end(
    db: str, op: str, start: int, limit: ReadLimit | None, note: CapNote | None = None
) -> int:
    """Admission control: at most `cap` events per batch (what the active replicas can process
    in one batch), fewer if Spark's own limit is tighter; the rest stays queued. A batch already
    planned from `start` (its offsets were not yet durable in Spark's checkpoint when the query
    stopped) is admitted again as it was. When our cap left events queued (not Spark's tighter
    limit), it is noted in the store for the history's backpressure flag (`_note_cap_hit`;
    `note` is the reader's memory of its last note)."""
    store = store_for(db)
    planned = store.planned_end(op, start)
    if planned is not None:  # planned before a restart: the same batch again
        return planned
    cap = store.control(op).cap
    latest = store.latest(op)
    end = min(latest, start + cap)
    spark_max = limit.max_rows if isinstance(limit, ReadMaxRows) else None
    if spark_max is not None:
        end = min(end, start + spark_max)
    if start + cap < latest and (spark_max is None or cap <= spark_max):
        _note_cap_hit(store, op, note or CapNote())
    return end


class QueueStreamReader(DataSourceStreamReader):
    def __init__(self, db: str, op: str) -> None:
        self.db = db
        self.op = op
        self.dropped_at = time.monotonic()
        self.cap_note = CapNote()

    def initialOffset(self) -> dict:
        return {"off": 0}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        pipeline = pipeline_for(self.db)
        if pipeline.watermarked(self.op):
            advance(store_for(self.db), pipeline, self.op)
        return {"off": admitted_end(self.db, self.op, int(start["off"]), limit, self.cap_note)}

    def reportLatestOffset(self) -> dict:
        return {"off": store_for(self.db).latest(self.op)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return plan_partitions(self.db, self.op, int(start["off"]), int(end["off"]))

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        if not isinstance(partition, ReplicaPartition):
            raise TypeError(f"{SOURCE_NAME} source got a foreign partition: {partition!r}")
        r = run_share(self.db, self.op, partition.start, partition.end, partition.replica)
        yield (r.replica, r.events, r.fresh, r.outputs, r.busy_s)

    def commit(self, end: dict) -> None:
        """Retention: every share below `end` is committed, so its input events can go. Done
        at most every DROP_EVERY_S, so that a batch's commit does not wait for the store's
        write lock."""
        now = time.monotonic()
        if now - self.dropped_at >= DROP_EVERY_S:
            store_for(self.db).drop_consumed(self.op, int(end["off"]))
            self.dropped_at = now


class QueueDataSource(DataSource):
    """`spark.readStream.format("elastream_queue").option("db", queues).option("op", name)`,
    where `queues` is the queue store's address: a SQLite file path or a redis:// URL."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        missing = [k for k in ("db", "op") if k not in self.options]
        if missing:
            raise ValueError(f"{SOURCE_NAME} source needs option(s): {', '.join(missing)}")
        return QueueStreamReader(self.options["db"], self.options["op"])
