"""A long run's series files stay bounded (report/archive.py): the last `series_recent_s` at full
resolution, older rows merged into archive rows, every count kept, the size within the bound
docs/outputs.md states."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.builders import linear_pipeline, snapshot, stats

from elastream.control.policy import Decision
from elastream.model.pipeline import pipeline_from_dict
from elastream.report import load_intervals, load_timeseries, open_series
from elastream.report.archive import MAX_ROWS, SLACK, row_bound

DAY = 86_400.0
OPS = ("op1", "op2", "op3")


def feed(series, days: float, td: float, seed: int = 0) -> dict[str, float]:
    """Intervals of `td` for `days` into `series`, with varying loads and measured times as long
    as a run's (floats of full precision, a reason per operator); the totals sent."""
    rng = np.random.default_rng(seed)
    n = round(days * DAY / td)
    loads = rng.integers(0, 500, n)
    replicas = rng.integers(1, 5, n)
    et = rng.uniform(0.001, 0.01, n)
    jitter = rng.uniform(0.0, 0.05, n)  # a measured interval ends a little late
    for k in range(n):
        load, r = int(loads[k]), int(replicas[k])
        ops = [
            stats(o, replicas=r, received=load, processed=load, queue=k % 7,
                  service_time_s=float(et[k]), busy_s=load * float(et[k]))
            for o in OPS
        ]  # fmt: skip
        snap = snapshot(*ops, t=td * (k + 1) + float(jitter[k]), interval_s=td,
                        sources={"src": load}, completed=load)  # fmt: skip
        reasons = {o: f"lambda={load / td:.1f}/s queue={k % 7} r={r}" for o in OPS}
        series(snap, Decision.of({o: r for o in OPS}, reasons=reasons))
    series.close()
    return {"input": float(loads.sum()), "td": n * td, "replica_s": float((replicas * td).sum())}


def pipeline():
    return pipeline_from_dict(linear_pipeline(3))


@pytest.mark.parametrize(("days", "td", "archive_rows"), [(30, 300.0, None), (40, 300.0, 120)])
def test_a_run_of_many_days_keeps_its_series_within_the_bound(tmp_path, days, td, archive_rows):
    """30 and 40 days of 5-minute intervals: the files hold the last day (and at most a
    tenth more) a row per interval, older days as hourly archive rows (past `archive_rows`
    of them, rows of 2, 4, ... hours); nothing counted is lost."""
    series = open_series(pipeline(), tmp_path, recent_s=DAY, archive_s=3600.0)
    if archive_rows is not None:
        series.archive.max_rows = archive_rows
    sent = feed(series, days, td)
    archive = series.archive
    intervals, timeseries = load_intervals(tmp_path), load_timeseries(tmp_path)
    assert len(intervals) <= row_bound(DAY, archive.width_s, td, archive.max_rows)
    assert len(intervals) < days * DAY / td / 8  # an eighth of one row per interval at most
    assert archive.compactions > 0 and len(archive.archive) <= archive.max_rows
    if archive_rows is not None:
        assert archive.width_s > 3600.0  # the archive rows merged in pairs
    # every interval in exactly one row: the counts and the time add up
    assert intervals["input"].sum() == sent["input"]
    assert intervals["interval_s"].sum() == pytest.approx(sent["td"])
    mean_replicas = (intervals["replicas_total"] * intervals["interval_s"]).sum() / sent["td"]
    assert mean_replicas == pytest.approx(3 * sent["replica_s"] / sent["td"])
    for op in OPS:
        rows = timeseries[timeseries["operator"] == op]
        assert len(rows) == len(intervals)
        assert rows["received"].sum() == sent["input"]
        assert list(rows["t"]) == list(intervals["t"])
    assert intervals["t"].is_monotonic_increasing
    # the last day at full resolution, a row per interval
    end = intervals["t"].iloc[-1]
    recent = intervals[intervals["t"] > end - DAY]
    assert (recent["interval_s"] == td).all() and len(recent) >= DAY / td
    older = intervals[intervals["t"] <= end - (1 + SLACK) * DAY - archive.width_s]
    # the first: from t = 0
    assert (older["interval_s"].iloc[1:] >= 3600.0).all() and len(older) > 1


def test_two_days_at_td_5_s_stay_within_the_stated_size(tmp_path):
    """docs/outputs.md: with the defaults and three operators at td = 5 s, both files together
    stay under 10 MB however long the run: at most 1.1 days and an hour of rows an interval,
    and 2,000 archive rows (sizes measured on two days' files)."""
    series = open_series(pipeline(), tmp_path, recent_s=DAY, archive_s=3600.0)
    feed(series, 2, 5.0)
    archive = series.archive
    assert archive.compactions > 0
    files = [tmp_path / name for name in ("intervals.csv", "timeseries.csv")]
    total = sum(path.stat().st_size for path in files)
    archive_bytes = sum(len(",".join(map(str, row.values()))) + 2 for row in archive_rows(archive))
    full = len(load_intervals(tmp_path)) - len(archive.archive)
    per_interval = (total - archive_bytes) / full
    per_block = archive_bytes / len(archive.archive)
    worst = per_interval * ((1 + SLACK) * DAY + 3600.0) / 5.0 + per_block * MAX_ROWS
    assert worst < 10e6, (worst, per_interval, per_block)


def archive_rows(archive):
    return [row for interval, rows in archive.archive for row in (interval, *rows)]


def test_without_recent_s_every_interval_keeps_its_row(tmp_path):
    series = open_series(pipeline(), tmp_path)
    feed(series, 0.5, 60.0)
    assert len(load_intervals(tmp_path)) == 720


def test_the_files_are_complete_at_any_time_of_the_run(tmp_path):
    """Read while the run goes (after a compaction): every interval so far in one row."""
    series = open_series(pipeline(), tmp_path, recent_s=3600.0, archive_s=600.0)
    for k in range(1000):
        snap = snapshot(*(stats(o, received=1) for o in OPS), t=10.0 * (k + 1), interval_s=10.0,
                        sources={"src": 1})  # fmt: skip
        series(snap, Decision.of({o: 1 for o in OPS}))
        if k in (600, 999):
            series.files[0].flush()
            series.files[1].flush()
            rows = pd.read_csv(tmp_path / "intervals.csv")
            assert rows["input"].sum() == k + 1 and rows["interval_s"].sum() == 10.0 * (k + 1)
    assert series.archive.compactions >= 2
    series.close()
