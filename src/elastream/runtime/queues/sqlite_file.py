"""One SQLite file of queues: its tables, a connection in WAL mode, and an explicit transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS queues(
    q TEXT PRIMARY KEY, next_off INTEGER NOT NULL, done INTEGER NOT NULL,
    bound INTEGER, sink INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS segments(
    q TEXT NOT NULL, first_off INTEGER NOT NULL, end_off INTEGER NOT NULL, enq REAL NOT NULL,
    keys BLOB NOT NULL, body BLOB NOT NULL, PRIMARY KEY(q, end_off));
CREATE TABLE IF NOT EXISTS appends(
    q TEXT NOT NULL, producer TEXT NOT NULL, at REAL NOT NULL, accepted INTEGER NOT NULL,
    refused INTEGER NOT NULL, latency_sum REAL NOT NULL, refused_roots BLOB);
CREATE INDEX IF NOT EXISTS appends_at ON appends(q, at);
CREATE TABLE IF NOT EXISTS producers(
    q TEXT NOT NULL, producer TEXT NOT NULL, offered INTEGER NOT NULL, PRIMARY KEY(q, producer));
CREATE TABLE IF NOT EXISTS plans(
    op TEXT NOT NULL, start INTEGER NOT NULL, end_off INTEGER NOT NULL,
    replicas INTEGER NOT NULL, owners BLOB NOT NULL, at REAL NOT NULL, PRIMARY KEY(op, start));
CREATE TABLE IF NOT EXISTS shares(
    op TEXT NOT NULL, batch TEXT NOT NULL, replica INTEGER NOT NULL, at REAL NOT NULL,
    n INTEGER NOT NULL, processed INTEGER NOT NULL, filtered INTEGER NOT NULL,
    timeout INTEGER NOT NULL, failed INTEGER NOT NULL, n_out INTEGER NOT NULL, busy REAL NOT NULL,
    filtered_roots BLOB, timeout_roots BLOB, cpu REAL NOT NULL DEFAULT 0,
    PRIMARY KEY(op, batch, replica));
CREATE INDEX IF NOT EXISTS shares_at ON shares(op, at);
CREATE TABLE IF NOT EXISTS errors(
    op TEXT NOT NULL, id INTEGER NOT NULL, root INTEGER NOT NULL, message TEXT NOT NULL,
    payload BLOB NOT NULL, PRIMARY KEY(op, id));
CREATE TABLE IF NOT EXISTS control(
    op TEXT PRIMARY KEY, replicas INTEGER NOT NULL, cap INTEGER NOT NULL, et REAL NOT NULL,
    replica_et TEXT NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS expired(fate TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS state(
    op TEXT NOT NULL, kgroup INTEGER NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY(op, kgroup, key)) WITHOUT ROWID;
"""


def connect(path: str | Path, timeout_s: float = 30.0) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, NORMAL sync."""
    conn = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
    return conn


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (which then propagates)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
