"""The embedded queue store: durable batch queues of a run in one SQLite file (WAL mode).

Events are stored a batch at a time: one `segments` row holds the events an append brought, as
two Arrow IPC blobs (keys, the rest), and covers the integer offsets [first_off, end_off). One
file holds all queues of a run, so a replica's share — its outputs to every successor queue, its
fates and its "share done" mark — commits in one transaction keyed by (operator, batch,
replica); a replay adds nothing.
Keyed state (`state`, one row per (operator, key group, key)) is written in that transaction too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from elastream.base.arrays import distinct
from elastream.model.batch import EventBatch
from elastream.model.events import Event, OutcomeKind
from elastream.model.state import StateWrite
from elastream.runtime.queues.records import (
    SHARE_KINDS,
    Appended,
    Audit,
    BatchPlan,
    BatchWork,
    Control,
    ExpiredCounts,
    Expiry,
    OutcomeCounts,
    QueueError,
    ReplicaWork,
    Segment,
    ShareCommit,
    SinkLatency,
    StateItem,
    batch_of,
    build_audit,
)
from elastream.runtime.queues.segments import (
    SegmentedQueues,
    check_format,
    encode_batch,
    pack_roots,
    unpack_roots,
)
from elastream.runtime.queues.sqlite_file import SCHEMA, Transaction, connect


class SqliteQueueStore(SegmentedQueues):
    """The `QueueStore` of one SQLite file: batch segments, plans, share marks, counts."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.address = str(self.path)
        self.conn = connect(self.path)
        fresh = self.conn.execute("SELECT name FROM sqlite_master").fetchone() is None
        self.conn.executescript(SCHEMA)
        check_format(self, self.address, fresh)
        self._sinks: dict[str, bool] = {}

    def close(self) -> None:
        self.conn.close()

    # -- set-up and control ----------------------------------------------------------------
    def create_queue(self, name: str, bound: int | None, sink: bool = False) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO queues(q, next_off, done, bound, sink) VALUES (?, 0, 0, ?, ?)",
            (name, bound, int(sink)),
        )

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_control(
        self, op: str, replicas: int, cap: int, et: float, replica_et: Sequence[float]
    ) -> None:
        """Publish the controller's plan for `op`: active replicas, admission cap per batch,
        mean et_i and each replica's own et_ij (for load-balancing grouping)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO control VALUES (?, ?, ?, ?, ?)",
            (op, replicas, cap, et, json.dumps([round(e, 6) for e in replica_et])),
        )

    def control(self, op: str) -> Control:
        """`op`'s control row as last published."""
        row = self.conn.execute(
            "SELECT replicas, cap, et, replica_et FROM control WHERE op = ?", (op,)
        ).fetchone()
        if row is None:
            raise QueueError(f"no control row for operator {op!r}")
        return Control(row[0], row[1], row[2], json.loads(row[3]))

    # -- producing ----------------------------------------------------------------------------
    def append(
        self, q: str, events: Sequence[Event] | EventBatch, producer: str, first: int
    ) -> Appended:
        """A source offers its events number `first`, `first + 1`, … to `q`, idempotently."""
        now = time.time()
        batch = batch_of(events)
        with Transaction(self.conn):
            row = self.conn.execute(
                "SELECT offered FROM producers WHERE q = ? AND producer = ?", (q, producer)
            ).fetchone()
            offered = row[0] if row else 0
            if first > offered:
                raise QueueError(
                    f"source {producer!r} appends events from #{first} to queue {q!r}, "
                    f"but only {offered} were offered before: events would be missing"
                )
            fresh = batch.slice(offered - first, len(batch))
            self.conn.execute(
                "INSERT OR REPLACE INTO producers VALUES (?, ?, ?)",
                (q, producer, max(offered, first + len(batch))),
            )
            return self._append(q, fresh, producer, now)

    def produced(self, q: str, producer: str) -> int:
        row = self.conn.execute(
            "SELECT offered FROM producers WHERE q = ? AND producer = ?", (q, producer)
        ).fetchone()
        return row[0] if row else 0

    def _append(self, q: str, events: EventBatch, producer: str, now: float) -> Appended:
        """Append one segment inside the caller's transaction; events beyond the queue's room
        (q_size) are refused and their roots kept for the audit."""
        if not len(events):
            return Appended(0, 0)
        row = self.conn.execute(
            "SELECT next_off, done, bound FROM queues WHERE q = ?", (q,)
        ).fetchone()
        if row is None:
            raise QueueError(f"unknown queue {q!r}")
        next_off, done, bound = row
        room = len(events) if bound is None else max(0, bound - (next_off - done))
        accepted = events if room >= len(events) else events.slice(0, room)
        refused = events.roots[len(accepted) :]
        if len(accepted):
            keys, body = encode_batch(accepted)
            end = next_off + len(accepted)
            self.conn.execute(
                "INSERT INTO segments VALUES (?, ?, ?, ?, ?, ?)",
                (q, next_off, end, now, keys, body),
            )
            self.conn.execute("UPDATE queues SET next_off = ? WHERE q = ?", (end, q))
        latency = float((now - accepted.ts).sum()) if self._is_sink(q) else 0.0
        self.conn.execute(
            "INSERT INTO appends VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                q,
                producer,
                now,
                len(accepted),
                len(refused),
                latency,
                pack_roots(refused) if len(refused) else None,
            ),
        )
        return Appended(len(accepted), len(refused))

    def _is_sink(self, q: str) -> bool:
        if q not in self._sinks:
            row = self.conn.execute("SELECT sink FROM queues WHERE q = ?", (q,)).fetchone()
            if row is None:
                raise QueueError(f"unknown queue {q!r}")
            self._sinks[q] = bool(row[0])
        return self._sinks[q]

    # -- consuming ----------------------------------------------------------------------------
    def latest(self, q: str) -> int:
        row = self.conn.execute("SELECT next_off FROM queues WHERE q = ?", (q,)).fetchone()
        if row is None:
            raise QueueError(f"unknown queue {q!r}")
        return row[0]

    def _segments(self, q: str, start: int, end: int) -> Iterator[Segment]:
        """The segments overlapping [start, end), in offset order."""
        rows = self.conn.execute(
            "SELECT first_off, enq, keys, body FROM segments WHERE q = ? AND end_off > ? "
            "ORDER BY end_off",
            (q, start),
        )
        for first, enq, keys, body in rows:
            if first >= end:
                break
            yield Segment(first, enq, keys, body)

    def _arrived_segments(self, q: str, since: float) -> Iterator[Segment]:
        """The segments of `q` that arrived at or after `since`, in offset order (a row's
        blobs are read only when it is selected)."""
        rows = self.conn.execute(
            "SELECT first_off, enq, keys, body FROM segments WHERE q = ? AND enq >= ? "
            "ORDER BY end_off",
            (q, since),
        )
        return (Segment(*row) for row in rows)

    def _record_plan(self, plan: BatchPlan) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO plans VALUES (?, ?, ?, ?, ?, ?)",
            (plan.op, plan.start, plan.end, plan.replicas, plan.owners, time.time()),
        )

    def _plans(self, op: str) -> list[BatchPlan]:
        rows = self.conn.execute(
            "SELECT start, end_off, replicas, owners FROM plans WHERE op = ?", (op,)
        )
        return [BatchPlan(op, start, end, r, bytes(owners)) for start, end, r, owners in rows]

    def _plan(self, op: str, start: int) -> BatchPlan | None:
        row = self.conn.execute(
            "SELECT end_off, replicas, owners FROM plans WHERE op = ? AND start = ?", (op, start)
        ).fetchone()
        return None if row is None else BatchPlan(op, start, row[0], row[1], bytes(row[2]))

    def share_done(self, op: str, batch: str, replica: int) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM shares WHERE op = ? AND batch = ? AND replica = ?", (op, batch, replica)
        ).fetchone()
        return row is not None

    def commit_share(self, commit: ShareCommit) -> bool:
        now = time.time()
        with Transaction(self.conn):
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO shares VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    commit.op,
                    commit.batch,
                    commit.replica,
                    now,
                    commit.events,
                    *(commit.count(kind) for kind in SHARE_KINDS),
                    commit.n_out,
                    commit.busy_s,
                    _roots_blob(commit, OutcomeKind.FILTERED),
                    _roots_blob(commit, OutcomeKind.TIMEOUT),
                    commit.cpu_s,
                ),
            )
            if not cur.rowcount:
                return False
            for target, events in commit.outputs.items():
                self._append(target, events, commit.op, now)
            self.conn.executemany(
                "INSERT OR IGNORE INTO errors VALUES (?, ?, ?, ?, ?)",
                [(commit.op, f.id, f.root, f.message, f.payload) for f in commit.failures],
            )
            self.conn.execute(
                "UPDATE queues SET done = done + ? WHERE q = ?", (commit.events, commit.op)
            )
            self._write_state(commit.op, commit.state)
        return True

    def _write_state(self, op: str, writes: Sequence[StateWrite]) -> None:
        """A share's state puts and deletes, inside the caller's transaction."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO state VALUES (?, ?, ?, ?)",
            [(op, w.group, w.key, w.value) for w in writes if w.value is not None],
        )
        self.conn.executemany(
            "DELETE FROM state WHERE op = ? AND kgroup = ? AND key = ?",
            [(op, w.group, w.key) for w in writes if w.value is None],
        )

    # -- keyed state --------------------------------------------------------------------------
    def read_state(self, op: str, keys: Sequence[tuple[int, str]]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        sql = "SELECT value FROM state WHERE op = ? AND kgroup = ? AND key = ?"
        for group, key in keys:
            row = self.conn.execute(sql, (op, group, key)).fetchone()
            if row is not None:
                found[key] = bytes(row[0])
        return found

    def state_items(self, op: str, groups: range | None = None) -> Iterator[StateItem]:
        lo, hi = (groups.start, groups.stop) if groups is not None else (0, 1 << 62)
        rows = self.conn.execute(
            "SELECT kgroup, key, value FROM state WHERE op = ? AND kgroup >= ? AND kgroup < ? "
            "ORDER BY kgroup, key",
            (op, lo, hi),
        )
        for group, key, value in rows:
            yield StateItem(group, key, bytes(value))

    def drop_consumed(self, op: str, end: int) -> int:
        with Transaction(self.conn):
            cur = self.conn.execute("DELETE FROM segments WHERE q = ? AND end_off <= ?", (op, end))
            self.conn.execute("DELETE FROM plans WHERE op = ? AND end_off <= ?", (op, end))
        return cur.rowcount

    def expire(self, before: float) -> Expiry:
        """Forget the audit and monitoring records older than `before` that exactly-once no
        longer needs: sink segments, appends, and the shares of released batches (whose plans
        are gone, so Spark never replays them); their fates are kept as counts."""
        with Transaction(self.conn):
            sinks = [(q, s.first + len(s.batch), s) for q, s in self._sink_segments(before)]
            shares = self.conn.execute(
                "SELECT rowid, filtered_roots, timeout_roots FROM shares WHERE at < ? AND NOT "
                "EXISTS (SELECT 1 FROM plans p WHERE p.op = shares.op "
                "AND shares.batch = p.start || '-' || p.end_off)",
                (before,),
            ).fetchall()
            appends = self.conn.execute(
                "SELECT rowid, refused_roots FROM appends WHERE at < ?", (before,)
            ).fetchall()
            sunk = np.concatenate([np.empty(0, np.int64)] + [s.batch.roots for *_, s in sinks])
            counts = ExpiredCounts(
                to_sink=len(distinct(sunk)),
                sink_events=len(sunk),
                filtered=sum(len(unpack_roots(r[1])) for r in shares),
                timeout=sum(len(unpack_roots(r[2])) for r in shares),
                overflow=sum(len(unpack_roots(r[1])) for r in appends),
            )
            self.conn.executemany(
                "INSERT INTO expired VALUES (?, ?) "
                "ON CONFLICT(fate) DO UPDATE SET n = n + excluded.n",
                counts.items(),
            )
            self.conn.executemany(
                "DELETE FROM segments WHERE q = ? AND end_off = ?", [s[:2] for s in sinks]
            )
            for table, rows in (("shares", shares), ("appends", appends)):
                self.conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [r[:1] for r in rows])
        latencies = [ms for *_, s in sinks for ms in ((s.enq - s.batch.ts) * 1000).tolist()]
        return Expiry(len(sinks) + len(shares) + len(appends), latencies)

    def _expired(self) -> ExpiredCounts:
        return ExpiredCounts(**dict(self.conn.execute("SELECT fate, n FROM expired")))

    # -- monitoring ---------------------------------------------------------------------------
    def pending(self, q: str) -> int:
        row = self.conn.execute("SELECT next_off - done FROM queues WHERE q = ?", (q,)).fetchone()
        if row is None:
            raise QueueError(f"unknown queue {q!r}")
        return row[0]

    def arrivals(self, q: str, t0: float, t1: float) -> dict[str, int]:
        """Events offered to `q` in [t0, t1) per producer, refused ones included (λ^p_i)."""
        rows = self.conn.execute(
            "SELECT producer, SUM(accepted + refused) FROM appends "
            "WHERE q = ? AND at >= ? AND at < ? GROUP BY producer",
            (q, t0, t1),
        )
        return {producer: n for producer, n in rows}

    def overflow_count(self, q: str, t0: float, t1: float) -> int:
        row = self.conn.execute(
            "SELECT SUM(refused) FROM appends WHERE q = ? AND at >= ? AND at < ?", (q, t0, t1)
        ).fetchone()
        return int(row[0] or 0)

    def outcome_counts(self, op: str, t0: float, t1: float) -> OutcomeCounts:
        """Outcomes of `op` in [t0, t1) by kind, and the outputs they produced."""
        row = self.conn.execute(
            "SELECT SUM(processed), SUM(filtered), SUM(timeout), SUM(failed), SUM(n_out) "
            "FROM shares WHERE op = ? AND at >= ? AND at < ?",
            (op, t0, t1),
        ).fetchone()
        counts = {kind: int(n) for kind, n in zip(SHARE_KINDS, row[:4], strict=True) if n}
        return OutcomeCounts(counts, int(row[4] or 0))

    def task_stats(self, op: str, t0: float, t1: float) -> dict[int, ReplicaWork]:
        rows = self.conn.execute(
            "SELECT replica, SUM(n), SUM(busy), SUM(cpu), SUM(n > 0), "
            "SUM(CASE WHEN n > 0 THEN busy * busy / n ELSE 0.0 END) FROM shares "
            "WHERE op = ? AND at >= ? AND at < ? GROUP BY replica",
            (op, t0, t1),
        )
        return {r: ReplicaWork(n, busy, cpu or 0.0, k, sq) for r, n, busy, cpu, k, sq in rows}

    def batch_work(self) -> list[BatchWork]:
        """Per (operator, micro-batch): slowest busy seconds, events, largest share, shares."""
        rows = self.conn.execute(
            "SELECT op, batch, MAX(busy), SUM(n), MAX(n), COUNT(*) FROM shares GROUP BY op, batch"
        )
        return [BatchWork(*row) for row in rows]

    def sink_latency(self, t0: float, t1: float | None = None) -> SinkLatency:
        """Events that reached any sink in [t0, t1), and their mean end-to-end latency in ms."""
        t1 = float("inf") if t1 is None else t1
        n, total = self.conn.execute(
            "SELECT SUM(a.accepted), SUM(a.latency_sum) FROM appends a JOIN queues q "
            "ON a.q = q.q WHERE q.sink = 1 AND a.at >= ? AND a.at < ?",
            (t0, t1),
        ).fetchone()
        n = int(n or 0)
        return SinkLatency(n, total * 1000 / n if n else None)

    def _sink_queues(self) -> list[str]:
        return [q for (q,) in self.conn.execute("SELECT q FROM queues WHERE sink = 1 ORDER BY q")]

    def audit(self) -> Audit:
        """Account for every source event by its fate (see `Audit`), from the producers'
        counts, the share rows' fate roots, the refused roots and the sink segments."""
        fates = {
            "filtered": self._share_roots("filtered_roots"),
            "timeout": self._share_roots("timeout_roots"),
            "overflow": self._blob_roots("SELECT refused_roots FROM appends"),
            "failed": self._failed_roots(),
        }
        pending = self.conn.execute(
            "SELECT SUM(next_off - done) FROM queues WHERE sink = 0"
        ).fetchone()[0]
        return build_audit(
            self._events_in(), int(pending or 0), self._sink_roots(), fates, self._expired()
        )

    def _events_in(self) -> int:
        """Source events offered (a tick producer, `~…`, is not input)."""
        n = self.conn.execute(
            "SELECT SUM(n) FROM (SELECT MAX(offered) AS n FROM producers "
            "WHERE producer NOT LIKE '~%' GROUP BY producer)"
        ).fetchone()[0]
        return int(n or 0)

    def _failed_roots(self) -> np.ndarray:
        rows = self.conn.execute("SELECT DISTINCT root FROM errors")
        return np.asarray([r for (r,) in rows], np.int64)

    def _lost_roots(self) -> tuple[np.ndarray, int]:
        kept = distinct(
            np.concatenate(
                [
                    self._share_roots("timeout_roots"),
                    self._blob_roots("SELECT refused_roots FROM appends"),
                    self._failed_roots(),
                ]
            )
        )
        expired = self._expired()
        return kept, expired.timeout + expired.overflow

    def _share_roots(self, column: str) -> np.ndarray:
        return self._blob_roots(f"SELECT {column} FROM shares")

    def _blob_roots(self, sql: str) -> np.ndarray:
        parts = [unpack_roots(blob) for (blob,) in self.conn.execute(sql)]
        return np.concatenate([np.empty(0, np.int64), *parts])


def _roots_blob(commit: ShareCommit, kind: OutcomeKind) -> bytes | None:
    roots = commit.fates.get(kind)
    return pack_roots(roots) if roots is not None and len(roots) else None
