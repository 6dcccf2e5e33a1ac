"""The small queue interface the runtime needs; a networked broker implements the same calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from elastream.model.events import Event, Outcome

if TYPE_CHECKING:
    from elastream.runtime.queues.sqlite import Stored


class QueueStore(Protocol):
    """Offset-addressed durable queues with exactly-once outcome bookkeeping."""

    def create_queue(self, name: str, bound: int | None, sink: bool = False) -> None:
        """Create queue `name` holding at most `bound` pending events (None: unbounded)."""

    def append(self, q: str, events: Sequence[Event], producer: str) -> tuple[int, int]:
        """Offer events; returns (accepted, refused because the queue was full)."""

    def latest(self, q: str) -> int:
        """The offset the next appended event will get."""

    def keys(self, q: str, start: int, end: int) -> list[str]:
        """Grouping keys of the events at offsets [start, end)."""

    def read(self, q: str, offsets: Sequence[int]) -> list[Stored]:
        """The events at these offsets, in offset order."""

    def done_ids(self, op: str, ids: Sequence[str]) -> set[str]:
        """Which of these input events `op` has already handled."""

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
        """Atomically record outcomes and append their outputs; replays are no-ops."""

    def pending(self, q: str) -> int:
        """Events appended and not yet handled by the consumer."""
