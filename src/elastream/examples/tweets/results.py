"""Results database: the SQLite table of classified tweets, cached connections and store."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from elastream.examples.tweets.payload import required_payload
from elastream.model.events import Emit, Event

SCHEMA = """CREATE TABLE IF NOT EXISTS tweets (
    event_id TEXT PRIMARY KEY,
    tweet_id TEXT NOT NULL,
    author TEXT NOT NULL,
    lang TEXT,
    topic TEXT,
    author_class TEXT,
    text TEXT,
    stored_at TEXT NOT NULL
)"""
_INSERT = "INSERT OR IGNORE INTO tweets VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_STORED = ("tweet_id", "author", "lang", "topic", "author_class", "text")


def open_results_db(path: str | Path, busy_timeout_ms: int = 10_000) -> sqlite3.Connection:
    """A new connection in WAL mode (readers never block the writer) with the table created."""
    if not str(path):
        raise ValueError("store: parameter results_db is empty")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise sqlite3.OperationalError(f"{path}: cannot switch to WAL (journal mode {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


# One connection per process, thread and file, reused between calls: opening a WAL database and
# closing its last connection (which checkpoints) would cost several ms on every batch. The pid
# in the key keeps a forked child from using its parent's connection; the inode check reopens
# the file if it was deleted or replaced since (a new run in the same output directory).
_CONNECTIONS: dict[tuple[int, int, str, int], tuple[sqlite3.Connection, int]] = {}


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return -1


def results_db_connection(path: str, busy_timeout_ms: int = 10_000) -> sqlite3.Connection:
    """The calling thread's cached connection to `path` (see open_results_db)."""
    key = (os.getpid(), threading.get_ident(), str(path), int(busy_timeout_ms))
    cached = _CONNECTIONS.get(key)
    if cached is not None and cached[1] == _inode(path):
        return cached[0]
    if cached is not None:
        cached[0].close()
    conn = open_results_db(path, busy_timeout_ms)
    _CONNECTIONS[key] = (conn, _inode(path))
    return conn


def store(events: list[Event], results_db: str, busy_timeout_ms: int = 10_000) -> Iterable[Emit]:
    """Operator: one row per event in `results_db`, keyed by event id, in one transaction.

    INSERT OR IGNORE on the event-id primary key makes a retried batch write nothing twice;
    the summary emitted per event says whether this call inserted its row."""
    rows = [required_payload(e, "store", _STORED) for e in events]
    stored_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    conn = results_db_connection(results_db, busy_timeout_ms)
    try:
        conn.execute("BEGIN IMMEDIATE")  # take the write lock now, waiting up to busy_timeout
        inserted = [
            conn.execute(_INSERT, (e.id, *(p[k] for k in _STORED), stored_at)).rowcount == 1
            for e, p in zip(events, rows, strict=True)
        ]
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return [
        e.emit(
            {
                "event_id": e.id,
                "tweet_id": p["tweet_id"],
                "topic": p["topic"],
                "author_class": p["author_class"],
                "inserted": new,
            }
        )
        for e, p, new in zip(events, rows, inserted, strict=True)
    ]
