"""The batch-oriented queue interface the Spark runtime uses, by role, and the records it moves.

A backend keeps durable, offset-addressed queues. Producers append whole batches; the consumer of
a queue plans a micro-batch once (`plan_batch`: offset range, replica count, which replica gets
which event), and each replica commits its share — outputs to the successor queues, fates and the
"share done" mark — in one atomic step keyed by (operator, batch, replica): a replayed share adds
nothing, and a replayed batch reuses its recorded plan. A stateful operator's share also commits
its keyed-state writes in that step (`StateStore`, docs/state.md).

How a queue is kept (Arrow segments) and the reading and planning backends share: `segments`;
the records moved: `records`.

The interface is split by role: `DataPath` (queues, plans, share commits, dropping the consumed),
`ControlTable` (the driver's control rows and the run's key/value records), `Metrics` (the
Monitor step's per-interval figures), `AuditTrail` (end-of-run accounting and its retention) and
`StateStore`; `TaskStore` is what the executors use, `QueueStore` the whole store.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from elastream.model.batch import EventBatch
from elastream.model.events import Event
from elastream.runtime.queues.records import (
    Appended,
    Audit,
    BatchPlan,
    BatchWork,
    Control,
    Divide,
    Expiry,
    Lineage,
    OutcomeCounts,
    ReplicaWork,
    ShareCommit,
    SinkLatency,
    SinkSpan,
    StateItem,
    Stored,
)

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
