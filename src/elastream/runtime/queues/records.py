"""The records the queue store moves and keeps: batch plans, share commits, failures, the audit
and the per-interval figures (the interface that moves them: `base`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from elastream.base.arrays import distinct, distinct_counts
from elastream.model.batch import EventBatch, pack
from elastream.model.events import Event, Outcome, OutcomeKind
from elastream.model.state import StateWrite

Divide = Callable[[list[str]], list[int]]  # the keys of a batch -> the replica of every event

# the fates a share records, in the order both backends store their counts
SHARE_KINDS = (OutcomeKind.PROCESSED, OutcomeKind.FILTERED, OutcomeKind.TIMEOUT, OutcomeKind.ERROR)


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


def per_event_s(work: Iterable[ReplicaWork]) -> float | None:
    """et_i: the replicas' busy seconds over the events they handled (None: none handled)."""
    work = list(work)
    events = sum(w.events for w in work)
    return sum(w.busy_s for w in work) / events if events else None


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
    roots = {"to_sink": distinct(sink_roots)}
    roots.update({name: distinct(fated) for name, fated in fates.items()})
    _, counts = distinct_counts(np.concatenate([np.empty(0, np.int64), *roots.values()]))
    gone = dict(expired.items())
    return Audit(
        events_in=events_in,
        pending=pending,
        sink_events=len(sink_roots) + gone.pop("sink_events"),
        duplicate_sink_roots=len(sink_roots) - len(roots["to_sink"]),
        roots_with_two_fates=int((counts > 1).sum()),
        **{name: len(kept) + gone.get(name, 0) for name, kept in roots.items()},
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


def failure_record(event_id: int, root: int, message: str, payload: Any) -> FailedEvent:
    """An event the operator failed on, with its payload kept (msgpack)."""
    return FailedEvent(event_id, root, message, pack(payload))
