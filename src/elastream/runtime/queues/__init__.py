"""Durable batch queues between pipeline nodes: the interface (`base.QueueStore`, split by role:
`DataPath`, `ControlTable`, `Metrics`, `AuditTrail`, `StateStore`), its embedded
SQLite backend and its Redis Streams backend, and `open_store` which picks one by address (a file
path: SQLite; `redis://HOST:PORT/DB[?prefix=NAME]`: Redis)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from elastream.base.registry import Registry
from elastream.model.events import Event
from elastream.runtime.queues.base import (
    AuditTrail,
    ControlTable,
    DataPath,
    Metrics,
    QueueStore,
    StateStore,
    TaskStore,
)
from elastream.runtime.queues.records import (
    Appended,
    Audit,
    BatchPlan,
    BatchWork,
    Control,
    OutcomeCounts,
    QueueError,
    ReplicaWork,
    SinkLatency,
    SinkSpan,
    StateItem,
    Stored,
)
from elastream.runtime.queues.redis_client import with_prefix
from elastream.runtime.queues.redis_streams import RedisQueueStore
from elastream.runtime.queues.sqlite import SqliteQueueStore


@dataclass(frozen=True)
class Backend:
    """How to open a backend's store, tell whether a run exists there, and wipe it."""

    open: Callable[[str], QueueStore]
    exists: Callable[[str], bool]
    reset: Callable[[str], None]


def _sqlite_reset(address: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{address}{suffix}").unlink(missing_ok=True)


def _redis_exists(address: str) -> bool:
    store = RedisQueueStore(address)
    try:
        return store.exists()
    finally:
        store.close()


def _redis_reset(address: str) -> None:
    store = RedisQueueStore(address)
    try:
        store.clear()
    finally:
        store.close()


BACKENDS: Registry[Backend] = Registry("queue backend")
BACKENDS.register("sqlite", Backend(SqliteQueueStore, lambda a: Path(a).exists(), _sqlite_reset))
BACKENDS.register("redis", Backend(RedisQueueStore, _redis_exists, _redis_reset))


def backend_name(address: str) -> str:
    """The backend an address names: `redis` for a redis:// URL, else `sqlite` (a file path)."""
    return "redis" if address.startswith(("redis://", "rediss://")) else "sqlite"


def open_store(address: str) -> QueueStore:
    """The queue store at `address` (created if new)."""
    return BACKENDS.get(backend_name(address)).open(address)


def store_exists(address: str) -> bool:
    """Whether a run's store is at `address` (what `--resume` needs)."""
    return BACKENDS.get(backend_name(address)).exists(address)


def read_sink(address: str | Path, sink: str) -> list[Event]:
    """The events a `queue` sink of a run holds, in arrival order: `address` is the run's queue
    store (a SQLite file or redis:// URL) or its output directory (queues.db there). Events older
    than the run's `spark.retention_s` have been expired (docs/sources-sinks.md)."""
    where = str(address)
    if backend_name(where) == "sqlite" and Path(where).is_dir():
        where = str(Path(where) / "queues.db")
    if not store_exists(where):
        raise QueueError(f"no queue store at {where}")
    store = open_store(where)
    try:
        return store.sink_events(sink)
    finally:
        store.close()


def reset_store(address: str) -> None:
    """Remove the store at `address` (a fresh run in an old place)."""
    BACKENDS.get(backend_name(address)).reset(address)


__all__ = [
    "BACKENDS",
    "Appended",
    "Audit",
    "AuditTrail",
    "Backend",
    "BatchPlan",
    "BatchWork",
    "Control",
    "ControlTable",
    "DataPath",
    "Metrics",
    "OutcomeCounts",
    "QueueError",
    "QueueStore",
    "RedisQueueStore",
    "ReplicaWork",
    "SinkLatency",
    "SinkSpan",
    "SqliteQueueStore",
    "StateItem",
    "StateStore",
    "Stored",
    "TaskStore",
    "backend_name",
    "open_store",
    "read_sink",
    "reset_store",
    "store_exists",
    "with_prefix",
]
