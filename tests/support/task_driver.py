"""Runs a pipeline through the runtime's task code without Spark: a real SQLite queue store, the
data source's planning (`plan_partitions`, `advance`) and `run_share` for every replica, with
the operators' queries interleaved at random as concurrent Spark queries may interleave them:
a downstream batch planned between two shares of an upstream batch, shares committed in any
order, replica counts changed between batches."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from elastream.model.events import Event
from elastream.model.pipeline import Pipeline
from elastream.runtime.queues import QueueStore, open_store, reset_store
from elastream.runtime.spark.source import ReplicaPartition, plan_partitions
from elastream.runtime.spark.task import run_share
from elastream.runtime.spark.watermark import (
    END_OF_INPUT,
    advance,
    declare_end_of_input,
    flushed,
)


@dataclass
class Query:
    """One operator's query: where its next batch starts and the shares of the running one."""

    start: int = 0
    running: list[ReplicaPartition] = field(default_factory=list)
    batches: int = 0
    replica_counts: set[int] = field(default_factory=set)


def prepare(pipeline: Pipeline, db: Path) -> QueueStore:
    """A fresh store holding what the runtime records before its queries start."""
    reset_store(str(db))
    store = open_store(str(db))
    store.set_meta("out_dir", str(db.parent))
    store.set_meta("pipeline", pipeline.model_dump(mode="json", by_alias=True))
    store.set_meta("t_out", None)
    store.set_meta("td", 1.0)
    store.set_meta(END_OF_INPUT, False)
    for op in pipeline.operators:
        store.create_queue(op.name, None)
        set_replicas(store, op.name, op.replicas.start)
    for sink in pipeline.sinks:
        store.create_queue(sink.name, None, sink=True)
    return store


def set_replicas(store: QueueStore, op: str, replicas: int) -> None:
    store.set_control(op, replicas, 10**9, 0.01, [0.01] * replicas)


def drive(
    pipeline: Pipeline,
    events: Sequence[Event],
    db: Path,
    seed: int,
    max_batch: int = 150,
    rescale: dict[str, Sequence[int]] | None = None,
) -> tuple[QueueStore, dict[str, Query]]:
    """Feed `events` to the pipeline's single source in random chunks, and run every operator's
    batches (random sizes up to `max_batch`) with their shares committed in random order and
    interleaved with the other operators'; an operator in `rescale` gets a replica count drawn
    from its list at random between batches. Ends with the end of input and the final flush."""
    rng = random.Random(seed)
    store = prepare(pipeline, db)
    (source,) = pipeline.source_names
    targets = pipeline.successors(source)
    queries = {op: Query() for op in pipeline.operator_names}
    fed = 0
    for _ in range(10**7):
        if fed == len(events) and not store.meta(END_OF_INPUT):
            declare_end_of_input(store)
        busy = [op for op, q in queries.items() if q.running]
        idle = [op for op, q in queries.items() if not q.running]
        choice = rng.random()
        if fed < len(events) and choice < 0.2:
            n = rng.randint(1, 2 * max_batch)
            for target in targets:
                store.append(target, events[fed : fed + n], source, fed)
            fed = min(len(events), fed + n)
        elif busy and (choice < 0.7 or not idle):
            op = rng.choice(busy)
            running = queries[op].running
            part = running.pop(rng.randrange(len(running)))
            run_share(str(db), op, part.start, part.end, part.replica)
        elif idle:
            op = rng.choice(idle)
            _plan(store, pipeline, db, op, queries[op], rng, max_batch, (rescale or {}).get(op))
        if fed == len(events) and not busy and done(store, pipeline):
            return store, queries
    raise AssertionError("the driver did not finish")


def _plan(
    store: QueueStore,
    pipeline: Pipeline,
    db: Path,
    op: str,
    q: Query,
    rng: random.Random,
    max_batch: int,
    counts: Sequence[int] | None,
) -> None:
    """What Spark does between two batches of a query: `latestOffset` (advance), then plan the
    next batch if there is anything to read."""
    if pipeline.watermarked(op):
        advance(store, pipeline, op)
    latest = store.latest(op)
    if latest == q.start:
        return
    if counts:
        set_replicas(store, op, rng.choice(counts))
    end = min(latest, q.start + rng.randint(1, max_batch))
    q.running = list(plan_partitions(str(db), op, q.start, end))
    rng.shuffle(q.running)
    q.start = end
    q.batches += 1
    q.replica_counts.add(max(p.replica for p in q.running) + 1)


def done(store: QueueStore, pipeline: Pipeline) -> bool:
    """Nothing queued anywhere and every watermark flushed to +inf."""
    if any(store.pending(op) for op in pipeline.operator_names):
        return False
    return flushed(store, pipeline)


def sink_payloads(store: QueueStore, sink: str) -> list:
    return [e.payload for e in store.read_events(sink, 0, store.latest(sink))]


def run_batch(
    store: QueueStore, pipeline: Pipeline, db: Path, op: str, start: int, order: Sequence[int] = ()
) -> int:
    """One batch of `op` from `start` to its queue's end (after `advance`), its shares run in
    `order` (replica numbers; default in order); returns where the next batch starts."""
    if pipeline.watermarked(op):
        advance(store, pipeline, op)
    end = store.latest(op)
    if end == start:
        return start
    parts = {p.replica: p for p in plan_partitions(str(db), op, start, end)}
    for j in order or sorted(parts):
        run_share(str(db), op, parts[j].start, parts[j].end, j)
    return end
