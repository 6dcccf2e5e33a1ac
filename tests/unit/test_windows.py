"""Event-time windows on hand-worked event sequences: expiry at the window edge, the watermark
and late events, tumbling windows closing, and a replayed batch leaving the same state."""

from __future__ import annotations

import pytest

from elastream.model.events import Event, EventError
from elastream.model.state import KeyedState, encode_value
from elastream.model.windows import WindowSpec, event_time, window_count

SLIDING = {"time_field": "t", "size_s": 10, "lateness_s": 2}


def ev(i: int, key: str, t: float) -> Event:
    return Event(id=i, key=key, ts=1000.0 + i, payload={"t": t})


def run(events, window, committed=None):
    """One batch through window_count; returns (outputs, committed state after the batch)."""
    handle = KeyedState("w", 8, {e.key for e in events}, committed or {})
    out = list(window_count(events, state=handle, window=window))
    after = dict(committed or {})
    for w in handle.writes():
        after[w.key] = w.value
    return out, after


def test_event_time_is_ts_or_a_payload_field_and_a_bad_one_is_named():
    e = ev(1, "a", 5.0)
    assert event_time(e, WindowSpec(size_s=1)) == 1001.0
    assert event_time(e, WindowSpec(size_s=1, time_field="t")) == 5.0
    with pytest.raises(EventError, match="'dropoff'"):
        event_time(e, WindowSpec(size_s=1, time_field="dropoff"))
    bad = Event(id=99, key="a", ts=0.0, payload={"t": "noon"})
    with pytest.raises(EventError, match="event 99.*'noon'"):
        event_time(bad, WindowSpec(size_s=1, time_field="t"))


def test_sliding_count_expires_exactly_at_the_window_edge():
    # size 10: at t, the window is (t-10, t]; an event at exactly t-10 is out
    times = [0, 3, 9, 10, 13, 25]
    out, _ = run([ev(i, "a", t) for i, t in enumerate(times)], SLIDING)
    assert [o.payload["count"] for o in out] == [1, 2, 3, 3, 3, 1]
    assert out[3].payload["times"] == [3, 9, 10]  # 0 left when t reached 10
    assert out[4].payload["times"] == [9, 10, 13]  # 3 left at 13
    assert out[5].payload["times"] == [25]


def test_late_events_are_counted_and_dropped_or_sent_to_the_side_stream():
    # lateness 2: after t=10 the watermark is 8; 9 is accepted (out of order), 7 is late
    seq = [ev(0, "a", 10), ev(1, "a", 9), ev(2, "a", 7), ev(3, "b", 7)]
    out, after = run(seq, SLIDING)
    assert [(o.parent.id, o.payload["count"]) for o in out] == [(0, 1), (1, 2), (3, 1)]
    side, after_side = run(seq, {**SLIDING, "late": "side", "late_stream": "late"})
    assert [(o.parent.id, o.stream) for o in side if o.stream] == [(2, "late")]
    assert after == after_side
    handle = KeyedState("w", 8, ["a", "b"], after)
    assert handle.get("a")["late"] == 1 and handle.get("b")["late"] == 0  # per-key watermark


def test_the_watermark_carries_over_batches_through_keyed_state():
    _, state = run([ev(0, "a", 20)], SLIDING)
    out, state = run([ev(1, "a", 17), ev(2, "a", 18), ev(3, "a", 30)], SLIDING, state)
    assert [o.parent.id for o in out] == [2, 3]  # 17 < 20 - 2 is late
    assert [o.payload["count"] for o in out] == [2, 1]  # (20-10, 30]: only 30 is left


def test_tumbling_windows_close_when_the_watermark_passes_their_end():
    window = {"time_field": "t", "kind": "tumbling", "size_s": 10, "lateness_s": 2}
    times = [1, 5, 11, 12, 9, 13, 25]  # 9 at watermark 10 is late; 12 -> wm 10 closes [0, 10)
    out, _ = run([ev(i, "a", t) for i, t in enumerate(times)], window)
    assert [(o.parent.id, o.payload["start"], o.payload["count"]) for o in out] == [
        (3, 0.0, 2),
        (6, 10.0, 3),
    ]


def test_a_replayed_batch_gives_the_same_state_and_outputs():
    committed = {"a": encode_value({"max": 4.0, "late": 0, "times": [4.0], "open": {}})}
    batch = [ev(i, k, t) for i, (k, t) in enumerate([("a", 6), ("b", 1), ("a", 13), ("b", 3)])]
    first = run(batch, SLIDING, committed)
    again = run(batch, SLIDING, committed)
    assert first[1] == again[1]
    assert [o.payload for o in first[0]] == [o.payload for o in again[0]]
    assert [o.payload["count"] for o in first[0]] == [2, 1, 3, 2]  # (3, 13] holds 4


def test_a_bad_window_spec_is_refused():
    with pytest.raises(ValueError, match="size_s"):
        WindowSpec.model_validate({"size_s": 0})
    with pytest.raises(ValueError, match="extra"):
        WindowSpec.model_validate({"size_s": 1, "slide": 2})
