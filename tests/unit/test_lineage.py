"""Completed source events counted by lineage (the runtime's throughput degradation and
processed ratio): a source event has completed when none of its descendants is queued and none
was dropped or failed, however many outputs it had. Hand-worked cases on a real store, with the
operators run as a replica runs them (no Spark); every expected count is worked out from the
inputs in the test."""

from __future__ import annotations

import time

from elastream.model.events import Event
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import SqliteQueueStore
from elastream.runtime.spark import task

LINES = ["a b c d e", "f g h i j", "k l m n o", "p q r s t"]  # five words each


def store_for(tmp_path, operators: list[dict], streams: list[tuple], sinks=("out",)):
    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate"}],
            "operators": operators,
            "sinks": [{"name": s} for s in sinks],
            "streams": [{"from": a, "to": b, **({"name": n} if n else {})} for a, b, n in streams],
        }
    )
    store = SqliteQueueStore(tmp_path / "q.db")
    store.set_meta("pipeline", pipeline.model_dump(mode="json", by_alias=True))
    for op in pipeline.operator_names:
        store.create_queue(op, None)
    for sink in pipeline.sink_names:
        store.create_queue(sink, None, sink=True)
    task.store_for.cache_clear()
    task.context_for.cache_clear()
    return store, pipeline


def run(store, op: str, start: int, end: int) -> None:
    """Plan `op`'s batch [start, end) for one replica and run it."""
    store.plan_batch(op, start, end, 1, lambda keys: [0] * len(keys))
    task.run_share(str(store.path), op, start, end, 0)


def feed(store, op: str, payloads: list) -> None:
    now = time.time()
    events = [Event(i, "k", now, p) for i, p in enumerate(payloads)]
    store.append(op, events, "src", 0)


def op(name: str, function: str) -> dict:
    return {"name": name, "function": function}


def test_a_one_to_five_splitter_completes_one_source_event_per_line(tmp_path):
    store, _ = store_for(
        tmp_path,
        [op("split", "support.ops:split_words")],
        [("src", "split", None), ("split", "out", None)],
    )
    feed(store, "split", [{"line": line} for line in LINES])
    assert store.lineage(["split"]) == (4, 4, 0)  # all four lines still queued
    run(store, "split", 0, 4)
    words = sum(len(line.split()) for line in LINES)
    assert store.latest("out") == words == 20  # twenty outputs reached the sink ...
    assert store.lineage(["split"]).completed == len(LINES)  # ... for four source events


def test_a_filter_dropping_half_completes_every_event(tmp_path):
    store, _ = store_for(
        tmp_path,
        [op("keep", "elastream.examples.synthetic:drop_odd")],
        [("src", "keep", None), ("keep", "out", None)],
    )
    feed(store, "keep", [{"i": i} for i in range(10)])
    run(store, "keep", 0, 10)
    evens = sum(1 for i in range(10) if i % 2 == 0)
    assert store.latest("out") == evens == 5
    assert store.lineage(["keep"]) == (10, 0, 0)  # filtered by design is completed


def test_a_split_into_two_sinks_completes_each_event_once(tmp_path):
    store, _ = store_for(
        tmp_path,
        [op("route", "elastream.examples.synthetic:split_by_value")],
        [("src", "route", None), ("route", "low", "low"), ("route", "high", "high")],
        sinks=("low", "high"),
    )
    values = [5, 900, 10, 800, 699, 700]
    feed(store, "route", [{"i": i, "v": v} for i, v in enumerate(values)])
    run(store, "route", 0, len(values))
    assert (store.latest("low"), store.latest("high")) == (3, 3)
    assert store.lineage(["route"]).completed == len(values)


def test_a_pipeline_falling_behind_counts_only_finished_lineages(tmp_path):
    store, _ = store_for(
        tmp_path,
        [
            op("split", "support.ops:split_words"),
            op("pass", "elastream.examples.synthetic:passthrough"),
        ],
        [("src", "split", None), ("split", "pass", None), ("pass", "out", None)],
    )
    feed(store, "split", [{"line": line} for line in LINES])
    run(store, "split", 0, 3)  # the fourth line waits at `split`
    # `pass` handles its first 12 words: lines 0 and 1 are through, line 2 is half way
    run(store, "pass", 0, 12)
    per_line = [len(line.split()) for line in LINES]
    through = [sum(per_line[: k + 1]) <= 12 for k in range(3)]
    assert store.lineage(["split", "pass"]) == (4, 4 - sum(through), 0) == (4, 2, 0)
    run(store, "pass", 12, 15)
    run(store, "split", 3, 4)
    run(store, "pass", 15, 20)
    assert store.lineage(["split", "pass"]) == (4, 0, 0)


def test_an_event_that_fails_makes_its_lineage_lost_not_completed(tmp_path):
    store, _ = store_for(
        tmp_path,
        [op("pass", "support.ops:fail_on_three")],
        [("src", "pass", None), ("pass", "out", None)],
    )
    feed(store, "pass", [{"i": i} for i in range(6)])
    run(store, "pass", 0, 6)
    assert store.lineage(["pass"]) == (6, 0, 1)  # i = 3 failed alone


def test_a_released_batch_inside_a_segment_counts_as_done(tmp_path):
    store, _ = store_for(
        tmp_path,
        [op("pass", "elastream.examples.synthetic:passthrough")],
        [("src", "pass", None), ("pass", "out", None)],
    )
    feed(store, "pass", [{"i": i} for i in range(10)])  # one segment of ten events
    run(store, "pass", 0, 4)
    store.drop_consumed("pass", 4)  # the plan goes; the segment stays (it holds events 4..9)
    assert store.lineage(["pass"]) == (10, 6, 0)
    run(store, "pass", 4, 7)
    assert store.lineage(["pass"]) == (10, 3, 0)
