"""Keyed state as an operator function sees it: a handle over the state of its batch's keys."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

from elastream.model.batch import plain_value
from elastream.model.events import Event
from elastream.model.grouping import key_group

MAX_VALUE_BYTES = 1 << 20  # one key's encoded value; state values are meant to be small


class StateError(ValueError):
    """A misuse of keyed state: the message names the operator and the key."""


@dataclass(frozen=True, slots=True)
class StateWrite:
    """One key's new value (msgpack) in key group `group`; `value` None deletes the key."""

    group: int
    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Timer:
    """An event held back until the operator-wide watermark passes `at` (event-time s): it is
    then delivered again to the function, in `KeyedState.fired`."""

    at: float
    event: Event

    def record(self) -> list[Any]:
        """The stored form (msgpack-ready)."""
        e = self.event
        return [self.at, e.id, e.key, e.ts, e.root, e.payload]

    @classmethod
    def of(cls, record: Sequence[Any]) -> Timer:
        at, id_, key, ts, root, payload = record
        return cls(float(at), Event(id_, key, float(ts), payload, root))


def encode_value(value: Any) -> bytes:
    """The stored form of one state value (msgpack: numbers, strings, bytes, lists, dicts)."""
    return msgpack.packb(value, use_bin_type=True, default=plain_value)


def decode_value(blob: bytes) -> Any:
    return msgpack.unpackb(blob, raw=False, strict_map_key=False)


class KeyedState:
    """The state of the keys of one replica's share of a batch, as committed before the batch,
    with the share's own writes on top.

    `get` returns a fresh copy (changing it changes nothing until `put`); `put` checks that the
    value can be stored. Only the keys of the share's events are reachable: their key groups are
    the ones this replica owns for this batch. The writes are committed by the runtime together
    with the share's outputs, or not at all."""

    def __init__(
        self,
        op: str,
        groups: int,
        keys: Iterable[str],
        committed: Mapping[str, bytes],
        watermark: float = -math.inf,
        late_before: float = -math.inf,
    ) -> None:
        self.op = op
        self.groups = groups
        self._keys = frozenset(keys)
        self._committed = dict(committed)
        self._pending: dict[str, bytes | None] = {}
        self.watermark = watermark  # this batch's operator-wide watermark (docs/state.md)
        self.late_before = late_before  # the previous batch's: an event older than it is late
        self.fired: list[Event] = []  # the held events delivered again in this call (`defer`)
        self._deferred: list[Timer] = []

    def _check(self, key: str) -> None:
        if key not in self._keys:
            raise StateError(
                f"operator {self.op!r}: key {key!r} is not a key of this batch "
                f"(state is reachable only for the keys of the events passed in)"
            )

    def _blob(self, key: str) -> bytes | None:
        self._check(key)
        if key in self._pending:
            return self._pending[key]
        return self._committed.get(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The value of `key`, or `default` if it has none."""
        blob = self._blob(key)
        return default if blob is None else decode_value(blob)

    def __contains__(self, key: str) -> bool:
        return self._blob(key) is not None

    def put(self, key: str, value: Any) -> None:
        """Set `key`'s value (msgpack-serialisable: a number, a string, a small list or dict)."""
        self._check(key)
        if value is None:
            raise StateError(f"operator {self.op!r}, key {key!r}: None is not a value (delete)")
        try:
            blob = encode_value(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise StateError(
                f"operator {self.op!r}, key {key!r}: cannot store {type(value).__name__} "
                f"({exc}); use numbers, strings, lists and dicts"
            ) from exc
        if len(blob) > MAX_VALUE_BYTES:
            raise StateError(
                f"operator {self.op!r}, key {key!r}: value of {len(blob)} bytes "
                f"(at most {MAX_VALUE_BYTES})"
            )
        self._pending[key] = blob

    def delete(self, key: str) -> None:
        """Remove `key`'s value (nothing happens if it has none)."""
        self._check(key)
        self._pending[key] = None

    def items(self) -> Iterator[tuple[str, Any]]:
        """(key, value) of every key of this batch that has a value, in key order."""
        for key in sorted(self._keys):
            blob = self._blob(key)
            if blob is not None:
                yield key, decode_value(blob)

    def keys(self) -> list[str]:
        """The keys of this batch that have a value, in order."""
        return [key for key, _ in self.items()]

    def defer(self, event: Event, until: float) -> None:
        """Hold `event` back: it is delivered again, in `fired`, in the first batch whose
        watermark is above `until` (event-time s); with `until` the event's own time, it comes
        back once every event with an earlier or equal time has arrived. Needs an operator
        downstream of an `event_time` declaration (else the watermark never rises). If this
        batch's watermark is already above `until`, the event joins `fired` at once."""
        self._check(event.key)
        if math.isnan(until):
            raise StateError(f"operator {self.op!r}, event {event.id}: timer at NaN")
        if until < self.watermark:
            self.fired.append(event)
        else:
            self._deferred.append(Timer(float(until), event))

    # -- used by the runtime ---------------------------------------------------------------
    def mark(self) -> tuple[dict[str, bytes | None], int]:
        """The writes and timers so far, to `rollback` to if a call of the function fails."""
        return dict(self._pending), len(self._deferred)

    def rollback(self, mark: tuple[dict[str, bytes | None], int] | None = None) -> None:
        """Forget the writes and timers made since `mark` (None: all of them)."""
        pending, deferred = mark or ({}, 0)
        self._pending = dict(pending)
        del self._deferred[deferred:]

    def deferred(self, since: int = 0) -> list[Timer]:
        """The timers set by `defer` (from the `since`-th on), in the order they were set."""
        return self._deferred[since:]

    def writes(self) -> tuple[StateWrite, ...]:
        """The share's writes, in key order, each with its key group."""
        return tuple(
            StateWrite(key_group(key, self.groups), key, blob)
            for key, blob in sorted(self._pending.items())
        )
