"""What one replica does with its share of a micro-batch, inside a Spark executor's Python worker.

No Spark import here: the data source's `read()` calls `run_task`, and tests call it directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from elastream.model.events import Emit, Event, Outcome, derived_id
from elastream.model.pipeline import DEFAULT_STREAM, OperatorSpec, Pipeline, load_callable
from elastream.runtime.queues.sqlite import SqliteQueueStore

OUT_PLACEHOLDER = "{out}"


@dataclass(frozen=True, slots=True)
class TaskResult:
    replica: int
    events: int  # events handed to this replica
    fresh: int  # outcomes newly recorded (0 on a full replay)
    outputs: int
    busy_s: float


@dataclass(frozen=True)
class OperatorContext:
    """Everything a replica needs, rebuilt once per worker process from the store's metadata."""

    spec: OperatorSpec
    function: Callable[..., Iterable[Emit]]
    params: dict[str, Any]
    routes: dict[str, tuple[str, ...]]
    t_out: float | None


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
    outcomes += [Outcome(e.id, e.root, "timeout") for e in expired]
    if ctx.spec.service_time_ms and live:
        time.sleep(len(live) * ctx.spec.service_time_ms / 1000.0)
    busy = time.perf_counter() - started
    fresh = store.complete(op, op, outcomes, replica, batch, busy, errors)
    n_out = sum(len(o.outputs) for o in outcomes)
    return TaskResult(replica, len(stored), fresh, n_out, busy)


def apply_operator(
    ctx: OperatorContext, events: list[Event]
) -> tuple[list[Outcome], list[tuple[str, str, str]]]:
    """Call the function on the batch; if it fails, call it event by event so that only the
    event that breaks it is set aside (outcome 'error', message kept), nothing else is lost."""
    if not events:
        return [], []
    try:
        return outcomes_for(ctx, events, list(ctx.function(events, **ctx.params))), []
    except Exception:  # the batch failed: find the culprit event by event
        return apply_one_by_one(ctx, events)


def apply_one_by_one(
    ctx: OperatorContext, events: list[Event]
) -> tuple[list[Outcome], list[tuple[str, str, str]]]:
    """Each event alone; one that still fails gets outcome 'error' and its message is kept."""
    outcomes: list[Outcome] = []
    errors: list[tuple[str, str, str]] = []
    for event in events:
        try:
            outcomes += outcomes_for(ctx, [event], list(ctx.function([event], **ctx.params)))
        except Exception as exc:  # recorded as this event's outcome
            message = f"operator {ctx.spec.name!r}, event {event.id}: {type(exc).__name__}: {exc}"
            outcomes.append(Outcome(event.id, event.root, "error"))
            errors.append((event.id, message, event.to_json()))
    return outcomes, errors


def outcomes_for(ctx: OperatorContext, events: list[Event], emits: list[Emit]) -> list[Outcome]:
    """Attach each output to its input event, give it a deterministic id and route it."""
    by_parent: dict[str, list[tuple[str, Event]]] = {e.id: [] for e in events}
    emitted = dict.fromkeys(by_parent, 0)
    for emit in emits:
        if not isinstance(emit, Emit) or emit.parent.id not in by_parent:
            raise TypeError(
                f"operator {ctx.spec.name!r} returned {emit!r}: expected event.emit(...) "
                f"of an event of this batch"
            )
        stream = emit.stream or DEFAULT_STREAM
        targets = ctx.routes.get(stream)
        if targets is None:
            known = ", ".join(sorted(ctx.routes))
            raise KeyError(
                f"operator {ctx.spec.name!r} emitted to unknown stream {stream!r} "
                f"(its streams: {known})"
            )
        parent = emit.parent
        child = Event(
            derived_id(parent.id, ctx.spec.name, emitted[parent.id]),
            emit.key if emit.key is not None else parent.key,
            parent.ts,
            emit.payload,
            parent.root,
        )
        emitted[parent.id] += 1
        by_parent[parent.id].extend((target, child) for target in targets)
    return [
        Outcome(
            e.id, e.root, "processed" if by_parent[e.id] else "filtered", tuple(by_parent[e.id])
        )
        for e in events
    ]
