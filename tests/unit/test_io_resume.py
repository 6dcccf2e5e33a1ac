"""A run resumed after its final watermark flush (the end of input sent every watermark to +inf):
the new events are on time again, their windows close and reach the sink (no Spark: the task
code through tests/support/task_driver.py, as the Spark runtime's resume calls it)."""

from __future__ import annotations

import math

from support.task_driver import prepare, run_batch, set_replicas, sink_payloads
from support.watermark import ev, feed, windows_pipeline

from elastream.runtime.spark.watermark import (
    END_OF_INPUT,
    Watermarks,
    declare_end_of_input,
    flushed,
    reopen_after_flush,
)


def windows(store) -> set[tuple[str, float, int]]:
    return {(p["key"], p["start"], p["count"]) for p in sink_payloads(store, "out")}


def flush(store, pipeline, db, s: int, c: int) -> tuple[int, int]:
    """The drain of a finished run: end of input, then batches until every watermark is +inf."""
    declare_end_of_input(store)
    for _ in range(3):
        s = run_batch(store, pipeline, db, "stamp", s)
        c = run_batch(store, pipeline, db, "count", c)
    assert flushed(store, pipeline)
    return s, c


def test_a_run_resumed_after_its_final_flush_takes_new_events_on_time(tmp_path):
    pipeline = windows_pipeline()
    db = tmp_path / "q.db"
    store = prepare(pipeline, db)
    set_replicas(store, "count", 2)
    feed(store, [ev(0, "a", 1), ev(1, "a", 5), ev(2, "b", 12)])
    s, c = flush(store, pipeline, db, 0, 0)
    assert windows(store) == {("a", 0.0, 2), ("b", 10.0, 1)}
    assert Watermarks.load(store, "count").out == math.inf

    reopen_after_flush(store, pipeline)  # what `--resume` does before anything runs
    assert store.meta(END_OF_INPUT) is False
    stamp, count = Watermarks.load(store, "stamp"), Watermarks.load(store, "count")
    assert stamp.out == 12.0 and count.last_in == 12.0  # the largest finite ones reached
    assert all(math.isfinite(h[0]) for h in stamp.history)

    feed(store, [ev(3, "a", 31), ev(4, "a", 35), ev(5, "b", 44), ev(6, "a", 52)])
    for _ in range(2):
        s = run_batch(store, pipeline, db, "stamp", s)
        c = run_batch(store, pipeline, db, "count", c)
    # the watermark is 52 now: [30, 40) and [40, 50) closed by it, not by a flush
    assert {("a", 30.0, 2), ("b", 40.0, 1)} <= windows(store)
    assert ("a", 50.0, 1) not in windows(store)
    s, c = flush(store, pipeline, db, s, c)
    assert ("a", 50.0, 1) in windows(store)  # the second end of input flushes it
    audit = store.audit()
    assert audit.events_in == 7 and audit.pending == 0, audit
    assert audit.to_sink + audit.filtered == 7 and audit.roots_with_two_fates == 0, audit


def test_a_run_that_never_flushed_is_left_alone(tmp_path):
    pipeline = windows_pipeline()
    db = tmp_path / "q.db"
    store = prepare(pipeline, db)
    feed(store, [ev(0, "a", 1), ev(1, "a", 15)])
    run_batch(store, pipeline, db, "stamp", 0)
    run_batch(store, pipeline, db, "stamp", 2)
    before = Watermarks.load(store, "stamp").__dict__
    reopen_after_flush(store, pipeline)
    assert Watermarks.load(store, "stamp").__dict__ == before
