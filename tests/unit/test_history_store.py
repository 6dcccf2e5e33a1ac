"""The durable metrics history: write, query (rows and frames), reopen, windows, bad rows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from elastream.history import (
    HistoryError,
    HistoryRow,
    HistoryStore,
    RunCpuRow,
    backpressure,
    points_by_operator,
    source_series,
)
from reproductions.caladrius.synthetic import wordcount_history


def row(**over) -> HistoryRow:
    base = dict(
        run_id="r1", pipeline="wc", operator="split", replica=0, parallelism=2, t=0.0,
        interval_s=5.0, source_rate=10.0, input_rate=8.0, output_rates={"words": 60.0},
        busy=0.5, cpu=0.4, queue_length=10.0, backpressure=True, service_time_var=1e-4,
    )  # fmt: skip
    base.update(over)
    return HistoryRow(**base)


def test_backpressure_definition():
    assert backpressure(True, 5, 5)  # admission cap hit
    assert backpressure(False, 5, 6)  # queue grew over the interval
    assert not backpressure(False, 6, 5)


def test_record_query_and_reopen(tmp_path):
    path = tmp_path / "h" / "history.db"
    with HistoryStore(path) as store:
        assert store.record([row(), row(replica=1, backpressure=False), row(t=5.0)]) == 3
        assert store.record([row(run_id="r2", pipeline="other")]) == 1
    with HistoryStore(path) as store:  # durable: a new connection sees everything
        rows = store.rows(pipeline="wc")
        assert len(rows) == 3
        assert rows[0] == row()
        assert store.runs() == ["r1", "r2"]
        assert store.runs("other") == ["r2"]
        assert len(store.rows(operators=["split"], since=5.0)) == 1
        assert len(store.rows(run_ids=["r2"])) == 1
        frame = store.frame(pipeline="wc")
        assert list(frame["output_rate"]) == [60.0, 60.0, 60.0]
        assert frame["backpressure"].sum() == 2


def test_rerecorded_interval_replaces_and_changes_the_version(tmp_path):
    with HistoryStore(tmp_path / "h.db") as store:
        store.record([row()])
        before = store.version()
        store.record([row(input_rate=9.0)])
        assert store.version() != before
        assert [r.input_rate for r in store.rows()] == [9.0]


def test_same_run_id_in_two_pipelines_does_not_collide(tmp_path):
    with HistoryStore(tmp_path / "h.db") as store:
        store.record([row(), row(pipeline="other")])
        assert len(store.rows()) == 2


def test_missing_pipeline_is_named(tmp_path):
    with (
        HistoryStore(tmp_path / "h.db") as store,
        pytest.raises(HistoryError, match="no rows for pipeline 'ghost'"),
    ):
        store.require("ghost")


def test_bad_rows_are_rejected_naming_the_field():
    with pytest.raises(HistoryError, match="operator 'split'.*source_rate must be ≥ 0"):
        row(source_rate=-1.0)
    with pytest.raises(HistoryError, match="interval_s must be > 0"):
        row(interval_s=0)
    with pytest.raises(HistoryError, match="run_id must not be empty"):
        row(run_id="")
    with pytest.raises(HistoryError, match="queue_length"):
        row(queue_length=-3)


def test_rows_to_points_and_source_series():
    rows = wordcount_history("a", [10, 20, 30], {"spout": 1, "splitter": 2, "counter": 1})
    rows += wordcount_history("b", [40, 50], {"spout": 1, "splitter": 3, "counter": 1})
    points = points_by_operator(rows)
    assert len(points["splitter"]) == 3 * 2 + 2 * 3
    assert {p.parallelism for p in points["splitter"]} == {2, 3}
    series = source_series(rows, ["spout"])
    assert list(series.values) == [10, 20, 30, 40, 50]  # runs in order
    assert series.step_s == 60.0
    with pytest.raises(HistoryError, match="fewer than 2 intervals"):
        source_series(rows, ["nope"])


def test_replica_rows_split_an_operators_arrivals_and_cpu_by_what_each_replica_processed():
    from support.builders import snapshot, stats

    from elastream.runner.recording import replica_rows

    o = replace(stats("op", replicas=2, received=30, processed=40, emitted=80, queue=5),
                replica_processed=(10, 30), cpu_s=2.0)  # fmt: skip
    snap = snapshot(o, t=10.0, interval_s=2.0)
    rows = replica_rows("run", "p", snap, o, queue_before=15)
    assert [r.source_rate for r in rows] == pytest.approx([3.75, 11.25])  # 30/2 s split 1:3
    assert [r.input_rate for r in rows] == pytest.approx([5.0, 15.0])
    assert [r.cpu for r in rows] == pytest.approx([0.25, 0.75])  # cores: 2 CPU-s over 2 s
    assert all(r.backpressure is False for r in rows)  # the queue shrank (15 -> 5)
    unmeasured = replica_rows("run", "p", snap, replace(o, cpu_s=None), queue_before=1)
    assert [r.cpu for r in unmeasured] == [None, None]
    assert all(r.backpressure for r in unmeasured)  # the queue grew (1 -> 5)


def test_replica_rows_flag_a_capped_admission_and_split_outputs_per_stream():
    from support.builders import snapshot, stats

    from elastream.runner.recording import replica_rows

    o = replace(stats("op", replicas=2, received=30, processed=40, emitted=80, queue=5),
                replica_processed=(10, 30), admission_capped=True,
                emitted_streams=(("words", 60), ("errors", 20)))  # fmt: skip
    rows = replica_rows("run", "p", snapshot(o, t=10.0, interval_s=2.0), o, queue_before=15)
    assert all(r.backpressure for r in rows)  # the queue shrank, but the cap was hit
    assert rows[1].output_rates == pytest.approx({"words": 22.5, "errors": 7.5})  # 3/4 of each
    unsplit = replica_rows("run", "p", snapshot(o, t=10.0, interval_s=2.0),
                           replace(o, emitted_streams=()), queue_before=15)  # fmt: skip
    assert unsplit[1].output_rates == pytest.approx({"*": 30.0})


def test_replica_rows_carry_each_replicas_service_time_variance():
    from support.builders import snapshot, stats

    from elastream.runner.recording import replica_rows

    o = replace(stats("op", replicas=2, received=30, processed=40),
                replica_processed=(10, 30), service_time_var=(1e-4, None))  # fmt: skip
    rows = replica_rows("run", "p", snapshot(o, t=10.0, interval_s=2.0), o, queue_before=0)
    assert [r.service_time_var for r in rows] == [1e-4, None]
    unknown = replica_rows("run", "p", snapshot(o), replace(o, service_time_var=()), 0)
    assert [r.service_time_var for r in unknown] == [None, None]


def test_batches_and_the_runs_own_cpu_round_trip(tmp_path):
    with HistoryStore(tmp_path / "h.db") as store:
        store.record([row(batches=3), row(replica=1, batches=None)])
        cpu = [RunCpuRow("r1", "wc", 0.0, 5.0, 0.75), RunCpuRow("r1", "wc", 5.0, 5.0, 1.25)]
        assert store.record_run_cpu(cpu) == 2
        store.record_run_cpu([RunCpuRow("r2", "other", 0.0, 5.0, 0.5)])
    with HistoryStore(tmp_path / "h.db") as store:
        assert [r.batches for r in store.rows()] == [3, None]
        assert [r.point().batch_rate for r in store.rows()] == [pytest.approx(0.6), None]
        assert store.run_cpu(pipeline="wc") == cpu
        assert [r.run_id for r in store.run_cpu(run_ids=["r2"])] == ["r2"]


def test_a_history_written_before_the_batches_column_gets_it(tmp_path):
    import sqlite3

    from elastream.history.store import SCHEMA

    path = tmp_path / "old.db"
    newer = ("    batches INTEGER,\n", "    source_backlog REAL,\n", "    recorded_at REAL,\n")
    old_schema = SCHEMA
    for column in newer:
        assert column in old_schema
        old_schema = old_schema.replace(column, "")
    with sqlite3.connect(path) as conn:
        conn.executescript(old_schema)
        conn.execute(
            "INSERT INTO history VALUES ('r0', 'wc', 'split', 0, 1, 0, 5, 10, 8, 60, '{}', "
            "NULL, NULL, 0, 0, NULL)"
        )
    with HistoryStore(path) as store:  # the column is added; old rows read as not counted
        assert [r.batches for r in store.rows()] == [None]
        store.record([row(batches=2)])
        assert sorted(str(r.batches) for r in store.rows()) == ["2", "None"]


def test_a_bad_batch_count_is_named():
    with pytest.raises(HistoryError, match=r"operator 'split', t=0.0\): batches must be ≥ 0"):
        row(batches=-1)


def test_a_bad_run_cpu_row_is_named():
    with pytest.raises(HistoryError, match=r"run 'r1', t=5.0\): cores must be ≥ 0"):
        RunCpuRow("r1", "wc", 5.0, 5.0, -0.1)
    with pytest.raises(HistoryError, match="interval_s must be > 0"):
        RunCpuRow("r1", "wc", 5.0, 0.0, 0.1)


def test_replica_rows_carry_each_replicas_batches():
    from support.builders import snapshot, stats

    from elastream.runner.recording import replica_rows

    o = replace(stats("op", replicas=2, received=30, processed=40),
                replica_processed=(10, 30), replica_batches=(1, 3))  # fmt: skip
    rows = replica_rows("run", "p", snapshot(o, t=10.0, interval_s=2.0), o, queue_before=0)
    assert [r.batches for r in rows] == [1, 3]
    uncounted = replica_rows("run", "p", snapshot(o), replace(o, replica_batches=()), 0)
    assert [r.batches for r in uncounted] == [None, None]
