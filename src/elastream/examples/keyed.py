"""A keyed count for tests and benchmarks: a stateful operator and a source over a fixed key set."""

from __future__ import annotations

import random
from collections.abc import Iterable

from elastream.model.events import Emit, Event
from elastream.model.state import KeyedState

KEYS = 200  # distinct keys of `generate`


def key_of(index: int, keys: int = KEYS) -> str:
    """The key of source event number `index` (a fixed function of the index, so a test can
    recount what was sent)."""
    return f"u{(index * 7919) % keys}"


def generate(index: int, rng: random.Random) -> tuple[str, dict[str, int]]:
    """Event number `index`: one of KEYS keys, and a payload carrying the index."""
    return key_of(index), {"i": index, "v": rng.randrange(1000)}


def count(events: list[Event], state: KeyedState) -> Iterable[Emit]:
    """Counts the events of every key in keyed state; emits each event's running count."""
    out = []
    for e in events:
        n = state.get(e.key, 0) + 1
        state.put(e.key, n)
        out.append(e.emit({"key": e.key, "count": n}))
    return out


def generate_10k(index: int, rng: random.Random) -> tuple[str, dict[str, int]]:
    """Event number `index` over 10,000 keys (every key once per 10,000 events)."""
    return key_of(index, 10_000), {"i": index}


def generate_1m(index: int, rng: random.Random) -> tuple[str, dict[str, int]]:
    """Event number `index` over 1,000,000 keys."""
    return key_of(index, 1_000_000), {"i": index}
