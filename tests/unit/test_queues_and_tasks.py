"""The SQLite queue store and the replica task logic, without Spark: offsets, bounds, timeouts,
exactly-once replays, error isolation."""

import time

import pytest
from support.builders import linear_pipeline, queue_store

from elastream.model.events import Event
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import QueueError, SqliteQueueStore
from elastream.runtime.spark import task


def make_store(
    tmp_path,
    *,
    middle="elastream.examples.synthetic:passthrough",
    queue_capacity=None,
    event_timeout_s=None,
):
    data = linear_pipeline(3, (1, 4))
    data["operators"][1]["function"] = middle
    return queue_store(
        tmp_path / "q.db",
        pipeline_from_dict(data),
        queue_capacity=queue_capacity,
        event_timeout_s=event_timeout_s,
    )


def events(n, start=0, ts=None):
    now = time.time() if ts is None else ts
    return [
        Event(i, f"k{i % 3}", now, {"i": i, "v": i * 100 % 1000}) for i in range(start, start + n)
    ]


def run_all(store, op, replica=0):
    """Plan everything queued at `op` as one batch for one replica, and run `replica`'s share."""
    end = store.latest(op)
    store.plan_batch(op, 0, end, 1, lambda keys: [0] * len(keys))
    return task.run_share(str(store.path), op, 0, end, replica)


def test_offsets_are_contiguous_and_appends_idempotent(tmp_path):
    store = make_store(tmp_path)
    assert store.append("op1", events(5), "src", 0) == (5, 0)
    assert store.append("op1", events(5), "src", 0) == (0, 0)  # offered before: nothing twice
    assert store.latest("op1") == 5
    assert [e.id for e in store.read_events("op1", 0, 5)][::4] == [0, 4]
    assert store.keys("op1", 0, 3) == ["k0", "k1", "k2"]
    with pytest.raises(QueueError, match="unknown queue 'nope'"):
        store.append("nope", events(1), "src", 0)


def test_bounded_queue_drops_and_counts_overflow(tmp_path):
    store = make_store(tmp_path, queue_capacity=3)
    assert store.append("op1", events(5), "src", 0) == (3, 2)
    audit = store.audit()
    assert (audit.events_in, audit.overflow, audit.pending) == (5, 2, 3)


def test_pipeline_conserves_events_with_a_filter(tmp_path):
    store = make_store(tmp_path, middle="elastream.examples.synthetic:drop_odd")
    store.append("op1", events(10), "src", 0)
    for op in ("op1", "op2", "op3"):
        run_all(store, op)
    audit = store.audit()
    assert (audit.events_in, audit.to_sink, audit.filtered, audit.pending) == (10, 5, 5, 0)
    assert audit.roots_with_two_fates == 0 and audit.duplicate_sink_roots == 0


def test_replayed_batch_changes_nothing(tmp_path):
    store = make_store(tmp_path)
    store.append("op1", events(8), "src", 0)
    first = run_all(store, "op1")
    again = run_all(store, "op1", replica=1)  # a retry, even on another replica
    assert (first.fresh, again.fresh) == (8, 0)
    assert store.latest("op2") == 8  # outputs appended once
    assert store.pending("op1") == 0


def test_timeout_drops_old_events_when_their_turn_comes(tmp_path):
    store = make_store(tmp_path, event_timeout_s=5.0)
    store.append("op1", events(3, ts=time.time() - 60) + events(2, start=3), "src", 0)
    run_all(store, "op1")
    audit = store.audit()
    assert (audit.timeout, store.latest("op2")) == (3, 2)


def test_failing_event_is_isolated_and_logged(tmp_path):
    store = make_store(tmp_path, middle="support.ops:fail_on_three")
    store.append("op1", events(6), "src", 0)
    run_all(store, "op1")
    run_all(store, "op2")
    audit = store.audit()
    assert audit.failed == 1 and store.latest("op3") == 5
    (message,) = [r[0] for r in store.conn.execute("SELECT message FROM errors")]
    assert "operator 'op2'" in message and "ValueError: three is bad" in message


def test_unknown_output_stream_is_an_error_naming_it(tmp_path):
    store = make_store(tmp_path, middle="elastream.examples.synthetic:split_by_value")
    store.append("op1", events(2), "src", 0)
    run_all(store, "op1")
    run_all(store, "op2")
    (message,) = {r[0] for r in store.conn.execute("SELECT message FROM errors LIMIT 1")}
    assert "emitted to unknown stream" in message and "(its streams: out)" in message


def test_feeder_integrates_the_trace_stepwise():
    import numpy as np

    from elastream.runtime.spark.feeder import TraceIntegral
    from elastream.workloads import Trace

    due_by = TraceIntegral(Trace(np.array([10.0, 30.0]), step_s=2.0))
    assert [due_by(t) for t in (0.0, 1.0, 2.0, 3.0, 4.0, 99.0)] == [0, 10, 20, 50, 80, 80]


def test_admission_cap_hit_is_noted_for_the_backpressure_flag(tmp_path):
    from elastream.runtime.spark.source import admitted_end, cap_hit_key

    store = make_store(tmp_path)
    store.set_control("op1", 1, 5, 0.01, [])
    store.append("op1", events(8), "src", 0)
    before = time.time()
    assert admitted_end(str(store.path), "op1", 0, None) == 5  # capped: 3 stay queued
    assert store.meta(cap_hit_key("op1")) >= before
    store.set_meta(cap_hit_key("op1"), -1.0)
    assert admitted_end(str(store.path), "op1", 5, None) == 8  # the rest fits: not capped
    assert store.meta(cap_hit_key("op1")) == -1.0


def test_a_batch_planned_before_a_restart_is_admitted_again_as_it_was(tmp_path):
    from elastream.runtime.spark.source import admitted_end

    store = make_store(tmp_path)
    store.set_control("op1", 1, 5, 0.01, [])
    store.append("op1", events(20), "src", 0)
    store.plan_batch("op1", 0, 3, 1, lambda keys: [0] * len(keys))
    assert admitted_end(str(store.path), "op1", 0, None) == 3  # not 5, the cap now
    assert admitted_end(str(store.path), "op1", 3, None) == 8


def replayed_range(tmp_path, **operator) -> str:
    """The queue store's address: op1 (with `operator`'s fields) holds 12 events, planned as
    0-4 and 4-7 for 2 replicas; r is 3 by now."""
    data = linear_pipeline(3, (1, 4))
    data["operators"][0].update(operator)
    store = queue_store(tmp_path / "q.db", pipeline_from_dict(data))
    store.append("op1", events(12), "src", 0)
    for start, end in ((0, 4), (4, 7)):
        store.plan_batch("op1", start, end, 2, lambda keys: [k % 2 for k in range(len(keys))])
    store.set_control("op1", 3, 100, 0.01, [])
    return str(store.path)


def test_a_replayed_range_runs_each_recorded_batch_as_planned_then_the_rest(tmp_path):
    from elastream.runtime.spark.source import plan_partitions

    db = replayed_range(tmp_path)
    parts = plan_partitions(db, "op1", 0, 12)
    assert [(p.start, p.end, p.replica) for p in parts] == [
        (0, 4, 0), (0, 4, 1), (4, 7, 0), (4, 7, 1), (7, 12, 0), (7, 12, 1), (7, 12, 2)
    ]  # fmt: skip
    done = [task.run_share(db, "op1", p.start, p.end, p.replica) for p in parts]
    assert sum(r.events for r in done) == 12


def test_a_stateful_replay_with_an_unfinished_batch_before_the_last_is_refused(tmp_path):
    from elastream.runtime.spark.source import plan_partitions

    keyed = {"function": "elastream.examples.keyed:count", "grouping": "key_hash"}
    db = replayed_range(tmp_path, stateless=False, **keyed)
    with pytest.raises(QueueError, match="the replayed batch 0-4 is unfinished"):
        plan_partitions(db, "op1", 0, 7)
    for replica in (0, 1):
        task.run_share(db, "op1", 0, 4, replica)
    assert [(p.start, p.end) for p in plan_partitions(db, "op1", 0, 7)] == [(0, 4)] * 2 + [
        (4, 7)
    ] * 2  # only the last batch of the range is unfinished: in order


def counting_meta_writes(monkeypatch) -> list[str]:
    """The keys of every meta write any SQLite queue store makes from now on."""

    keys: list[str] = []
    write = SqliteQueueStore.set_meta

    def counted(self, key, value):
        keys.append(key)
        write(self, key, value)

    monkeypatch.setattr(SqliteQueueStore, "set_meta", counted)
    return keys


def test_a_capped_admission_is_written_once_per_history_interval(tmp_path, monkeypatch):
    from elastream.runtime.spark.source import CapNote, admitted_end, cap_hit_key, open_interval

    store = make_store(tmp_path)
    store.set_control("op1", 1, 5, 0.01, [])
    store.append("op1", events(30), "src", 0)
    db, note = str(store.path), CapNote()
    opened = time.time()
    open_interval(store, opened, 60.0)
    writes = counting_meta_writes(monkeypatch)

    def noted() -> int:
        return writes.count(cap_hit_key("op1"))

    assert [admitted_end(db, "op1", k, None, note) for k in (0, 5, 10)] == [5, 10, 15]
    assert noted() == 1  # three capped batches, one write in the interval
    first = store.meta(cap_hit_key("op1"))
    assert first >= opened  # the runtime flags [opened, opened + 60)
    open_interval(store, first + 1e-3, 60.0)  # the runtime's next interval
    assert admitted_end(db, "op1", 15, None, note) == 20
    assert noted() == 2 and store.meta(cap_hit_key("op1")) > first  # noted again in it
    open_interval(store, time.time() + 1e-3, 60.0)
    assert admitted_end(db, "op1", 25, None, note) == 30  # the rest fits: nothing noted
    assert noted() == 2


def test_a_cap_hit_is_written_when_the_runtimes_collect_is_due(tmp_path, monkeypatch):
    # The collect that ends the interval may have begun before it publishes the next one:
    # from the due time on every capped batch is noted, so the next interval sees its own.
    from elastream.runtime.spark.source import CapNote, admitted_end, cap_hit_key, open_interval

    store = make_store(tmp_path)
    store.set_control("op1", 1, 5, 0.01, [])
    store.append("op1", events(20), "src", 0)
    note = CapNote()
    open_interval(store, time.time() - 2.0, 1.0)  # due a second ago
    writes = counting_meta_writes(monkeypatch)
    admitted_end(str(store.path), "op1", 0, None, note)
    admitted_end(str(store.path), "op1", 5, None, note)
    assert writes == [cap_hit_key("op1")] * 2


def test_sparks_own_tighter_row_limit_is_not_our_cap(tmp_path, monkeypatch):
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from elastream.runtime.spark.source import CapNote, admitted_end, cap_hit_key

    store = make_store(tmp_path)
    store.set_control("op1", 1, 5, 0.01, [])
    store.append("op1", events(8), "src", 0)
    writes = counting_meta_writes(monkeypatch)
    assert admitted_end(str(store.path), "op1", 0, ReadMaxRows(3), CapNote()) == 3
    assert writes == [] and store.meta(cap_hit_key("op1")) is None  # Spark's limit, not ours
    assert admitted_end(str(store.path), "op1", 0, ReadMaxRows(5), CapNote()) == 5
    assert writes == [cap_hit_key("op1")]  # both limits at 5: our cap bound too


def test_a_source_appends_its_generated_events_as_columns_and_resumes_where_it_stopped(tmp_path):
    import random

    from elastream.examples.synthetic import generate
    from elastream.runtime.spark.feeder import SourceStream

    store = make_store(tmp_path)
    pipeline = pipeline_from_dict(linear_pipeline(3, (1, 4)))
    stream = SourceStream(pipeline.sources[0], pipeline, store, seed=7)
    stream.feed_until(5)
    again = SourceStream(pipeline.sources[0], pipeline, store, seed=7)  # a resumed run
    assert again.sent == 5
    again.feed_until(8)
    rng = random.Random("7-src")
    expected = [generate(i, rng) for i in range(5)]
    stored = [e for e in store.read_events("op1", 0, 8)]
    assert [e.id for e in stored] == list(range(8))  # offsets
    assert [(e.key, e.payload) for e in stored[:5]] == expected
    assert [e.root for e in stored] == [pipeline.source_roots("src", i) for i in range(8)]
    assert store.latest("op1") == 8
