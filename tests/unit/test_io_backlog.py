"""An external source's backlog (files not yet read, Redis lag) in λ_G: the policies see it as
arrival pressure, and it reaches the history, intervals.csv and the report's rates plot; the
metrics history forgets rows older than its retention."""

from __future__ import annotations

import dataclasses
import sqlite3

from support.builders import snapshot, stats

from elastream.control.policies import ds2, psps
from elastream.control.policy import POLICIES, Decision
from elastream.history import HistoryRow, HistoryStore
from elastream.model.metrics import interval_rows
from elastream.report.plots import rates_plot
from elastream.report.series import Interval, merge_intervals
from elastream.runner.recording import HistoryRecorder

# A saturated first operator: 2 replicas at 10 ms an event process 200 events in a 1-s interval,
# the source could ingest only that much (its queue is at the bound), 3,000 wait in Redis.
HELD = 3_000


def saturated(backlog: int | None) -> object:
    op = stats("op", replicas=2, received=200, frm={"s": 200}, processed=200, queue=100,
               service_time_s=0.01, busy_s=2.0)  # fmt: skip
    snap = snapshot(op, sources={"s": 200})
    if backlog is None:
        return snap
    return dataclasses.replace(snap, source_backlog=(("s", backlog),))


def test_snapshot_counts_the_backlog_in_lambda_g():
    snap = saturated(HELD)
    assert snap.source_events == 200  # what was ingested: intervals.csv's input
    assert snap.external_backlog == HELD
    assert snap.demand_events == 200 + HELD
    assert snap.source_demand() == {"s": 200 + HELD}


def test_psps_sees_the_backlog_as_arrivals():
    policy = POLICIES.get("psps")
    config = psps.PspsConfig()
    without, _ = policy.decide(saturated(None), policy.initial_state, config)
    held, _ = policy.decide(saturated(HELD), policy.initial_state, config)
    assert without.as_dict()["op"] == 3  # (200 + 100 queued) x 10 ms / 1 s
    assert held.as_dict()["op"] == 33  # (200 + 3,000 + 100) x 10 ms / 1 s: Eq. 2a with it


def test_rate_policies_see_the_backlog_as_source_rate():
    policy = POLICIES.get("ds2")
    config = ds2.Ds2Config()
    without, _ = policy.decide(saturated(None), policy.initial_state, config)
    held, _ = policy.decide(saturated(HELD), policy.initial_state, config)
    assert held.as_dict()["op"] > without.as_dict()["op"]
    assert held.as_dict()["op"] >= 32  # 3,200 events/s at 100 events/s per replica


def test_backlog_in_intervals_history_and_report(tmp_path):
    snap = saturated(HELD)
    (row,) = interval_rows([snap])
    assert row["input"] == 200 and row["source_backlog"] == HELD
    recorder = HistoryRecorder("run", "p", tmp_path / "h.sqlite")
    recorder(snap, Decision.of({"op": 2}))
    recorder.save()
    with HistoryStore(tmp_path / "h.sqlite") as store:
        rows = store.rows("p")
    assert [r.source_backlog for r in rows] == [HELD / 2, HELD / 2]  # per replica, as the queue
    quiet = saturated(None)
    recorder(dataclasses.replace(quiet, t=2.0), Decision.of({"op": 2}))
    recorder.save()
    with HistoryStore(tmp_path / "h.sqlite") as store:
        assert [r.source_backlog for r in store.rows("p") if r.t == 1.0] == [None, None]
    merged = merge_intervals(Interval(quiet, Decision.of({})), Interval(snap, Decision.of({})))
    assert merged.snapshot.source_backlog == (("s", HELD),)
    drawn = rates_plot([Interval(quiet, Decision.of({})), Interval(snap, Decision.of({}))])
    plain = rates_plot([Interval(quiet, Decision.of({})), Interval(quiet, Decision.of({}))])
    assert 'data-series="input + external backlog"' in drawn.drawing  # the dotted λ_G line
    assert "external backlog" not in plain.drawing


def _row(t: float) -> HistoryRow:
    return HistoryRow("run", "p", "op", 0, 1, t, 5.0, 10.0, 10.0, {"out": 10.0})


def test_history_retention_forgets_old_rows_only(tmp_path):
    path = tmp_path / "h.sqlite"
    day = 86_400.0
    with HistoryStore(path) as store:
        store.record([_row(0.0), _row(5.0)], now=1_000 * day)
        store.record([_row(10.0)], now=1_006 * day)
        assert store.forget(7 * day, now=1_008 * day) == 2  # recorded 8 days ago: gone
        assert [r.t for r in store.rows("p")] == [10.0]
        assert store.forget(7 * day, now=1_008 * day) == 0


def test_recorder_applies_retention_and_old_files_get_the_stamp_column(tmp_path):
    path = tmp_path / "h.sqlite"
    with sqlite3.connect(path) as conn:  # a history file from before the stamp existed
        conn.execute(
            "CREATE TABLE history (run_id TEXT NOT NULL, pipeline TEXT NOT NULL, operator TEXT "
            "NOT NULL, replica INTEGER NOT NULL, parallelism INTEGER NOT NULL, t REAL NOT NULL, "
            "interval_s REAL NOT NULL, source_rate REAL NOT NULL, input_rate REAL NOT NULL, "
            "output_rate REAL NOT NULL, output_rates TEXT NOT NULL, busy REAL, cpu REAL, "
            "queue_length REAL NOT NULL, backpressure INTEGER NOT NULL, service_time_var REAL, "
            "PRIMARY KEY (pipeline, run_id, operator, replica, t))"
        )
        conn.execute(
            "INSERT INTO history VALUES ('old', 'p', 'op', 0, 1, 0, 5, 1, 1, 1, '{}', NULL, "
            "NULL, 0, 0, NULL)"
        )
    with HistoryStore(path) as store:
        store.record([_row(0.0)], now=0.0)  # stamped at the epoch: long past any retention
    recorder = HistoryRecorder("new", "p", path, retention_s=3_600.0)
    recorder(saturated(None), Decision.of({"op": 2}))
    recorder.save()
    with HistoryStore(path) as store:
        runs = sorted({r.run_id for r in store.rows("p")})
    assert runs == ["new", "old"]  # the epoch-stamped row forgotten; unstamped rows kept


def test_a_files_backlog_is_counted_in_events(tmp_path):
    from types import SimpleNamespace

    from elastream.runtime.spark.files_source import unread_files

    for name in ("a.json", "b.json", "c.json", ".hidden", "_SUCCESS"):
        (tmp_path / name).write_text("{}\n")
    nothing_read = SimpleNamespace(files_seen=set(), rows_seen=0)
    assert unread_files(tmp_path, nothing_read) is None  # no file read yet: cannot tell
    one_read = SimpleNamespace(files_seen={"a.json"}, rows_seen=40)
    assert unread_files(tmp_path, one_read) == 80  # 2 files x 40 events a file read so far
    all_read = SimpleNamespace(files_seen={"a.json", "b.json", "c.json"}, rows_seen=120)
    assert unread_files(tmp_path, all_read) == 0
