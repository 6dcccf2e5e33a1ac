"""Events flowing through a pipeline, and what an operator function returns for them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

import xxhash


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
        return Emit(self, payload, stream, key)


class Emit(NamedTuple):
    """An operator output: the payload, its named output stream and the input event it came from
    (a named tuple: one is made per output, so it must be cheap to make)."""

    parent: Event
    payload: Any
    stream: str | None = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class EventColumns:
    """A batch of events column by column: what a queue stores and a vectorized operator gets
    (no Event object per event). Row k is the event (ids[k], keys[k], ts[k], payloads[k],
    roots[k])."""

    ids: list[str]
    keys: list[str]
    ts: list[float]
    payloads: list[Any]
    roots: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(cls, events: Sequence[Event]) -> EventColumns:
        return cls(
            [e.id for e in events],
            [e.key for e in events],
            [e.ts for e in events],
            [e.payload for e in events],
            [e.root for e in events],
        )

    @classmethod
    def empty(cls) -> EventColumns:
        return cls([], [], [], [], [])

    @classmethod
    def concat(cls, parts: Sequence[EventColumns]) -> EventColumns:
        """The batches one after another."""
        if len(parts) == 1:
            return parts[0]
        out = cls.empty()
        for part in parts:
            out.ids.extend(part.ids)
            out.keys.extend(part.keys)
            out.ts.extend(part.ts)
            out.payloads.extend(part.payloads)
            out.roots.extend(part.roots)
        return out

    def events(self) -> list[Event]:
        """The rows as Event objects (for per-event operator functions)."""
        restore = Event.restore
        return list(map(restore, self.ids, self.keys, self.ts, self.payloads, self.roots))

    def take(self, rows: Sequence[int]) -> EventColumns:
        """The rows `rows`, in that order."""
        ids, keys, ts, payloads, roots = self.ids, self.keys, self.ts, self.payloads, self.roots
        return EventColumns(
            [ids[k] for k in rows],
            [keys[k] for k in rows],
            [ts[k] for k in rows],
            [payloads[k] for k in rows],
            [roots[k] for k in rows],
        )

    def slice(self, lo: int, hi: int) -> EventColumns:
        return EventColumns(
            self.ids[lo:hi],
            self.keys[lo:hi],
            self.ts[lo:hi],
            self.payloads[lo:hi],
            self.roots[lo:hi],
        )

    def emit(
        self,
        payloads: Sequence[Any],
        *,
        parents: Sequence[int] | None = None,
        stream: str | None = None,
        keys: Sequence[str] | None = None,
    ) -> ColumnEmit:
        """Outputs of a vectorized operator: `payloads[k]` derived from row `parents[k]` (None:
        one output per row, in order), to `stream` (None: the operator's only output), keyed by
        `keys[k]` (None: the parent's key)."""
        rows = range(len(self.ids)) if parents is None else parents
        return ColumnEmit(rows, payloads, stream, keys)


@dataclass(frozen=True, slots=True)
class ColumnEmit:
    """Outputs of a vectorized operator to one stream: payloads[k] comes from input row
    parents[k]; keys None: each output keeps its parent's key."""

    parents: Sequence[int]
    payloads: Sequence[Any]
    stream: str | None = None
    keys: Sequence[str] | None = None


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
    return _xxh3_128_hex(f"{parent_id}|{operator}|{index}".encode())[:ID_HEX_CHARS]


def derived_ids(parent_ids: Sequence[str], operator: str, index: int = 0) -> list[str]:
    """`derived_id` of each parent's `index`-th output, a batch at once: 80 bits of XXH3-128
    (stable across processes and machines; a third of blake2b's cost per id here)."""
    suffix = f"|{operator}|{index}"
    return [_xxh3_128_hex(f"{parent}{suffix}".encode())[:ID_HEX_CHARS] for parent in parent_ids]


_xxh3_128_hex = xxhash.xxh3_128_hexdigest
ID_HEX_CHARS = 20  # 80 bits
