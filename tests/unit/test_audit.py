"""The audit's arithmetic (`build_audit`, which both queue stores end their audits with) on
hand-made fates: sink events, duplicates, roots with two fates, expired counts added back. Roots
are source positions (int64), as the stores keep them; a, b, c, d name four of them."""

import numpy as np

from elastream.runtime.queues.records import ExpiredCounts, build_audit

a, b, c, d = 11, 12, 13, 14


def roots(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_a_clean_run_adds_up():
    audit = build_audit(
        events_in=5,
        pending=1,
        sink_roots=roots(a, b),
        fates={"filtered": roots(c), "timeout": roots(d), "overflow": roots(), "failed": roots()},
        expired=ExpiredCounts(),
    )
    assert (audit.to_sink, audit.filtered, audit.timeout, audit.overflow, audit.failed) == (
        2, 1, 1, 0, 0,
    )  # fmt: skip
    assert (audit.events_in, audit.pending, audit.sink_events) == (5, 1, 2)
    assert audit.duplicate_sink_roots == audit.roots_with_two_fates == 0


def test_a_root_at_the_sink_twice_and_a_root_with_two_fates_are_counted():
    """`a` reached the sink twice (one duplicate, one root with one fate); `b` reached the sink
    and was also filtered; `c` timed out and failed: two roots with two fates."""
    audit = build_audit(
        events_in=3,
        pending=0,
        sink_roots=roots(a, a, b),
        fates={"filtered": roots(b), "timeout": roots(c), "overflow": roots(), "failed": roots(c)},
        expired=ExpiredCounts(),
    )
    assert (audit.sink_events, audit.to_sink, audit.duplicate_sink_roots) == (3, 2, 1)
    assert audit.roots_with_two_fates == 2


def test_what_expiry_forgot_is_added_back():
    expired = ExpiredCounts(to_sink=10, sink_events=11, filtered=4, timeout=2, overflow=1)
    audit = build_audit(
        events_in=30,
        pending=0,
        sink_roots=roots(a),
        fates={"filtered": roots(b), "timeout": roots(), "overflow": roots(), "failed": roots(c)},
        expired=expired,
    )
    assert (audit.to_sink, audit.sink_events, audit.filtered) == (11, 12, 5)
    assert (audit.timeout, audit.overflow, audit.failed) == (2, 1, 1)
