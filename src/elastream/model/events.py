"""Events flowing through a pipeline, and what an operator function returns for them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any, NamedTuple


class EventError(ValueError):
    """A malformed event: the message names the event and the field."""


class _EventFields(NamedTuple):
    id: int
    key: str
    ts: float
    payload: Any
    root: int


class Event(_EventFields):
    """One event: its id (its position in the queue that holds it: `model.batch.position`),
    a grouping key, the source timestamp (seconds), a payload (a dict of fields, or any value
    msgpack keeps) and the position of the source event it descends from (root; by default its
    own id). A tuple underneath: a batch makes one per row, so making it must cost little."""

    __slots__ = ()

    def __new__(cls, id: int, key: str, ts: float, payload: Any, root: int = -1) -> Event:
        if not isinstance(id, int) or isinstance(id, bool) or id < 0:
            raise EventError(f"event id must be a non-negative integer, got {id!r}")
        if not isinstance(ts, int | float) or ts != ts:
            raise EventError(f"event {id}: ts must be a number, got {ts!r}")
        return tuple.__new__(cls, (id, key, ts, payload, id if root < 0 else root))

    @classmethod
    def restore(cls, id: int, key: str, ts: float, payload: Any, root: int) -> Event:
        """An event read back from a queue: its fields were checked when it was created, so
        they are set without checking again (the hot path of every replica)."""
        return tuple.__new__(cls, (id, key, ts, payload, root))

    @classmethod
    def rows(cls, *columns: Iterable[Any]) -> list[Event]:
        """Events from their columns (id, key, ts, payload, root), unchecked (`restore`)."""
        return list(map(partial(tuple.__new__, cls), zip(*columns, strict=True)))

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
class TableEmit:
    """Outputs of a vectorized operator to one stream: row k of `data` (a pyarrow.Table or
    RecordBatch, or a pandas.DataFrame) comes from input row `parents[k]` (None: from row k, one
    output per input row); `key` names the column of `data` whose values are the outputs' keys
    (None: each output keeps its parent's key)."""

    data: Any
    parents: Any = None
    stream: str | None = None
    key: str | None = None


def emit(
    data: Any, parents: Any = None, stream: str | None = None, key: str | None = None
) -> TableEmit:
    """A vectorized operator's outputs to one stream (see `TableEmit`)."""
    return TableEmit(data, parents, stream, key)


class OutcomeKind(StrEnum):
    """What became of one input event at one operator (stored as text in the queue store)."""

    PROCESSED = "processed"  # handled, with at least one output
    FILTERED = "filtered"  # handled, no output by design
    TIMEOUT = "timeout"  # older than t_out when its turn came (PSPS V-B)
    ERROR = "error"  # the operator function raised on it alone (kept in the errors table)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one operator did with one input event (used for exactly-once bookkeeping)."""

    event_id: int
    root: int
    kind: OutcomeKind
    outputs: tuple[tuple[str, Event], ...] = field(default=())


_REMOVED = {
    "EventColumns": "a vectorized operator now gets a pyarrow.Table of the payload columns",
    "ColumnEmit": "a vectorized operator now returns a pyarrow.Table (one row per input row) "
    "or elastream.emit(table, parents=..., stream=..., key=...)",
}


def __getattr__(name: str) -> Any:
    """Names of the old column-batch contract: an ImportError that says what to change."""
    if name in _REMOVED:
        raise ImportError(
            f"elastream.model.events.{name} is gone: {_REMOVED[name]} (docs/pipeline-yaml.md, "
            f"'Vectorized operators')"
        )
    raise AttributeError(name)
