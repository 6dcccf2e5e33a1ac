"""What one replica does with its share of a micro-batch, inside a Spark executor's Python worker.

No Spark import here: the data source's `read()` calls `run_task`, and tests call it directly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from elastream.model.events import Outcome, OutcomeKind
from elastream.model.pipeline import Pipeline, load_callable
from elastream.runtime.operators import OUT_PLACEHOLDER, OperatorContext, apply_operator
from elastream.runtime.queues.sqlite import SqliteQueueStore


@dataclass(frozen=True, slots=True)
class TaskResult:
    replica: int
    events: int  # events handed to this replica
    fresh: int  # outcomes newly recorded (0 on a full replay)
    outputs: int
    busy_s: float


@cache
def store_for(db_path: str) -> SqliteQueueStore:
    """One connection per worker process and database (workers are reused between batches)."""
    return SqliteQueueStore(db_path)


@cache
def context_for(db_path: str, op: str) -> OperatorContext:
    store = store_for(db_path)
    pipeline = Pipeline.model_validate(store.meta("pipeline"))
    spec = pipeline.operator(op)
    out_dir = str(Path(db_path).parent)
    params = {
        k: v.replace(OUT_PLACEHOLDER, out_dir) if isinstance(v, str) else v
        for k, v in spec.params.items()
    }
    function = load_callable(spec.function, f"operator {op!r} function")
    return OperatorContext(spec, function, params, pipeline.routes(op), store.meta("t_out"))


def run_task(db_path: str, op: str, offsets: Sequence[int], replica: int, batch: str) -> TaskResult:
    """Process the events at `offsets` of `op`'s input queue, exactly once per event."""
    started = time.perf_counter()
    store = store_for(db_path)
    ctx = context_for(db_path, op)
    if not offsets:  # an active replica with nothing in this batch: no transaction at all
        return TaskResult(replica, 0, 0, 0, 0.0)
    stored = store.read(op, offsets)
    done = store.done_ids(op, [s.event.id for s in stored])
    todo = [s.event for s in stored if s.event.id not in done]
    now = time.time()
    expired = [e for e in todo if ctx.t_out is not None and now - e.ts > ctx.t_out]
    live = [e for e in todo if not (ctx.t_out is not None and now - e.ts > ctx.t_out)]
    outcomes, errors = apply_operator(ctx, live)
    outcomes += [Outcome(e.id, e.root, OutcomeKind.TIMEOUT) for e in expired]
    if ctx.spec.service_time_ms and live:
        time.sleep(len(live) * ctx.spec.service_time_ms / 1000.0)
    busy = time.perf_counter() - started
    fresh = store.complete(op, op, outcomes, replica, batch, busy, errors)
    n_out = sum(len(o.outputs) for o in outcomes)
    return TaskResult(replica, len(stored), fresh, n_out, busy)
