"""Event time, sliding and tumbling event-time windows over keyed state, and the watermark."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import Field

from elastream.base.settings import Settings
from elastream.model.events import Emit, Event, EventError
from elastream.model.state import KeyedState


class WindowKind(StrEnum):
    """SLIDING: at time t, the events of (t - size, t]; TUMBLING: [k*size, (k+1)*size)."""

    SLIDING = "sliding"
    TUMBLING = "tumbling"


class LatePolicy(StrEnum):
    """What becomes of an event older than the watermark (always counted in the key's state)."""

    DROP = "drop"
    SIDE = "side"


class WatermarkScope(StrEnum):
    """KEY: the key's own max event time - lateness (an idle key's windows wait for its next
    event); OPERATOR: the runtime's operator-wide watermark with timers (docs/state.md)."""

    KEY = "key"
    OPERATOR = "operator"


class WindowSpec(Settings):
    """An operator's event-time window (its `window` parameter)."""

    time_field: str | None = Field(
        None,
        description="the event time: None = the source timestamp `ts`; else the name of a "
        "numeric payload field (seconds)",
    )
    kind: WindowKind = Field(WindowKind.SLIDING, description="sliding or tumbling")
    size_s: float = Field(gt=0, description="window length in event-time seconds")
    lateness_s: float = Field(
        0.0,
        ge=0,
        description="allowed lateness: watermark = max event time seen (for the key) - this",
    )
    late: LatePolicy = Field(LatePolicy.DROP, description="drop late events or emit them")
    watermark: WatermarkScope = Field(
        WatermarkScope.KEY,
        description="key: per-key watermark from the key's events; operator: the runtime's "
        "operator-wide watermark (an operator downstream of an event_time declaration): events "
        "are taken in event-time order and windows close on timers, idle keys included",
    )
    late_stream: str = Field("late", description="output stream of late events (late: side)")


def event_time(event: Event, spec: WindowSpec) -> float:
    """The event time of `event` under `spec`: `ts`, or the payload's `time_field`."""
    if spec.time_field is None:
        return float(event.ts)
    payload = event.payload
    if not isinstance(payload, dict) or spec.time_field not in payload:
        raise EventError(f"event {event.id}: no event-time field {spec.time_field!r} in payload")
    value = payload[spec.time_field]
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise EventError(
            f"event {event.id}: event-time field {spec.time_field!r} is {value!r}, not seconds"
        )
    return float(value)


def new_state() -> dict[str, Any]:
    """A key's window state: max event time seen, late count, and the window contents
    (sliding: sorted in-window times; tumbling: {window start: count} of open windows)."""
    return {"max": -math.inf, "late": 0, "times": [], "open": {}}


def watermark(state: dict[str, Any], spec: WindowSpec) -> float:
    """Event time before which this key's events are late: max seen - allowed lateness."""
    return state["max"] - spec.lateness_s


def add(state: dict[str, Any], t: float, spec: WindowSpec) -> tuple[bool, list[list[float]]]:
    """Adds an event at time `t` to a key's window state (changed in place). Returns whether it
    was accepted (False: late, counted in state["late"]) and, for a tumbling window, the
    windows [start, end, count] the new watermark closed, in order."""
    if t < watermark(state, spec):
        state["late"] += 1
        return False, []
    state["max"] = max(state["max"], t)
    if spec.kind is WindowKind.SLIDING:
        bisect.insort(state["times"], t)
        expire(state, state["max"], spec)
        return True, []
    start = math.floor(t / spec.size_s) * spec.size_s
    key = repr(start)
    state["open"][key] = state["open"].get(key, 0) + 1
    return True, close(state, spec)


def expire(state: dict[str, Any], now: float, spec: WindowSpec) -> None:
    """Sliding: drops the times outside (now - size, now] (the window's lower edge is open)."""
    times = state["times"]
    del times[: bisect.bisect_right(times, now - spec.size_s)]


def count(state: dict[str, Any]) -> int:
    """Sliding: the events in the key's window at its latest event time."""
    return len(state["times"])


def close(state: dict[str, Any], spec: WindowSpec) -> list[list[float]]:
    """Tumbling: removes and returns [start, end, count] of the windows the watermark passed."""
    mark = watermark(state, spec)
    closed = sorted(
        (float(k), float(k) + spec.size_s, n)
        for k, n in state["open"].items()
        if float(k) + spec.size_s <= mark
    )
    for start, _, _ in closed:
        del state["open"][repr(start)]
    return [list(w) for w in closed]


def window_count(events: list[Event], state: KeyedState, window: dict[str, Any]) -> Iterable[Emit]:
    """A keyed event-time window count (an operator: `stateless: false`, params `window`).

    Sliding: every accepted event emits {key, t, count, times} (its key's window at t).
    Tumbling: an event emits each window its watermark closed, {key, start, end, count}.
    A late event is counted in the key's state and dropped, or emitted on `late_stream`.
    With `watermark: operator`, see `timed_window_count`."""
    spec = WindowSpec.model_validate(window)
    if spec.watermark is WatermarkScope.OPERATOR:
        return timed_window_count(events, state, spec)
    out: list[Emit] = []
    states: dict[str, dict[str, Any]] = {}
    for e in events:
        st = states.get(e.key) or state.get(e.key) or new_state()
        states[e.key] = st
        t = event_time(e, spec)
        accepted, closed = add(st, t, spec)
        if not accepted:
            if spec.late is LatePolicy.SIDE:
                out.append(e.emit({"key": e.key, "t": t, "late": True}, stream=spec.late_stream))
        elif spec.kind is WindowKind.SLIDING:
            out.append(e.emit({"key": e.key, "t": t, "count": count(st), "times": st["times"][:]}))
        else:
            out += [
                e.emit({"key": e.key, "start": s, "end": end, "count": n}) for s, end, n in closed
            ]
    for key, st in states.items():
        state.put(key, st)
    return out


def timed_window_count(events: list[Event], state: KeyedState, spec: WindowSpec) -> list[Emit]:
    """`window_count` on the operator-wide watermark (`state.watermark`, with timers).

    An event older than the previous batch's watermark minus `lateness_s` is late. Sliding:
    each event is held until the watermark passes its time, then taken in (time, id) order, so
    the counts do not depend on how replicas and batches interleaved. Tumbling: an event is
    counted at once; the first event of a window is held until the watermark reaches the
    window's end, and then emits {key, start, end, count}: a key that receives nothing more
    still has its windows closed."""
    out: list[Emit] = []
    states: dict[str, dict[str, Any]] = {}

    def of(key: str) -> dict[str, Any]:
        if key not in states:
            states[key] = state.get(key) or new_state()
        return states[key]

    for e in events:
        t, st = event_time(e, spec), of(e.key)
        if t < state.late_before - spec.lateness_s:
            st["late"] += 1
            if spec.late is LatePolicy.SIDE:
                out.append(e.emit({"key": e.key, "t": t, "late": True}, stream=spec.late_stream))
        elif spec.kind is WindowKind.SLIDING:
            state.defer(e, until=t)
        else:
            start = math.floor(t / spec.size_s) * spec.size_s
            opened = repr(start) not in st["open"]
            st["open"][repr(start)] = st["open"].get(repr(start), 0) + 1
            if opened:  # W >= end closes it: the timer fires when W > the float below end
                state.defer(e, until=math.nextafter(start + spec.size_s, -math.inf))
    for e in sorted(state.fired, key=lambda ev: (event_time(ev, spec), ev.id)):
        t, st = event_time(e, spec), of(e.key)
        if spec.kind is WindowKind.SLIDING:
            st["max"] = max(st["max"], t)
            bisect.insort(st["times"], t)
            expire(st, st["max"], spec)
            out.append(e.emit({"key": e.key, "t": t, "count": count(st), "times": st["times"][:]}))
        else:
            start = math.floor(t / spec.size_s) * spec.size_s
            n = st["open"].pop(repr(start), 0)
            out.append(
                e.emit({"key": e.key, "start": start, "end": start + spec.size_s, "count": n})
            )
    for key, st in states.items():
        state.put(key, st)
    return out
