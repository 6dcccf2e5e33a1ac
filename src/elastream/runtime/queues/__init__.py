"""Durable batch queues between pipeline nodes: the interface (`base.QueueStore`) and its embedded
SQLite backend."""

from elastream.runtime.queues.base import Appended, Audit, BatchPlan, QueueError, QueueStore, Stored
from elastream.runtime.queues.sqlite import SqliteQueueStore

__all__ = [
    "Appended",
    "Audit",
    "BatchPlan",
    "QueueError",
    "QueueStore",
    "SqliteQueueStore",
    "Stored",
]
