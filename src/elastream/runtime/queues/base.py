"""The batch-oriented queue interface the Spark runtime uses, by role, and the records it moves.

A backend keeps durable, offset-addressed queues. Producers append whole batches; the consumer of
a queue plans a micro-batch once (`plan_batch`: offset range, replica count, which replica gets
which event), and each replica commits its share — outputs to the successor queues, fates and the
"share done" mark — in one atomic step keyed by (operator, batch, replica): a replayed share adds
nothing, and a replayed batch reuses its recorded plan. A stateful operator's share also commits
its keyed-state writes in that step (`StateStore`, docs/state.md).

A segment — the events one append brought — is stored as two Arrow IPC streams: its index (the
key column, what a plan divides, and the root column, what the lineage count reads), and the
rest (timestamps, the payload columns): `encode_batch`.

The interface is split by role: `DataPath` (queues, plans, share commits, dropping the consumed),
`ControlTable` (the driver's control rows and the run's key/value records), `Metrics` (the
Monitor step's per-interval figures), `AuditTrail` (end-of-run accounting and its retention) and
`StateStore`; `TaskStore` is what the executors use, `QueueStore` the whole store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
import pyarrow as pa

from elastream.model.batch import KEY, META_FIELDS, ROOT, EventBatch, pack
from elastream.model.events import Event, Outcome, OutcomeKind
from elastream.model.state import StateWrite

Divide = Callable[[list[str]], list[int]]  # the keys of a batch -> the replica of every event


class QueueError(RuntimeError):
    """A queue misuse: unknown queue, an output routed to a missing stream, a conflicting plan."""


@dataclass(frozen=True, slots=True)
class Stored:
    """The events at offsets [first, first + len(batch)) of a queue, as one batch (its
    positions set), and when they arrived there."""

    first: int
    batch: EventBatch
    enq: float


class Appended(NamedTuple):
    """What one append did: events accepted, and refused because the queue was full (q_size)."""

    accepted: int
    refused: int


class BatchWork(NamedTuple):
    """One committed micro-batch of an operator: its slowest share's busy seconds, its events,
    its largest share's events and how many shares (tasks) it had."""

    op: str
    batch: str
    busy_s: float
    events: int
    largest: int
    tasks: int


class ReplicaWork(NamedTuple):
    """A replica's shares committed in a window: events handled, busy and CPU seconds; and, for
    the service-time variance (prediction/service_time.py, Eq. V3), how many of those shares had
    events and the sum over them of busy_s² / events."""

    events: int
    busy_s: float
    cpu_s: float = 0.0
    shares: int = 0
    busy_sq_per_event: float = 0.0


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """One planned micro-batch of an operator: offsets [start, end), divided among `replicas`;
    `owners[k]` is the replica of the event at offset start + k."""

    op: str
    start: int
    end: int
    replicas: int
    owners: bytes

    @property
    def batch(self) -> str:
        return f"{self.start}-{self.end}"


@dataclass(frozen=True, slots=True)
class FailedEvent:
    """An input event the operator function raised on, alone: kept for inspection (its payload
    as msgpack)."""

    id: int
    root: int
    message: str
    payload: bytes


@dataclass(frozen=True, slots=True)
class ShareCommit:
    """Everything one replica commits for its share of a batch, atomically."""

    op: str
    batch: str
    replica: int
    events: int
    busy_s: float
    outputs: dict[str, EventBatch] = field(default_factory=dict)  # target queue -> events
    fates: dict[OutcomeKind, np.ndarray] = field(default_factory=dict)  # kind -> roots
    failures: tuple[FailedEvent, ...] = ()
    state: tuple[StateWrite, ...] = ()  # keyed-state puts and deletes of a stateful operator
    cpu_s: float = 0.0  # CPU seconds the replica's process spent on the share

    @property
    def n_out(self) -> int:
        return sum(len(v) for v in self.outputs.values())

    def count(self, kind: OutcomeKind) -> int:
        return len(self.fates.get(kind, ()))


@dataclass(frozen=True, slots=True)
class Audit:
    """End-of-run accounting by source event (root). For a pipeline without replicated streams,
    every root has exactly one fate and `events_in == sum of the fates + pending`."""

    events_in: int
    to_sink: int
    filtered: int
    timeout: int
    overflow: int
    failed: int
    pending: int
    sink_events: int
    duplicate_sink_roots: int
    roots_with_two_fates: int


@dataclass(frozen=True, slots=True)
class ExpiredCounts:
    """What `expire` forgot, kept as counts so that the audit still adds up: distinct roots and
    events that reached a sink, and the roots of each recorded fate."""

    to_sink: int = 0
    sink_events: int = 0
    filtered: int = 0
    timeout: int = 0
    overflow: int = 0

    def items(self) -> list[tuple[str, int]]:
        return [(name, getattr(self, name)) for name in self.__slots__]


class Expiry(NamedTuple):
    """What one `expire` call deleted: records, and the end-to-end latencies (ms) of the sink
    events among them (the caller folds them into its run's latency totals)."""

    records: int
    sink_latencies_ms: list[float]


class Lineage(NamedTuple):
    """Source events offered so far, those with a descendant still queued, and those whose
    lineage lost an event (dropped or failed); the rest have completed."""

    events_in: int
    pending: int
    lost: int

    @property
    def completed(self) -> int:
        return self.events_in - self.pending - self.lost


class Segment(NamedTuple):
    """One appended batch as a backend stores it: its first offset, its arrival time, and its
    events as two Arrow IPC blobs (`encode_batch`: the keys, then the rest)."""

    first: int
    enq: float
    keys: bytes
    body: bytes


class Control(NamedTuple):
    """An operator's control row, as the driver last published it: active replicas, admission
    cap per batch, mean per-event time et_i (s) and each replica's own et_ij (s)."""

    replicas: int
    cap: int
    et: float
    replica_et: list[float]


class OutcomeCounts(NamedTuple):
    """An operator's outcomes in a window: events by outcome kind, and the outputs they made."""

    by_kind: dict[str, int]
    outputs: int


class SinkLatency(NamedTuple):
    """The events that reached any sink in a window, and their mean end-to-end latency (ms;
    None when there were none)."""

    events: int
    mean_ms: float | None


class SinkSpan(NamedTuple):
    """The earliest source timestamp and the latest sink arrival of the events at the sinks."""

    first_ts: float
    last_arrival: float


class StateItem(NamedTuple):
    """One key of a stateful operator's keyed state: its key group, the key, its msgpack value."""

    group: int
    key: str
    value: bytes


def build_audit(
    events_in: int,
    pending: int,
    sink_roots: np.ndarray,
    fates: dict[str, np.ndarray],
    expired: ExpiredCounts,
) -> Audit:
    """The audit from the retained records (`fates`: fate -> roots, without "to_sink") plus what
    was expired; duplicates and roots with two fates are checked among the retained records."""
    distinct = {"to_sink": np.unique(sink_roots)}
    distinct.update({name: np.unique(roots) for name, roots in fates.items()})
    every = np.concatenate([np.empty(0, np.int64), *distinct.values()])
    _, counts = np.unique(every, return_counts=True)
    gone = dict(expired.items())
    return Audit(
        events_in=events_in,
        pending=pending,
        sink_events=len(sink_roots) + gone.pop("sink_events"),
        duplicate_sink_roots=len(sink_roots) - len(distinct["to_sink"]),
        roots_with_two_fates=int((counts > 1).sum()),
        **{name: len(roots) + gone.get(name, 0) for name, roots in distinct.items()},
    )


def share_commit(
    op: str,
    batch: str,
    replica: int,
    outcomes: Sequence[Outcome],
    failures: Sequence[FailedEvent],
    busy_s: float,
    state: Sequence[StateWrite] = (),
    cpu_s: float = 0.0,
) -> ShareCommit:
    """Fold a share's per-event outcomes into one commit: outputs grouped by target queue, the
    roots of each fate, and the share's state writes (the runtime builds its commits from whole
    columns instead: `runtime.spark.task`)."""
    outputs: dict[str, list[Event]] = {}
    fates: dict[OutcomeKind, list[int]] = {}
    for outcome in outcomes:
        for target, event in outcome.outputs:
            outputs.setdefault(target, []).append(event)
        fates.setdefault(outcome.kind, []).append(outcome.root)
    batches = {target: batch_of(events) for target, events in outputs.items()}
    roots = {kind: np.asarray(r, np.int64) for kind, r in fates.items()}
    n = len(outcomes)
    return ShareCommit(
        op, batch, replica, n, busy_s, batches, roots, tuple(failures), tuple(state), cpu_s
    )


def batch_of(events: Sequence[Event] | EventBatch) -> EventBatch:
    """A batch to append (sources and tests may append Python events)."""
    if isinstance(events, EventBatch):
        return events
    return EventBatch.of(
        [e.root for e in events], [e.key for e in events], [e.ts for e in events],
        [e.payload for e in events],
    )  # fmt: skip


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


def failure_record(event_id: int, root: int, message: str, payload: Any) -> FailedEvent:
    """An event the operator failed on, with its payload kept (msgpack)."""
    return FailedEvent(event_id, root, message, pack(payload))


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
        pending = np.unique(np.concatenate([self.pending_roots(op) for op in operators] or [[]]))
        lost_kept, lost_expired = self._lost_roots()
        lost = np.setdiff1d(lost_kept, pending).size + lost_expired
        return Lineage(self._events_in(), len(pending), lost)

    def _lost_roots(self) -> tuple[np.ndarray, int]:
        """The distinct roots of the dropped (timeout, overflow) and failed events kept, and the
        count of those already expired."""
        raise NotImplementedError

    def _events_in(self) -> int:
        raise NotImplementedError

    def _sink_segments(self, before: float = math.inf) -> Iterator[tuple[str, Stored]]:
        """(sink, segment) of each sink segment in offset order, up to the first one that
        arrived at or after `before` (what `expire(before)` forgets)."""
        for q in self._sink_queues():
            for first, enq, keys, body in self._segments(q, 0, 2**62):
                if enq >= before:
                    break
                yield q, Stored(first, decode_batch(keys, body), enq)

    def _sink_latencies(self, before: float, since: float = -math.inf) -> np.ndarray:
        """End-to-end latencies (ms) of the kept sink events that arrived in [since, before)."""
        parts = [
            (stored.enq - stored.batch.ts) * 1000
            for _, stored in self._sink_segments(before)
            if stored.enq >= since
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


# The store by role. A backend implements them all (`QueueStore`); each consumer is typed
# against the roles it uses: the executors' tasks, sources and sinks against `TaskStore`
# (or one of its roles), the driver's Monitor step against `Metrics`, the end of a run
# against `AuditTrail`.


class DataPath(Protocol):
    """The events' path: queues with bounds, idempotent appends, batch plans recorded once,
    exactly-once share commits, and dropping what a consumer committed."""

    def create_queue(self, name: str, bound: int | None, sink: bool = False) -> None: ...

    def append(
        self, q: str, events: Sequence[Event] | EventBatch, producer: str, first: int
    ) -> Appended:
        """A source offers its events number `first`, `first + 1`, … to `q`; events it offered
        before (a resumed source regenerating them) are skipped, so appends are idempotent."""
        ...

    def produced(self, q: str, producer: str) -> int:
        """How many events source `producer` has offered to `q` (where a resumed source goes on)."""
        ...

    def latest(self, q: str) -> int:
        """The offset after the last event appended to `q`."""
        ...

    def pending(self, q: str) -> int:
        """Events appended to `q` and not yet committed by its consumer."""
        ...

    def plan_batch(self, op: str, start: int, end: int, replicas: int, divide: Divide) -> BatchPlan:
        """The plan of `op`'s batch [start, end): recorded now, or the one recorded before (an
        empty batch is not recorded)."""
        ...

    def plan_range(
        self, op: str, start: int, end: int, replicas: int, divide: Divide
    ) -> list[BatchPlan]:
        """The plans covering `op`'s offsets [start, end): the batches recorded there before, in
        order, then one new plan (`plan_batch`) for the rest. Spark replays a range whole after a
        restart, and with asynchronous progress tracking a replayed range may span several
        recorded batches: each is re-run as it was planned. QueueError if the range cuts one."""
        ...

    def planned_end(self, op: str, start: int) -> int | None:
        """Where the batch recorded from `start` ends; None if none is recorded there."""
        ...

    def plan(self, op: str, start: int, end: int) -> BatchPlan:
        """The recorded plan of `op`'s batch [start, end) (QueueError if none)."""
        ...

    def read(self, q: str, start: int, end: int) -> list[Stored]: ...

    def read_share(self, plan: BatchPlan, replica: int) -> EventBatch:
        """Replica `replica`'s events of a planned batch, in offset order, with their offsets as
        positions."""
        ...

    def share_done(self, op: str, batch: str, replica: int) -> bool: ...

    def commit_share(self, commit: ShareCommit) -> bool:
        """Outputs, fates, failures, state writes and the done mark in one transaction; False
        (and nothing written) if the share was committed before."""
        ...

    def drop_consumed(self, op: str, end: int) -> int:
        """Retention: drop `op`'s input events below `end` (its consumer committed them)."""
        ...


class ControlTable(Protocol):
    """What the driver tells the executors, and the run's records: each operator's control row
    (published every interval, read at plan time) and a key/value table of JSON values (the
    pipeline, td, watermarks, source positions, delivered marks)."""

    def set_control(
        self, op: str, replicas: int, cap: int, et: float, replica_et: Sequence[float]
    ) -> None: ...

    def control(self, op: str) -> Control:
        """`op`'s row as last published (QueueError if none was)."""
        ...

    def set_meta(self, key: str, value: Any) -> None: ...

    def meta(self, key: str, default: Any = None) -> Any: ...


class Metrics(Protocol):
    """The per-interval figures the Monitor step reads, by commit or append time [t0, t1)."""

    def arrivals(self, q: str, t0: float, t1: float) -> dict[str, int]:
        """Events offered to `q` in [t0, t1) per producer, refused ones included (λ^p_i)."""
        ...

    def overflow_count(self, q: str, t0: float, t1: float) -> int:
        """Events `q` refused in [t0, t1) because it was full (q_size)."""
        ...

    def outcome_counts(self, op: str, t0: float, t1: float) -> OutcomeCounts: ...

    def task_stats(self, op: str, t0: float, t1: float) -> dict[int, ReplicaWork]:
        """Per replica: the work of `op`'s shares committed in [t0, t1)."""
        ...

    def batch_work(self) -> list[BatchWork]:
        """Per (operator, micro-batch): slowest busy seconds, events, largest share, shares."""
        ...

    def lineage(self, operators: Sequence[str]) -> Lineage:
        """Source events offered, still queued, lost and completed (`Lineage`)."""
        ...

    def sink_latency(self, t0: float, t1: float | None = None) -> SinkLatency: ...

    def sink_latencies_ms_between(self, t0: float, t1: float) -> list[float]:
        """End-to-end latencies of the sink events kept that arrived in [t0, t1)."""
        ...


class AuditTrail(Protocol):
    """End-of-run accounting by source event, what the sinks hold, and the retention of those
    records."""

    def audit(self) -> Audit: ...

    def sink_batches(self, q: str) -> list[Stored]:
        """The segments sink queue `q` still holds, in order (positions: offsets)."""
        ...

    def sink_events(self, q: str) -> list[Event]:
        """The events sink queue `q` still holds (retention expires the older ones), in order."""
        ...

    def sink_roots(self, q: str) -> list[int]:
        """The roots of the events sink queue `q` still holds, in order."""
        ...

    def sink_span(self) -> SinkSpan: ...

    def sink_latencies_ms(self, before: float = math.inf) -> list[float]:
        """End-to-end latencies of the sink events kept (those `expire(before)` would forget)."""
        ...

    def expire(self, before: float) -> Expiry:
        """Retention of the audit and monitoring records: forget sink events, appends and the
        shares of released batches recorded before `before`, keeping their fates as counts (the
        audit still adds up)."""
        ...


class StateStore(Protocol):
    """Keyed state of stateful operators, addressed by (operator, key group, key), values msgpack.

    What a backend adds for keyed state: these two reads, and, inside `commit_share`'s one atomic
    step, only when the share's done mark is new: every `ShareCommit.state` write (`value` bytes:
    insert or replace; None: delete)."""

    def read_state(self, op: str, keys: Sequence[tuple[int, str]]) -> dict[str, bytes]:
        """The committed values of the (key group, key) pairs that have one, by key."""
        ...

    def state_items(self, op: str, groups: range | None = None) -> Iterator[StateItem]:
        """Every key of `op` in `groups` (None: all), ordered by group then key."""
        ...


class TaskStore(DataPath, ControlTable, StateStore, Protocol):
    """What the Spark side of a run uses (operator sources and tasks, sinks, ingest, feeder):
    the data path, the control table and keyed state; no monitoring, no audit."""


class QueueStore(TaskStore, Metrics, AuditTrail, Protocol):
    """The whole store, as `queues.open_store` returns it and the driver holds it."""

    address: str  # where it is: a file path (SQLite) or a redis:// URL (`queues.open_store`)

    def close(self) -> None: ...
