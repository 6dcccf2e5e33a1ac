"""Durable queues between pipeline nodes; the embedded default is SQLite."""

from elastream.queues.base import QueueStore
from elastream.queues.sqlite import Audit, QueueError, SqliteQueueStore, Stored

__all__ = ["Audit", "QueueError", "QueueStore", "SqliteQueueStore", "Stored"]
