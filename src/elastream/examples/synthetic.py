"""Small operator functions for tests and benchmarks: pass-through, filter, split, CPU work."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pyarrow as pa

from elastream.model.events import Emit, Event


def generate(index: int, rng: random.Random) -> tuple[str, dict[str, int]]:
    """Event number `index`: key k0..k15 and a payload carrying the index and a random value."""
    return f"k{index % 16}", {"i": index, "v": rng.randrange(1000)}


def passthrough(events: list[Event]) -> Iterable[Emit]:
    return [e.emit(e.payload) for e in events]


def passthrough_columns(batch: pa.Table) -> pa.Table:
    """The vectorized pass-through (`vectorized: true`): every row forwarded, as columns."""
    return batch


def drop_odd(events: list[Event]) -> Iterable[Emit]:
    """A filter: keeps events whose index is even, so half are filtered by design."""
    return [e.emit(e.payload) for e in events if e.payload["i"] % 2 == 0]


def split_by_value(events: list[Event]) -> Iterable[Emit]:
    """A split: values below 700 go to stream 'low', the others to 'high'."""
    return [e.emit(e.payload, stream="low" if e.payload["v"] < 700 else "high") for e in events]


def checksum(events: list[Event]) -> Iterable[Emit]:
    """A little real CPU work per event (a few thousand multiply-adds)."""
    out = []
    for e in events:
        acc = e.payload["v"]
        for k in range(2000):
            acc = (acc * 31 + k) % 1_000_003
        out.append(e.emit({**e.payload, "sum": acc}))
    return out


def fail_marked(events: list[Event]) -> Iterable[Emit]:
    """A pass-through that raises on every event whose `poison` field is set (the chaos soak's
    poison events): those events fail alone (kept in the error log), the others go on. A batch's
    events share its columns, so an event without the field reads it as None."""
    for e in events:
        if e.payload.get("poison") is not None:
            raise ValueError(f"poison event {e.payload['poison']}")
    return [e.emit(e.payload) for e in events]


def fail_some(events: list[Event]) -> Iterable[Emit]:
    """A pass-through that raises on every event whose index ends in 3 (a tenth of them):
    those events fail alone (kept in the error log), the others go on."""
    for e in events:
        if e.payload["i"] % 10 == 3:
            raise ValueError(f"event index {e.payload['i']} ends in 3")
    return [e.emit(e.payload) for e in events]
