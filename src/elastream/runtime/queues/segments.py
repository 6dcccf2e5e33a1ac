"""How a backend keeps a queue: Arrow segments covering offset ranges, and the reading and
planning every such backend shares (`SegmentedQueues`).

A segment — the events one append brought — is stored as two Arrow IPC streams: its index (the
key column, what a plan divides, and the root column, what the lineage count reads), and the
rest (timestamps, the payload columns): `encode_batch`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from elastream.base.arrays import distinct
from elastream.model.batch import KEY, META_FIELDS, ROOT, TS, EventBatch
from elastream.model.events import Event
from elastream.runtime.queues.base import ControlTable
from elastream.runtime.queues.records import (
    BatchPlan,
    Divide,
    Lineage,
    QueueError,
    Segment,
    SinkSpan,
    Stored,
)

IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression=None)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _read_ipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


INDEX = (KEY, ROOT)  # a segment's first blob: what plans and the lineage count read


def encode_batch(batch: EventBatch) -> tuple[bytes, bytes]:
    """A batch as two Arrow IPC streams: its index (keys, roots), then the rest."""
    table = batch.table
    return _ipc(table.select(list(INDEX))), _ipc(table.drop_columns(list(INDEX)))


def decode_keys(blob: bytes) -> pa.ChunkedArray:
    """The key column of a stored segment (from its index blob)."""
    return _read_ipc(blob).column(0)


def decode_roots(blob: bytes) -> np.ndarray:
    """The root column of a stored segment (from its index blob)."""
    return _read_ipc(blob).column(1).to_numpy()


def decode_ts(body_blob: bytes) -> np.ndarray:
    """The event times of a stored segment (from its body blob), without the rest."""
    return _read_ipc(body_blob).column(TS).to_numpy()


def decode_batch(keys_blob: bytes, body_blob: bytes) -> EventBatch:
    """The inverse of `encode_batch` (the columns back in their order)."""
    body = _read_ipc(body_blob)
    index = _read_ipc(keys_blob)
    if index.num_rows != body.num_rows:
        raise QueueError(f"a stored segment's columns differ in length ({body.num_rows} rows)")
    for at, field_ in enumerate(META_FIELDS):  # in their order: root, key (ts is in the body)
        if field_.name in INDEX:
            body = body.add_column(at, field_, index.column(field_.name))
    return EventBatch(body)


def pack_roots(roots: np.ndarray | Sequence[int]) -> bytes:
    """Roots as stored: little-endian int64s."""
    return np.asarray(roots, dtype="<i8").tobytes()


def unpack_roots(blob: bytes | None) -> np.ndarray:
    return np.empty(0, np.int64) if not blob else np.frombuffer(blob, dtype="<i8")


STORE_FORMAT = "arrow-2"  # how segments, roots and failures are stored (this module)
FORMAT_KEY = "store_format"


def check_format(store: ControlTable, address: str, fresh: bool) -> None:
    """Mark a new store with STORE_FORMAT; refuse one written in another format (an earlier
    elastream's msgpack segments would be misread), naming the address."""
    found = store.meta(FORMAT_KEY)
    if found == STORE_FORMAT:
        return
    if found is None and fresh:
        store.set_meta(FORMAT_KEY, STORE_FORMAT)
        return
    raise QueueError(
        f"the queue store at {address} was written in another format "
        f"({found or 'an earlier msgpack format'}; this elastream reads {STORE_FORMAT}): it cannot "
        "be resumed here; start a new run (without --resume, or with another --out/--queues)"
    )


MAX_REPLICAS = 255  # a plan stores each event's replica in one byte


class LazyKeys(Sequence[str]):
    """The keys of a batch, read from the store only if a grouping looks at them (a division
    by load or in turn needs only their number)."""

    def __init__(self, load: Callable[[], list[str]], n: int) -> None:
        self._load = load
        self._n = n
        self._keys: list[str] | None = None

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if self._keys is None:
            self._keys = self._load()
        return self._keys[index]


class SegmentedQueues:
    """Reading and planning, the same for every backend that keeps a queue as Arrow segments
    covering offset ranges and records one plan per (operator, batch start). A backend supplies
    `_segments` (the segments overlapping [start, end), in order), `_plan` (the recorded plan or
    None), `_record_plan` (record a plan unless one is there: the first plan wins) and
    `_sink_queues` (the names of the sink queues)."""

    def _segments(self, q: str, start: int, end: int) -> Iterator[Segment]:
        raise NotImplementedError

    def _plan(self, op: str, start: int) -> BatchPlan | None:
        raise NotImplementedError

    def _record_plan(self, plan: BatchPlan) -> None:
        raise NotImplementedError

    def _sink_queues(self) -> list[str]:
        raise NotImplementedError

    def _plans(self, op: str) -> list[BatchPlan]:
        """Every recorded plan of `op` not yet released."""
        raise NotImplementedError

    def pending_roots(self, q: str) -> np.ndarray:
        """The roots of the events of operator queue `q` that its consumer has not committed:
        those of a recorded plan's share not yet done, and those of no plan yet. The plans are
        released in order from the bottom once all their shares are done, so every event below
        the first plan still recorded (with none recorded: all but the last `pending(q)`) is
        committed."""
        plans = sorted(self._plans(q), key=lambda plan: plan.start)
        floor = plans[0].start if plans else self.latest(q) - self.pending(q)
        parts = []
        for first, _, index, _ in self._segments(q, floor, 2**62):
            roots = decode_roots(index)
            waiting = np.arange(first, first + len(roots)) >= floor
            for plan in plans:
                lo, hi = max(plan.start, first), min(plan.end, first + len(roots))
                if lo < hi:
                    owners = np.frombuffer(plan.owners, np.uint8)[lo - plan.start : hi - plan.start]
                    done = [j for j in set(owners.tolist()) if self.share_done(q, plan.batch, j)]
                    waiting[lo - first : hi - first] = ~np.isin(owners, done)
            parts.append(roots[waiting])
        return np.concatenate([np.empty(0, np.int64), *parts])

    def lineage(self, operators: Sequence[str]) -> Lineage:
        """Source events by where their lineage is (docs/outputs.md, `events_completed`): still
        somewhere in the operators' queues, lost (an output or the event itself dropped or
        failed), or completed. `operators` in topological order: an event moving downstream
        while the queues are read is seen at least once."""
        pending = distinct(np.concatenate([self.pending_roots(op) for op in operators] or [[]]))
        lost_kept, lost_expired = self._lost_roots()  # distinct too
        lost = np.setdiff1d(lost_kept, pending, assume_unique=True).size + lost_expired
        return Lineage(self._events_in(), len(pending), lost)

    def _lost_roots(self) -> tuple[np.ndarray, int]:
        """The distinct roots of the dropped (timeout, overflow) and failed events kept, and the
        count of those already expired."""
        raise NotImplementedError

    def _events_in(self) -> int:
        raise NotImplementedError

    def _arrived_segments(self, q: str, since: float) -> Iterator[Segment]:
        """Queue `q`'s segments in offset order; a backend that can leave out, unread, those
        that arrived before `since` overrides this (the callers skip them either way)."""
        return self._segments(q, 0, 2**62)

    def _sink_rows(self, before: float, since: float) -> Iterator[tuple[str, Segment]]:
        """(sink, stored segment) of each sink segment in offset order that arrived at or after
        `since`, up to the first one that arrived at or after `before`; not decoded."""
        for q in self._sink_queues():
            for segment in self._arrived_segments(q, since):
                if segment.enq >= before:
                    break
                if segment.enq >= since:
                    yield q, segment

    def _sink_segments(self, before: float = math.inf) -> Iterator[tuple[str, Stored]]:
        """(sink, segment) of each sink segment in offset order, up to the first one that
        arrived at or after `before` (what `expire(before)` forgets)."""
        for q, (first, enq, keys, body) in self._sink_rows(before, -math.inf):
            yield q, Stored(first, decode_batch(keys, body), enq)

    def _sink_latencies(self, before: float, since: float = -math.inf) -> np.ndarray:
        """End-to-end latencies (ms) of the kept sink events that arrived in [since, before):
        only those segments read, and of them only their event times."""
        parts = [
            (segment.enq - decode_ts(segment.body)) * 1000
            for _, segment in self._sink_rows(before, since)
        ]
        return np.concatenate(parts) if parts else np.empty(0)

    def sink_latencies_ms(self, before: float = math.inf) -> list[float]:
        return self._sink_latencies(before).tolist()

    def sink_latencies_ms_between(self, t0: float, t1: float) -> list[float]:
        """End-to-end latencies of the sink events kept that arrived in [t0, t1)."""
        return self._sink_latencies(t1, t0).tolist()

    def _sink_roots(self) -> np.ndarray:
        parts = [stored.batch.roots for _, stored in self._sink_segments()]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def sink_batches(self, q: str) -> list[Stored]:
        """The segments sink queue `q` still holds (retention expires the older ones), in
        order, each batch with its positions (offsets)."""
        if q not in self._sink_queues():
            raise QueueError(f"{q!r} is not a sink queue")
        return [self._positioned(q, stored) for sink, stored in self._sink_segments() if sink == q]

    def _positioned(self, q: str, stored: Stored) -> Stored:
        offsets = np.arange(stored.first, stored.first + len(stored.batch), dtype=np.int64)
        return Stored(stored.first, stored.batch.with_positions(offsets), stored.enq)

    def sink_roots(self, q: str) -> list[int]:
        """The roots of the events sink queue `q` still holds, in order (each source event's
        descendants at a sink of a pipeline without fan-out: once each)."""
        return [r for stored in self.sink_batches(q) for r in stored.batch.roots.tolist()]

    def sink_events(self, q: str) -> list[Event]:
        """The events sink queue `q` still holds, in order (ids: their sink offsets)."""
        return [e for stored in self.sink_batches(q) for e in stored.batch.events()]

    def sink_span(self) -> SinkSpan:
        """The earliest source timestamp and the latest arrival of the events at the sinks."""
        stamps = [
            (float(s.batch.ts.min()), s.enq) for _, s in self._sink_segments() if len(s.batch)
        ]
        if not stamps:
            raise QueueError("no event reached a sink")
        return SinkSpan(min(ts for ts, _ in stamps), max(enq for _, enq in stamps))

    def keys(self, q: str, start: int, end: int) -> list[str]:
        """The keys of the events at offsets [start, end) (what a plan divides)."""
        parts = []
        for first, _, keys, _ in self._segments(q, start, end):
            column = decode_keys(keys)
            lo, hi = max(0, start - first), min(len(column), end - first)
            parts.append(column.slice(lo, max(0, hi - lo)))
        out = [k for part in parts for k in part.to_pylist()]
        if len(out) != end - start:
            raise QueueError(f"queue {q!r} holds {len(out)} of the events [{start}, {end})")
        return out

    def read(self, q: str, start: int, end: int) -> list[Stored]:
        """The events at offsets [start, end), a batch per segment they lie in (with their
        positions: offsets), each with its arrival time."""
        out: list[Stored] = []
        for first, enq, keys, body in self._segments(q, start, end):
            batch = decode_batch(keys, body)
            lo, hi = max(start, first), min(end, first + len(batch))
            part = batch.slice(lo - first, hi - first)
            out.append(self._positioned(q, Stored(lo, part, enq)))
        if sum(len(s.batch) for s in out) != end - start:
            held = sum(len(s.batch) for s in out)
            raise QueueError(f"queue {q!r} holds {held} of the events [{start}, {end})")
        return out

    def plan_batch(self, op: str, start: int, end: int, replicas: int, divide: Divide) -> BatchPlan:
        if end == start:  # an empty batch (Spark plans one at start-up): nothing to record
            return BatchPlan(op, start, end, replicas, b"")
        recorded = self._plan(op, start)
        if recorded is not None:
            if recorded.end != end:
                raise QueueError(
                    f"operator {op!r}: batch from offset {start} was planned up to {recorded.end}, "
                    f"now asked up to {end}"
                )
            return recorded
        return self._record_new_plan(op, start, end, replicas, divide)

    def _record_new_plan(
        self, op: str, start: int, end: int, replicas: int, divide: Divide
    ) -> BatchPlan:
        """Divide [start, end) and record it; the plan recorded first wins a race."""
        if not 1 <= replicas <= MAX_REPLICAS:
            raise QueueError(f"operator {op!r}: {replicas} replicas, expected 1..{MAX_REPLICAS}")
        keys = LazyKeys(lambda: self.keys(op, start, end), end - start)
        owners = divide(keys) if replicas > 1 else [0] * (end - start)
        try:
            packed = bytes(owners)  # each owner in 0..255, else ValueError
        except (ValueError, TypeError):
            packed = b""
        if len(packed) != end - start or max(packed) >= replicas:
            raise QueueError(f"operator {op!r}: the division of batch {start}-{end} is invalid")
        plan = BatchPlan(op, start, end, replicas, packed)
        self._record_plan(plan)
        return self._plan(op, start) or plan

    def plan_range(
        self, op: str, start: int, end: int, replicas: int, divide: Divide
    ) -> list[BatchPlan]:
        at, plans = start, []
        while at < end:
            recorded = self._plan(op, at)
            if recorded is None:
                plans.append(self._record_new_plan(op, at, end, replicas, divide))
                break
            if recorded.end > end:
                raise QueueError(
                    f"operator {op!r}: the range {start}-{end} cuts the batch planned "
                    f"from {at} to {recorded.end}"
                )
            plans.append(recorded)
            at = recorded.end
        return plans

    def planned_end(self, op: str, start: int) -> int | None:
        recorded = self._plan(op, start)
        return None if recorded is None else recorded.end

    def read_events(self, q: str, start: int, end: int) -> list[Event]:
        """The events at offsets [start, end) as Python events (ids: their offsets)."""
        return [e for stored in self.read(q, start, end) for e in stored.batch.events()]

    def read_share(self, plan: BatchPlan, replica: int) -> EventBatch:
        """Replica `replica`'s events of a planned batch, in offset order, with their positions
        (offsets in the queue)."""
        parts: list[EventBatch] = []
        for first, _, keys, body in self._segments(plan.op, plan.start, plan.end):
            decoded = decode_batch(keys, body)
            lo = max(plan.start, first)
            hi = min(plan.end, first + len(decoded))
            owners = np.frombuffer(plan.owners, np.uint8)[lo - plan.start : hi - plan.start]
            if plan.replicas == 1:  # every event is replica 0's
                n = (hi - lo) * (replica == 0)
                part = decoded.slice(lo - first, lo - first + n)
                part = part.with_positions(np.arange(lo, lo + n, dtype=np.int64))
            else:
                mine = np.flatnonzero(owners == replica)
                part = decoded.take(mine + (lo - first)).with_positions(mine + lo)
            parts.append(part)
        return EventBatch.concat(parts) if parts else EventBatch.empty()

    def plan(self, op: str, start: int, end: int) -> BatchPlan:
        recorded = self._plan(op, start)
        if recorded is None or recorded.end != end:
            raise QueueError(f"operator {op!r}: no recorded plan for the batch {start}-{end}")
        return recorded
