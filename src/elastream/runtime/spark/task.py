"""What one replica does with its share of a micro-batch, inside a Spark executor's Python worker.

No Spark import here: the data source's `read()` calls `run_share`, and tests call it directly.
"""

from __future__ import annotations

import gc
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from elastream.model.batch import EventBatch
from elastream.model.events import Event, OutcomeKind
from elastream.model.grouping import key_group
from elastream.model.pipeline import Pipeline
from elastream.model.state import KeyedState, StateWrite, Timer, encode_value
from elastream.runtime.operators import (
    OUT_PLACEHOLDER,
    Applied,
    OperatorContext,
    apply_operator,
    events_batch,
    load_operator,
)
from elastream.runtime.queues import open_store
from elastream.runtime.queues.base import StateStore, TaskStore
from elastream.runtime.queues.records import BatchPlan, ShareCommit, failure_record
from elastream.runtime.spark import watermark as wmk


@dataclass(frozen=True, slots=True)
class TaskResult:
    replica: int
    events: int  # events in this replica's share
    fresh: int  # events newly committed (0 when the share was committed before)
    outputs: int
    busy_s: float


@cache
def store_for(queues: str) -> TaskStore:
    """One connection per process and store address (Python workers are reused between
    batches): a SQLite file path or a redis:// URL (`queues.open_store`)."""
    return open_store(queues)


@cache
def pipeline_for(queues: str) -> Pipeline:
    """The run's pipeline, as the store records it."""
    return Pipeline.model_validate(store_for(queues).meta("pipeline"))


@cache
def context_for(queues: str, op: str) -> OperatorContext:
    store = store_for(queues)
    pipeline = pipeline_for(queues)
    spec = pipeline.operator(op)
    out_dir = store.meta("out_dir") or str(Path(queues).parent)
    params = {
        k: v.replace(OUT_PLACEHOLDER, out_dir) if isinstance(v, str) else v
        for k, v in spec.params.items()
    }
    function = load_operator(spec)
    return OperatorContext(spec, function, params, pipeline.routes(op), store.meta("t_out"))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a share runs: a per-event share makes an
    object or more per event, which set off collections that scan every live object again and
    again (half the time of a per-event hop was spent there); it runs again afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run_share(queues: str, op: str, start: int, end: int, replica: int) -> TaskResult:
    """Process replica `replica`'s share of `op`'s planned batch [start, end), and commit it in
    one transaction; a share committed before is not processed again."""
    with collector_paused():
        return _run_share(queues, op, start, end, replica)


def _run_share(queues: str, op: str, start: int, end: int, replica: int) -> TaskResult:
    if end == start:  # an empty batch
        return TaskResult(replica, 0, 0, 0, 0.0)
    started, cpu_started = time.perf_counter(), time.process_time()
    store = store_for(queues)
    ctx = context_for(queues, op)
    plan = store.plan(op, start, end)
    if store.share_done(op, plan.batch, replica):
        return TaskResult(replica, plan.owners.count(replica), 0, 0, 0.0)
    events = store.read_share(plan, replica)
    if pipeline_for(queues).watermarked(op):
        return run_timed_share(store, ctx, plan, replica, events, (started, cpu_started))
    if not len(events):  # an active replica with nothing in this batch: no transaction at all
        return TaskResult(replica, 0, 0, 0, 0.0)
    state = share_state(store, ctx, events)
    applied, timed_out = process(ctx, events, state)
    busy, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    commit = commit_of(op, plan.batch, replica, applied, timed_out, busy, state, cpu)
    fresh = store.commit_share(commit)
    return TaskResult(replica, len(events), len(events) if fresh else 0, commit.n_out, busy)


def run_timed_share(
    store: TaskStore,
    ctx: OperatorContext,
    plan: BatchPlan,
    replica: int,
    queued: EventBatch,
    clocks: tuple[float, float],
) -> TaskResult:
    """A share of an operator with an operator-wide watermark (docs/state.md): its events
    without ticks, plus the held events whose timers the batch's watermark passed; committed
    even when empty (the watermark's fold waits for every share), with the timers left and,
    for an event-time assigner, the largest event time it emitted."""
    spec = ctx.spec
    events = wmk.without_ticks(queued)
    previous, watermark = wmk.share_watermark(store, spec.name, plan)
    timers: dict[int, list[Timer]] = {}
    fired: list[Timer] = []
    state = None
    if not spec.stateless:
        timers = wmk.load_timers(store, spec.name, spec.key_groups, plan, replica)
        fired = wmk.due(timers, watermark)
        again = [t.event for t in fired]
        state = share_state(store, ctx, events, again, (previous, watermark))
        if again:
            events = EventBatch.concat([events, events_batch(again)])
    applied, timed_out = process(ctx, events, state, frozenset(t.event.id for t in fired))
    busy = time.perf_counter() - clocks[0]
    cpu = time.process_time() - clocks[1]
    commit = commit_of(spec.name, plan.batch, replica, applied, timed_out, busy, state, cpu)
    extra = []
    if state is not None:
        extra = wmk.timer_writes(timers, fired, state.deferred(), spec.key_groups)
    if spec.event_time is not None:
        top = wmk.emitted_max(commit.outputs, spec.event_time.field)
        extra.append(StateWrite(0, wmk.slot_key(replica), encode_value([plan.start, top])))
    n_queued = len(queued)
    commit = replace(commit, events=n_queued, state=commit.state + tuple(extra))
    fresh = store.commit_share(commit)
    return TaskResult(replica, n_queued, n_queued if fresh else 0, commit.n_out, busy)


def share_state(
    store: StateStore,
    ctx: OperatorContext,
    events: EventBatch,
    fired: list[Event] | None = None,
    watermarks: tuple[float, float] = (-math.inf, -math.inf),
) -> KeyedState | None:
    """A stateful operator's state handle for the keys of a share (and of its fired timers), as
    committed so far (None for a stateless operator). The plan gave this replica whole key
    groups, so no other replica writes these keys while this batch runs."""
    if ctx.spec.stateless:
        return None
    groups = ctx.spec.key_groups
    keys = sorted(set(events.keys) | {e.key for e in fired or ()})
    committed = store.read_state(ctx.spec.name, [(key_group(k, groups), k) for k in keys])
    previous, watermark = watermarks
    return KeyedState(ctx.spec.name, groups, keys, committed, watermark, previous)


@dataclass(frozen=True)
class Processed:
    """A share after the operator: the rows it ran on and what it did with them."""

    live: EventBatch
    applied: Applied


def process(
    ctx: OperatorContext,
    events: EventBatch,
    state: KeyedState | None = None,
    fired: frozenset = frozenset(),
) -> tuple[Processed, np.ndarray]:
    """t_out first (an event older than t_out when its turn comes is not processed: its root
    is returned as timed out; a held event delivered again, in `fired`, is not), then the
    operator function on the rest (with `state` for a stateful operator), then the operator's
    declared service time."""
    now, event_timeout_s = time.time(), ctx.event_timeout_s
    stale = np.zeros(len(events), bool)
    if event_timeout_s is not None and len(events):
        stale = now - events.ts > event_timeout_s
        if fired and stale.any():
            stale &= ~np.isin(events.ids, np.fromiter(fired, np.int64, len(fired)))
    live = events.take(np.flatnonzero(~stale)) if stale.any() else events
    applied = apply_operator(ctx, live, state, fired)
    if ctx.spec.service_time_ms and len(live):
        time.sleep(len(live) * ctx.spec.service_time_ms / 1000.0)
    return Processed(live, applied), events.roots[stale]


def commit_of(
    op: str,
    batch: str,
    replica: int,
    processed: Processed,
    timed_out: np.ndarray,
    busy_s: float,
    state: KeyedState | None,
    cpu_s: float,
) -> ShareCommit:
    """The share's one commit: outputs per target, the roots of every fate, the events the
    function failed on alone, the state writes."""
    live, applied = processed.live, processed.applied
    fates = applied.fates(live)
    if len(timed_out):
        fates[OutcomeKind.TIMEOUT] = timed_out
    failures = tuple(
        failure_record(int(live.ids[k]), int(live.roots[k]), message, live.take([k]).payloads()[0])
        for k, message in sorted(applied.errors.items())
    )
    return ShareCommit(
        op,
        batch,
        replica,
        len(live) + len(timed_out),
        busy_s,
        applied.outputs,
        fates,
        failures,
        tuple(state.writes()) if state is not None else (),
        cpu_s,
    )


def hold_worker(hold_s: float, batches: Iterator[Any]) -> Iterator[Any]:
    """The warm-up task of a Python worker (`session.warm_python_workers`): with this module
    imported (what `read` needs), keep the worker busy for `hold_s`, say who it is. It lives
    here, not beside the driver's session code, so the worker that unpickles it imports only
    task-side modules."""
    import pyarrow as pa

    for _ in batches:
        pass
    time.sleep(hold_s)
    yield pa.RecordBatch.from_pydict({"pid": [os.getpid()]})
