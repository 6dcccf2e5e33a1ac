"""Durable queues between pipeline nodes; the embedded default is SQLite (the batch-oriented
queue interface that a second backend implements is the data-path issue's)."""

from elastream.runtime.queues.sqlite import Audit, QueueError, SqliteQueueStore, Stored

__all__ = ["Audit", "QueueError", "SqliteQueueStore", "Stored"]
