"""Events flowing through a pipeline, and what an operator function returns for them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class EventError(ValueError):
    """A malformed event: the message names the event and the field."""


@dataclass(frozen=True, slots=True)
class Event:
    """One event: a unique id, the id of the source event it descends from (root),
    a grouping key, the source timestamp (seconds) and a JSON-serialisable payload."""

    id: str
    key: str
    ts: float
    payload: Any
    root: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise EventError(f"event id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.ts, int | float) or self.ts != self.ts:
            raise EventError(f"event {self.id}: ts must be a number, got {self.ts!r}")
        if not self.root:
            object.__setattr__(self, "root", self.id)

    @classmethod
    def restore(cls, id: str, key: str, ts: float, payload: Any, root: str) -> Event:
        """An event read back from a queue: its fields were checked when it was created, so
        they are set without checking again (the hot path of every replica)."""
        event = object.__new__(cls)
        set_field = object.__setattr__
        set_field(event, "id", id)
        set_field(event, "key", key)
        set_field(event, "ts", ts)
        set_field(event, "payload", payload)
        set_field(event, "root", root)
        return event

    def emit(self, payload: Any, stream: str | None = None, key: str | None = None) -> Emit:
        """An output derived from this event, to `stream` (None: the operator's only output)."""
        return Emit(parent=self, payload=payload, stream=stream, key=key)

    def to_json(self) -> str:
        return json.dumps(self.payload, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Emit:
    """An operator output: the payload, its named output stream and the input event it came from."""

    parent: Event
    payload: Any
    stream: str | None = None
    key: str | None = None


class OutcomeKind(StrEnum):
    """What became of one input event at one operator (stored as text in the queue store)."""

    PROCESSED = "processed"  # handled, with at least one output
    FILTERED = "filtered"  # handled, no output by design
    TIMEOUT = "timeout"  # older than t_out when its turn came (PSPS V-B)
    ERROR = "error"  # the operator function raised on it alone (kept in the errors table)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one operator did with one input event (used for exactly-once bookkeeping)."""

    event_id: str
    root: str
    kind: OutcomeKind
    outputs: tuple[tuple[str, Event], ...] = field(default=())


def derived_id(parent_id: str, operator: str, index: int) -> str:
    """Deterministic id of the `index`-th output of `operator` for `parent_id`.

    Deterministic ids make a retried batch produce the same output ids, so the queue's
    uniqueness constraint turns a replay into a no-op (exactly-once per event)."""
    digest = hashlib.blake2b(f"{parent_id}|{operator}|{index}".encode(), digest_size=10)
    return digest.hexdigest()
