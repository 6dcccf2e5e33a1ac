"""The embedded queue store: durable, offset-addressed queues in one SQLite file (WAL mode).

One file holds all queues of a run so that an operator's outcome for an input event and the
outputs it sends to every successor queue commit in one transaction. Outcomes are keyed by
(operator, event id) and outputs carry deterministic ids, so replaying a batch (a Spark task retry,
or a query restarted from its checkpoint) changes nothing: processing is exactly-once per event.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elastream.model.events import Event, Outcome, OutcomeKind

SCHEMA = """
CREATE TABLE IF NOT EXISTS queues(
    q TEXT PRIMARY KEY, next_off INTEGER NOT NULL, done INTEGER NOT NULL,
    bound INTEGER, sink INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events(
    q TEXT NOT NULL, off INTEGER NOT NULL, id TEXT NOT NULL, root TEXT NOT NULL, key TEXT NOT NULL,
    ts REAL NOT NULL, enq REAL NOT NULL, producer TEXT NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY(q, off));
CREATE UNIQUE INDEX IF NOT EXISTS events_id ON events(q, id);
CREATE INDEX IF NOT EXISTS events_enq ON events(enq);
CREATE TABLE IF NOT EXISTS outcomes(
    op TEXT NOT NULL, id TEXT NOT NULL, root TEXT NOT NULL, kind TEXT NOT NULL, at REAL NOT NULL,
    replica INTEGER NOT NULL, n_out INTEGER NOT NULL, PRIMARY KEY(op, id));
CREATE INDEX IF NOT EXISTS outcomes_at ON outcomes(at);
CREATE TABLE IF NOT EXISTS overflow(
    q TEXT NOT NULL, id TEXT NOT NULL, root TEXT NOT NULL, producer TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY(q, id));
CREATE INDEX IF NOT EXISTS overflow_at ON overflow(at);
CREATE TABLE IF NOT EXISTS errors(
    op TEXT NOT NULL, id TEXT NOT NULL, message TEXT NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY(op, id));
CREATE TABLE IF NOT EXISTS roots(root TEXT PRIMARY KEY, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS roots_at ON roots(at);
CREATE TABLE IF NOT EXISTS tasks(
    op TEXT NOT NULL, batch TEXT NOT NULL, replica INTEGER NOT NULL, n INTEGER NOT NULL,
    busy REAL NOT NULL, at REAL NOT NULL, PRIMARY KEY(op, batch, replica));
CREATE INDEX IF NOT EXISTS tasks_at ON tasks(at);
CREATE TABLE IF NOT EXISTS control(
    op TEXT PRIMARY KEY, replicas INTEGER NOT NULL, cap INTEGER NOT NULL, et REAL NOT NULL,
    replica_et TEXT NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
"""


class QueueError(RuntimeError):
    """A queue misuse: unknown queue, or an output routed to a stream that does not exist."""


@dataclass(frozen=True, slots=True)
class Stored:
    """An event as stored in a queue, with its offset and arrival time."""

    off: int
    event: Event
    enq: float


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


def connect(path: str | Path, timeout_s: float = 30.0) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
    return conn


class SqliteQueueStore:
    """Durable queues with offsets, bounded by q_size, exactly-once outcome bookkeeping."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.conn = connect(self.path)
        self.conn.executescript(SCHEMA)

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

    def control(self, op: str) -> tuple[int, int, float, list[float]]:
        """(replicas, cap, et_i, [et_ij]) as last published for `op`."""
        row = self.conn.execute(
            "SELECT replicas, cap, et, replica_et FROM control WHERE op = ?", (op,)
        ).fetchone()
        if row is None:
            raise QueueError(f"no control row for operator {op!r}")
        return row[0], row[1], row[2], json.loads(row[3])

    # -- producing ----------------------------------------------------------------------------
    def _append(
        self, q: str, events: Sequence[Event], producer: str, now: float
    ) -> tuple[int, int]:
        """Append inside the caller's transaction; returns (accepted, refused by q_size)."""
        row = self.conn.execute(
            "SELECT next_off, done, bound FROM queues WHERE q = ?", (q,)
        ).fetchone()
        if row is None:
            raise QueueError(f"unknown queue {q!r}")
        next_off, done, bound = row
        room = len(events) if bound is None else max(0, bound - (next_off - done))
        accepted = overflow = 0
        for event in events:
            if accepted < room:
                cur = self.conn.execute(
                    "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        q,
                        next_off,
                        event.id,
                        event.root,
                        event.key,
                        event.ts,
                        now,
                        producer,
                        event.to_json(),
                    ),
                )
                if cur.rowcount:
                    next_off += 1
                    accepted += 1
            else:
                cur = self.conn.execute(
                    "INSERT OR IGNORE INTO overflow VALUES (?, ?, ?, ?, ?)",
                    (q, event.id, event.root, producer, now),
                )
                overflow += cur.rowcount
        self.conn.execute("UPDATE queues SET next_off = ? WHERE q = ?", (next_off, q))
        if accepted and self._is_sink(q):
            self._finish_roots([e.root for e in events[:room]], now)
        return accepted, overflow

    def _is_sink(self, q: str) -> bool:
        return bool(self.conn.execute("SELECT sink FROM queues WHERE q = ?", (q,)).fetchone()[0])

    def _finish_roots(self, roots: Iterable[str], now: float) -> None:
        self.conn.executemany(
            "INSERT OR IGNORE INTO roots VALUES (?, ?)", [(r, now) for r in roots]
        )

    def append(self, q: str, events: Sequence[Event], producer: str) -> tuple[int, int]:
        """A source offers events to queue `q`; returns (accepted, dropped for q_size)."""
        with self._txn():
            return self._append(q, events, producer, time.time())

    # -- consuming ----------------------------------------------------------------------------
    def latest(self, q: str) -> int:
        row = self.conn.execute("SELECT next_off FROM queues WHERE q = ?", (q,)).fetchone()
        if row is None:
            raise QueueError(f"unknown queue {q!r}")
        return row[0]

    def keys(self, q: str, start: int, end: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT key FROM events WHERE q = ? AND off >= ? AND off < ? ORDER BY off",
            (q, start, end),
        )
        return [r[0] for r in rows]

    def read(self, q: str, offsets: Sequence[int]) -> list[Stored]:
        out: list[Stored] = []
        for chunk in _chunks(list(offsets), 500):
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"SELECT off, id, root, key, ts, enq, payload FROM events "
                f"WHERE q = ? AND off IN ({marks}) ORDER BY off",
                (q, *chunk),
            )
            out.extend(
                Stored(off, Event(i, key, ts, json.loads(payload), root), enq)
                for off, i, root, key, ts, enq, payload in rows
            )
        return out

    def done_ids(self, op: str, ids: Sequence[str]) -> set[str]:
        """The input events `op` has already handled (a replayed batch skips them)."""
        done: set[str] = set()
        for chunk in _chunks(list(ids), 500):
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"SELECT id FROM outcomes WHERE op = ? AND id IN ({marks})", (op, *chunk)
            )
            done.update(r[0] for r in rows)
        return done

    def complete(
        self,
        op: str,
        q_in: str,
        outcomes: Sequence[Outcome],
        replica: int,
        batch: str,
        busy_s: float,
        errors: Sequence[tuple[str, str, str]] = (),
    ) -> int:
        """Record what `op` did with each input event and append its outputs, atomically.

        Outcomes already recorded (a replay) are skipped with their outputs. Returns how many
        outcomes were new."""
        now = time.time()
        with self._txn():
            fresh = 0
            for outcome in outcomes:
                cur = self.conn.execute(
                    "INSERT OR IGNORE INTO outcomes VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        op,
                        outcome.event_id,
                        outcome.root,
                        outcome.kind,
                        now,
                        replica,
                        len(outcome.outputs),
                    ),
                )
                if not cur.rowcount:
                    continue
                fresh += 1
                self._route(op, outcome.outputs, now)
                if outcome.kind is OutcomeKind.FILTERED:
                    self._finish_roots([outcome.root], now)
            self.conn.executemany(
                "INSERT OR IGNORE INTO errors VALUES (?, ?, ?, ?)",
                [(op, i, m, p) for i, m, p in errors],
            )
            self.conn.execute("UPDATE queues SET done = done + ? WHERE q = ?", (fresh, q_in))
            self.conn.execute(
                "INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?, ?)",
                (op, batch, replica, len(outcomes), busy_s, now),
            )
        return fresh

    def _route(self, op: str, outputs: Sequence[tuple[str, Event]], now: float) -> None:
        by_queue: dict[str, list[Event]] = {}
        for q, event in outputs:
            by_queue.setdefault(q, []).append(event)
        for q, events in by_queue.items():
            self._append(q, events, op, now)

    def _txn(self) -> _Transaction:
        return _Transaction(self.conn)

    # -- monitoring ---------------------------------------------------------------------------
    def pending(self, q: str) -> int:
        next_off, done = self.conn.execute(
            "SELECT next_off, done FROM queues WHERE q = ?", (q,)
        ).fetchone()
        return next_off - done

    def arrivals(self, q: str, t0: float, t1: float) -> dict[str, int]:
        """Events that arrived at `q` in [t0, t1) per producer, refused ones included (λ^p_i)."""
        counts: dict[str, int] = {}
        for table in ("events", "overflow"):
            col = "enq" if table == "events" else "at"
            rows = self.conn.execute(
                f"SELECT producer, COUNT(*) FROM {table} WHERE q = ? AND {col} >= ? AND {col} < ? "
                f"GROUP BY producer",
                (q, t0, t1),
            )
            for producer, n in rows:
                counts[producer] = counts.get(producer, 0) + n
        return counts

    def overflow_count(self, q: str, t0: float, t1: float) -> int:
        return self.conn.execute(
            "SELECT COUNT(*) FROM overflow WHERE q = ? AND at >= ? AND at < ?", (q, t0, t1)
        ).fetchone()[0]

    def outcome_counts(self, op: str, t0: float, t1: float) -> tuple[dict[str, int], int]:
        """Outcomes of `op` in [t0, t1) by kind, and the outputs they produced."""
        rows = self.conn.execute(
            "SELECT kind, COUNT(*), SUM(n_out) FROM outcomes WHERE op = ? AND at >= ? AND at < ? "
            "GROUP BY kind",
            (op, t0, t1),
        ).fetchall()
        return {k: n for k, n, _ in rows}, sum(o or 0 for _, _, o in rows)

    def task_stats(self, op: str, t0: float, t1: float) -> dict[int, tuple[int, float]]:
        """Per replica: (events handled, busy seconds) of tasks that ended in [t0, t1)."""
        rows = self.conn.execute(
            "SELECT replica, SUM(n), SUM(busy) FROM tasks WHERE op = ? AND at >= ? AND at < ? "
            "GROUP BY replica",
            (op, t0, t1),
        )
        return {r: (n, busy) for r, n, busy in rows}

    def batch_work(self) -> list[tuple[str, str, float, int]]:
        """Per (operator, micro-batch): its slowest replica's busy seconds and events handled."""
        rows = self.conn.execute(
            "SELECT op, batch, MAX(busy), SUM(n) FROM tasks GROUP BY op, batch"
        )
        return [(op, batch, busy, n) for op, batch, busy, n in rows]

    def completed(self, t0: float, t1: float) -> int:
        return self.conn.execute(
            "SELECT COUNT(*) FROM roots WHERE at >= ? AND at < ?", (t0, t1)
        ).fetchone()[0]

    def sink_latency(self, t0: float, t1: float | None = None) -> tuple[int, float | None]:
        """Events that reached any sink in [t0, t1), and their mean end-to-end latency in ms."""
        t1 = float("inf") if t1 is None else t1
        n, mean = self.conn.execute(
            "SELECT COUNT(*), AVG(e.enq - e.ts) * 1000 FROM events e JOIN queues q ON e.q = q.q "
            "WHERE q.sink = 1 AND e.enq >= ? AND e.enq < ?",
            (t0, t1),
        ).fetchone()
        return n, mean

    def sink_latencies_ms(self) -> list[float]:
        rows = self.conn.execute(
            "SELECT (e.enq - e.ts) * 1000 FROM events e JOIN queues q ON e.q = q.q WHERE q.sink = 1"
        )
        return [r[0] for r in rows]

    def audit(self) -> Audit:
        """Account for every source event by its fate (see `Audit`). Source events are the ones
        whose id is their own root."""
        c = self.conn

        def one(sql: str) -> int:
            return int(c.execute(sql).fetchone()[0] or 0)

        events_in = one(
            "SELECT COUNT(DISTINCT root) FROM (SELECT root FROM events WHERE id = root "
            "UNION ALL SELECT root FROM overflow WHERE id = root)"
        )
        sink_roots = "SELECT e.root FROM events e JOIN queues q ON e.q = q.q WHERE q.sink = 1"
        fates = {
            "to_sink": f"SELECT DISTINCT root FROM ({sink_roots})",
            "filtered": f"SELECT DISTINCT root FROM outcomes WHERE kind = '{OutcomeKind.FILTERED}'",
            "timeout": f"SELECT DISTINCT root FROM outcomes WHERE kind = '{OutcomeKind.TIMEOUT}'",
            "overflow": "SELECT DISTINCT root FROM overflow",
            "failed": "SELECT DISTINCT root FROM outcomes WHERE kind = 'error'",
        }
        counts = {name: one(f"SELECT COUNT(*) FROM ({sql})") for name, sql in fates.items()}
        union_all = " UNION ALL ".join(fates.values())
        two_fates = one(
            f"SELECT COUNT(*) FROM (SELECT root FROM ({union_all}) "
            "GROUP BY root HAVING COUNT(*) > 1)"
        )
        sink_events = one(f"SELECT COUNT(*) FROM ({sink_roots})")
        return Audit(
            events_in=events_in,
            pending=one("SELECT SUM(next_off - done) FROM queues WHERE sink = 0"),
            sink_events=sink_events,
            duplicate_sink_roots=sink_events - counts["to_sink"],
            roots_with_two_fates=two_fates,
            **counts,
        )


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (which then propagates)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
