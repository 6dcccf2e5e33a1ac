"""The batch-oriented queue interface the Spark runtime uses, by role, and the records it moves.

A backend keeps durable, offset-addressed queues. Producers append whole batches; the consumer of
a queue plans a micro-batch once (`plan_batch`: offset range, replica count, which replica gets
which event), and each replica commits its share — outputs to the successor queues, fates and the
"share done" mark — in one atomic step keyed by (operator, batch, replica): a replayed share adds
nothing, and a replayed batch reuses its recorded plan. A stateful operator's share also commits
its keyed-state writes in that step (`StateStore`, docs/state.md).

The interface is split by role: `DataPath` (queues, plans, share commits, release),
`ControlTable` (the driver's control rows and the run's key/value records), `Metrics` (the
Monitor step's per-interval figures), `AuditTrail` (end-of-run accounting and its retention) and
`StateStore`; `TaskStore` is what the executors use, `QueueStore` the whole store.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import msgpack
import numpy as np

from elastream.model.events import Event, EventColumns, Outcome, OutcomeKind
from elastream.model.state import StateWrite

Divide = Callable[[list[str]], list[int]]  # the keys of a batch -> the replica of every event


class QueueError(RuntimeError):
    """A queue misuse: unknown queue, an output routed to a missing stream, a conflicting plan."""


@dataclass(frozen=True, slots=True)
class Stored:
    """An event as stored in a queue, with its offset and arrival time."""

    off: int
    event: Event
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

    def share(self, replica: int) -> list[int]:
        """The offsets replica `replica` processes."""
        return [self.start + k for k, owner in enumerate(self.owners) if owner == replica]


@dataclass(frozen=True, slots=True)
class FailedEvent:
    """An input event the operator function raised on, alone: kept for inspection."""

    id: str
    root: str
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
    outputs: dict[str, EventColumns] = field(default_factory=dict)  # target queue -> events
    fates: dict[OutcomeKind, list[str]] = field(default_factory=dict)  # kind -> roots
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


class Segment(NamedTuple):
    """One appended batch as a backend stores it: its first offset, its arrival time, and its
    events as two msgpack blobs (`encode_events`: the keys, then the rest)."""

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
    sink_roots: list[str],
    fates: dict[str, set[str]],
    expired: ExpiredCounts,
) -> Audit:
    """The audit from the retained records (`fates`: fate -> roots, without "to_sink") plus what
    was expired; duplicates and roots with two fates are checked among the retained records."""
    fates = {"to_sink": set(sink_roots), **fates}
    seen: dict[str, int] = defaultdict(int)
    for roots in fates.values():
        for root in roots:
            seen[root] += 1
    kept = {name: len(roots) for name, roots in fates.items()}
    gone = dict(expired.items())
    return Audit(
        events_in=events_in,
        pending=pending,
        sink_events=len(sink_roots) + gone.pop("sink_events"),
        duplicate_sink_roots=len(sink_roots) - len(fates["to_sink"]),
        roots_with_two_fates=sum(1 for n in seen.values() if n > 1),
        **{name: n + gone.get(name, 0) for name, n in kept.items()},
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
    fates: dict[OutcomeKind, list[str]] = {}
    for outcome in outcomes:
        for target, event in outcome.outputs:
            outputs.setdefault(target, []).append(event)
        fates.setdefault(outcome.kind, []).append(outcome.root)
    columns = {target: EventColumns.of(events) for target, events in outputs.items()}
    n = len(outcomes)
    return ShareCommit(
        op, batch, replica, n, busy_s, columns, fates, tuple(failures), tuple(state), cpu_s
    )


def encode_payload(payload: Any) -> bytes:
    """The stored form of one payload (msgpack)."""
    return msgpack.packb(payload, use_bin_type=True)


def as_columns(events: Sequence[Event] | EventColumns) -> EventColumns:
    """A batch to append, column-wise (sources may append either form)."""
    return events if isinstance(events, EventColumns) else EventColumns.of(events)


def encode_events(events: EventColumns) -> tuple[bytes, bytes]:
    """A batch as two msgpack blobs: its keys (read at plan time) and the rest, column-wise."""
    keys = msgpack.packb(events.keys, use_bin_type=True)
    body = msgpack.packb([events.ids, events.roots, events.ts, events.payloads], use_bin_type=True)
    return keys, body


def decode_keys(blob: bytes) -> list[str]:
    return msgpack.unpackb(blob, raw=False)


def decode_columns(keys_blob: bytes, body_blob: bytes) -> EventColumns:
    """The inverse of `encode_events`."""
    keys = decode_keys(keys_blob)
    ids, roots, stamps, payloads = msgpack.unpackb(body_blob, raw=False, strict_map_key=False)
    if not len(ids) == len(keys) == len(roots) == len(stamps) == len(payloads):
        raise QueueError(f"a stored segment's columns differ in length ({len(ids)} ids)")
    return EventColumns(ids, keys, stamps, payloads, roots)


def decode_events(keys_blob: bytes, body_blob: bytes) -> list[Event]:
    """A stored segment as Event objects."""
    return decode_columns(keys_blob, body_blob).events()


def pack_roots(roots: Sequence[str]) -> bytes:
    return msgpack.packb(list(roots), use_bin_type=True)


def unpack_roots(blob: bytes | None) -> list[str]:
    return [] if blob is None else msgpack.unpackb(blob, raw=False)


MAX_REPLICAS = 255  # a plan stores each event's replica in one byte


class SegmentedQueues:
    """Reading and planning, the same for every backend that keeps a queue as msgpack segments
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

    def _sink_segments(
        self, before: float = math.inf
    ) -> Iterator[tuple[str, int, float, list[Event]]]:
        """(sink, first offset, arrival time, events) of each sink segment in offset order, up to
        the first one that arrived at or after `before` (what `expire(before)` forgets)."""
        for q in self._sink_queues():
            for first, enq, keys, body in self._segments(q, 0, 2**62):
                if enq >= before:
                    break
                yield q, first, enq, decode_events(keys, body)

    def _sink_events(self, before: float = math.inf) -> Iterator[tuple[str, float, Event]]:
        """(sink, arrival time, event) of the events in sink queues (see `_sink_segments`)."""
        for q, _, enq, events in self._sink_segments(before):
            for event in events:
                yield q, enq, event

    def sink_latencies_ms(self, before: float = math.inf) -> list[float]:
        return [(enq - e.ts) * 1000 for _, enq, e in self._sink_events(before)]

    def sink_latencies_ms_between(self, t0: float, t1: float) -> list[float]:
        """End-to-end latencies of the sink events kept that arrived in [t0, t1)."""
        return [(enq - e.ts) * 1000 for _, enq, e in self._sink_events(t1) if enq >= t0]

    def sink_ids(self, q: str) -> list[str]:
        return [e.id for sink, _, e in self._sink_events() if sink == q]

    def sink_events(self, q: str) -> list[Event]:
        """The events sink queue `q` still holds (retention expires the older ones), in order."""
        if q not in self._sink_queues():
            raise QueueError(f"{q!r} is not a sink queue")
        return [e for sink, _, e in self._sink_events() if sink == q]

    def sink_span(self) -> SinkSpan:
        """The earliest source timestamp and the latest arrival of the events at the sinks."""
        stamps = [(e.ts, enq) for _, enq, e in self._sink_events()]
        if not stamps:
            raise QueueError("no event reached a sink")
        return SinkSpan(min(ts for ts, _ in stamps), max(enq for _, enq in stamps))

    def keys(self, q: str, start: int, end: int) -> list[str]:
        """The keys of the events at offsets [start, end) (what a plan divides)."""
        out: list[str] = []
        for first, _, keys, _ in self._segments(q, start, end):
            out.extend(decode_keys(keys)[max(0, start - first) : end - first])
        if len(out) != end - start:
            raise QueueError(f"queue {q!r} holds {len(out)} of the events [{start}, {end})")
        return out

    def read(self, q: str, start: int, end: int) -> list[Stored]:
        out: list[Stored] = []
        for first, enq, keys, body in self._segments(q, start, end):
            events = decode_events(keys, body)
            lo, hi = max(start, first), min(end, first + len(events))
            out.extend(Stored(off, events[off - first], enq) for off in range(lo, hi))
        if len(out) != end - start:
            raise QueueError(f"queue {q!r} holds {len(out)} of the events [{start}, {end})")
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
        owners = divide(self.keys(op, start, end)) if replicas > 1 else [0] * (end - start)
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

    def read_share(self, plan: BatchPlan, replica: int) -> EventColumns:
        """Replica `replica`'s events of a planned batch, in offset order."""
        parts: list[EventColumns] = []
        for first, _, keys, body in self._segments(plan.op, plan.start, plan.end):
            decoded = decode_columns(keys, body)
            lo = max(plan.start, first)
            hi = min(plan.end, first + len(decoded))
            owners = plan.owners[lo - plan.start : hi - plan.start]
            base = lo - first
            if plan.replicas == 1:  # every event is replica 0's
                parts.append(decoded.slice(base, base + len(owners) * (replica == 0)))
            else:
                mine = np.frombuffer(owners, dtype=np.uint8) == replica
                parts.append(decoded.take((np.flatnonzero(mine) + base).tolist()))
        return EventColumns.concat(parts)

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
    exactly-once share commits, and the release of what a consumer committed."""

    def create_queue(self, name: str, bound: int | None, sink: bool = False) -> None: ...

    def append(
        self, q: str, events: Sequence[Event] | EventColumns, producer: str, first: int
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

    def read_share(self, plan: BatchPlan, replica: int) -> EventColumns:
        """Replica `replica`'s events of a planned batch, in offset order, column-wise."""
        ...

    def share_done(self, op: str, batch: str, replica: int) -> bool: ...

    def commit_share(self, commit: ShareCommit) -> bool:
        """Outputs, fates, failures, state writes and the done mark in one transaction; False
        (and nothing written) if the share was committed before."""
        ...

    def release(self, op: str, end: int) -> int:
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

    def completed(self, t0: float, t1: float) -> int:
        """Events whose processing finished in [t0, t1): reached a sink, or filtered."""
        ...

    def sink_latency(self, t0: float, t1: float | None = None) -> SinkLatency: ...

    def sink_latencies_ms_between(self, t0: float, t1: float) -> list[float]:
        """End-to-end latencies of the sink events kept that arrived in [t0, t1)."""
        ...


class AuditTrail(Protocol):
    """End-of-run accounting by source event, what the sinks hold, and the retention of those
    records."""

    def audit(self) -> Audit: ...

    def sink_ids(self, q: str) -> list[str]: ...

    def sink_events(self, q: str) -> list[Event]:
        """The events sink queue `q` still holds (retention expires the older ones), in order."""
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
