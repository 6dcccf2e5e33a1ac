"""Builders shared by the tests: snapshots and pipelines from a few numbers."""

from __future__ import annotations

from itertools import pairwise

from elastream.model.snapshot import OperatorStats, Snapshot


def stats(
    name: str,
    *,
    replicas: int = 1,
    pool: tuple[int, int] = (1, 8),
    received: int = 0,
    frm: dict[str, int] | None = None,
    processed: int = 0,
    emitted: int | None = None,
    queue: int = 0,
    service_time_s: float | None = None,
    busy_s: float = 0.0,
) -> OperatorStats:
    return OperatorStats(
        name=name,
        replicas=replicas,
        min_replicas=pool[0],
        max_replicas=pool[1],
        received=received,
        received_from=tuple((frm or {}).items()),
        processed=processed,
        emitted=processed if emitted is None else emitted,
        queue=queue,
        service_time_s=service_time_s,
        busy_s=busy_s,
    )


def snapshot(
    *ops: OperatorStats,
    t: float = 1.0,
    interval_s: float = 1.0,
    sources: dict[str, int] | None = None,
    completed: int = 0,
) -> Snapshot:
    return Snapshot(
        t=t,
        interval_s=interval_s,
        sources=tuple((sources or {"src": 0}).items()),
        operators=ops,
        completed=completed,
    )


def linear_pipeline(n_ops: int = 3, pool: tuple[int, int] = (1, 4)) -> dict:
    ops = [f"op{i}" for i in range(1, n_ops + 1)]
    chain = ["src", *ops, "sink"]
    return {
        "name": "linear",
        "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate"}],
        "operators": [
            {
                "name": o,
                "function": "elastream.examples.synthetic:passthrough",
                "replicas": {"min": pool[0], "max": pool[1]},
            }
            for o in ops
        ],
        "sinks": [{"name": "sink"}],
        "streams": [{"from": a, "to": b} for a, b in pairwise(chain)],
    }


def queue_store(path, pipeline, *, queue_capacity=None, event_timeout_s=None):
    """A SQLite queue store set up as the Spark runtime sets it up for `pipeline` (one queue per
    operator, the sink `sink`), with the task code's caches cleared; no Spark."""
    from elastream.runtime.queues import SqliteQueueStore
    from elastream.runtime.spark import task

    store = SqliteQueueStore(path)
    store.set_meta("pipeline", pipeline.model_dump(mode="json", by_alias=True))
    store.set_meta("t_out", event_timeout_s)
    for op in pipeline.operator_names:
        store.create_queue(op, queue_capacity)
    store.create_queue("sink", None, sink=True)
    task.store_for.cache_clear()
    task.context_for.cache_clear()
    return store
