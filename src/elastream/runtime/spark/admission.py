"""A source's events into the first operators' queues, exactly once and with backpressure: each
event's position (the store skips one offered before), and the wait for room (`Admission`)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from elastream.model.batch import EventBatch
from elastream.model.endpoints import SourceSpec
from elastream.model.pipeline import Pipeline
from elastream.runtime.queues import TaskStore, open_store

WAIT_S = 0.05  # how often a blocked append looks for room, s


class SourceError(RuntimeError):
    """An external source that cannot run; the message names the source and the cause."""


class Stopped(RuntimeError):
    """The run stops while an append waits for room: the batch is not committed (a resumed run
    replays it, appending nothing twice)."""


def source_batch(
    pipeline: Pipeline, spec: SourceSpec, first: int, table: pa.Table, now: float | None = None
) -> EventBatch:
    """A source's rows, its events number `first`, `first + 1`, …, as one batch: root the
    source's position, key the `key` column as text (else the root's digits), timestamp now;
    the payload is the table itself (no row-by-row conversion)."""
    roots = pipeline.source_roots(spec.name, np.arange(first, first + table.num_rows))
    if spec.key is not None:
        if spec.key not in table.column_names:
            raise SourceError(f"source {spec.name!r}: key column {spec.key!r} is not in its rows")
        keys = pc.fill_null(pc.cast(table.column(spec.key), pa.string()), "None")
    else:
        keys = pc.cast(pa.array(roots), pa.string())
    return EventBatch.build(roots, keys, time.time() if now is None else now, table)


_threads = threading.local()


def thread_store(address: str) -> TaskStore:
    """This thread's connection to the store at `address` (Spark calls foreachBatch functions
    from its own threads, and a SQLite connection serves the thread that opened it)."""
    stores: dict[str, TaskStore] = _threads.__dict__.setdefault("stores", {})
    if address not in stores:
        stores[address] = open_store(address)
    return stores[address]


@dataclass
class Admission:
    """Appends a source's events to its targets, waiting while a target has no room (`bound`
    pending events: the runtime passes the smaller of q_size and ingest_bound): backpressure
    instead of a drop."""

    address: str  # the queue store's
    pipeline: Pipeline
    source: str
    targets: tuple[str, ...]
    bound: int
    stop: threading.Event
    offered: int = 0  # events appended over the run (the snapshot's λ comes from the store)

    @property
    def store(self) -> TaskStore:
        return thread_store(self.address)

    def position(self) -> int:
        """Where the source goes on: the fewest events any target has from it."""
        return min(self.store.produced(t, self.source) for t in self.targets)

    @property
    def spec(self) -> SourceSpec:
        return next(s for s in self.pipeline.sources if s.name == self.source)

    def append_table(self, first: int, table: pa.Table) -> None:
        """The rows of `table` as the source's events number first, first + 1, …"""
        self.append(first, source_batch(self.pipeline, self.spec, first, table))

    def append(self, first: int, events: EventBatch) -> None:
        """Offer events number first .. first + len - 1, in chunks that fit; the store skips
        the ones offered before."""
        done = 0
        while done < len(events):
            room = self._room()
            if room <= 0:
                if self.stop.is_set():
                    raise Stopped(f"source {self.source!r}: the run stops")
                time.sleep(WAIT_S)
                continue
            chunk = events.slice(done, min(len(events), done + room))
            store = self.store
            for target in self.targets:
                store.append(target, chunk, self.source, first + done)
            done += len(chunk)
        self.offered += len(events)

    def _room(self) -> int:
        store = self.store
        return min(self.bound - store.pending(t) for t in self.targets)


def batch_start(source: str, batch_id: int, admission: Admission) -> int:
    """The producer position of Spark micro-batch `batch_id`: recorded when the batch first
    ran, so that a replay appends at the same position (and adds nothing)."""
    store = admission.store
    key = f"ingest:{source}:{batch_id}"
    recorded = store.meta(key)
    if recorded is not None:
        return int(recorded)
    first = admission.position()
    store.set_meta(key, first)
    store.set_meta(f"ingest:{source}:{batch_id - 2}", None)  # older batches are never replayed
    return first
