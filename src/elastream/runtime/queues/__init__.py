"""Durable queues between pipeline nodes; the embedded default is SQLite."""

from elastream.runtime.queues.base import QueueStore
from elastream.runtime.queues.sqlite import Audit, QueueError, SqliteQueueStore, Stored

__all__ = ["Audit", "QueueError", "QueueStore", "SqliteQueueStore", "Stored"]
