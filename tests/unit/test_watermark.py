"""The operator-wide watermark and timers through the task code (no Spark): a tumbling window
of a key that receives nothing more closes when the watermark passes its end; the watermark a
batch was planned with is the one a replay sees; the watermark covers only committed batches
and the events queued before it; idle operators get ticks, which the audit does not count."""

from __future__ import annotations

import math
from collections.abc import Iterable

from support.task_driver import prepare, run_batch, set_replicas, sink_payloads
from support.watermark import ev, feed, windows_pipeline

from elastream.model.events import Emit, Event
from elastream.runtime.spark.source import plan_partitions
from elastream.runtime.spark.task import run_share
from elastream.runtime.spark.watermark import Watermarks, declare_end_of_input, flushed


def stamp(events: list[Event]) -> Iterable[Emit]:
    """The event-time assigner: passes each event on, keyed by its payload's key."""
    return [e.emit(e.payload, key=e.payload["k"]) for e in events]


def test_an_idle_keys_window_closes_when_the_watermark_passes_its_end(tmp_path):
    pipeline = windows_pipeline()
    db = tmp_path / "q.db"
    store = prepare(pipeline, db)
    set_replicas(store, "stamp", 2)
    set_replicas(store, "count", 3)
    feed(store, [ev(0, "a", 1), ev(1, "b", 2), ev(2, "a", 5)])
    s = c = 0
    s = run_batch(store, pipeline, db, "stamp", s, order=[1, 0])
    c = run_batch(store, pipeline, db, "count", c)
    assert sink_payloads(store, "out") == []  # the watermark has not reached 10
    feed(store, [ev(3, "a", 12), ev(4, "a", 25)])  # b receives nothing more
    s = run_batch(store, pipeline, db, "stamp", s)
    s = run_batch(store, pipeline, db, "stamp", s)  # idle: Spark's latestOffset folds the batch
    set_replicas(store, "count", 2)  # the groups change owners: the timers go with them
    # count's batch holds a's events only, planned with watermark 25 (stamp's batch committed):
    # b's window [0, 10) closes by its timer, on the replica that owns b's group now
    c = run_batch(store, pipeline, db, "count", c)
    closed = {(p["key"], p["start"], p["count"]) for p in sink_payloads(store, "out")}
    assert closed == {("a", 0.0, 2), ("b", 0.0, 1), ("a", 10.0, 1)}  # [20, 30) is still open
    declare_end_of_input(store)
    s = run_batch(store, pipeline, db, "stamp", s)  # idle and all consumed: +inf
    c = run_batch(store, pipeline, db, "count", c)
    c = run_batch(store, pipeline, db, "count", c)
    assert ("a", 20.0, 1) in {
        (p["key"], p["start"], p["count"]) for p in sink_payloads(store, "out")
    }
    assert flushed(store, pipeline)
    audit = store.audit()
    assert audit.events_in == 5 and audit.pending == 0, audit  # ticks are not input
    assert audit.to_sink + audit.filtered == 5 and audit.roots_with_two_fates == 0, audit


def test_the_watermark_waits_for_every_share_and_a_replay_sees_the_planned_one(tmp_path):
    pipeline = windows_pipeline()
    db = tmp_path / "q.db"
    store = prepare(pipeline, db)
    set_replicas(store, "stamp", 2)
    feed(store, [ev(n, "a" if n % 2 else "b", 10.0 * n) for n in range(6)])
    (first, second) = plan_partitions(str(db), "stamp", 0, 6)
    run_share(str(db), "stamp", first.start, first.end, first.replica)
    # one share committed: count may plan its outputs, but the watermark must not move
    end = store.latest("count")
    assert end > 0
    assert len(plan_partitions(str(db), "count", 0, end)) == 1
    assert Watermarks.load(store, "count").plans["0"][2] == -math.inf
    run_share(str(db), "stamp", second.start, second.end, second.replica)
    run_batch(store, pipeline, db, "stamp", 6)  # folds the committed batch
    assert Watermarks.load(store, "stamp").out == 50.0
    # Spark replans the same batch after a restart: the recorded watermark, not the new one
    (again,) = plan_partitions(str(db), "count", 0, end)
    assert Watermarks.load(store, "count").plans["0"][2] == -math.inf
    run_share(str(db), "count", again.start, again.end, again.replica)
    # the next batch of count covers the rest of stamp's outputs: it may now use 50
    nxt = run_batch(store, pipeline, db, "count", end)
    assert Watermarks.load(store, "count").last_in == 50.0
    assert nxt == store.latest("count")
