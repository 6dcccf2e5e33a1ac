"""A run's series files as the run goes: a killed run keeps the rows written so far, and a
resumed run appends its rows after them (across a compaction of the archive too)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.builders import linear_pipeline, snapshot, stats

from elastream.control.policy import Decision
from elastream.model.pipeline import pipeline_from_dict
from elastream.report import load_intervals, load_timeseries, open_series
from elastream.report.stream import FLUSH_S

DAY = 86_400.0


def feed(series, first: int, n: int, td: float) -> None:
    """Intervals first+1 .. first+n of `td` seconds, interval k with k events and k % 3 + 1
    replicas per operator."""
    for k in range(first + 1, first + n + 1):
        ops = [stats(o, replicas=k % 3 + 1, received=k, processed=k) for o in ("op1", "op2")]
        snap = snapshot(*ops, t=k * td, interval_s=td, sources={"src": k}, completed=k)
        series(snap, Decision.of({"op1": k % 3 + 1, "op2": k % 3 + 1}))


def test_a_killed_run_keeps_the_rows_written_so_far(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal, time
        from support.builders import linear_pipeline, snapshot, stats
        from elastream.control.policy import Decision
        from elastream.model.pipeline import pipeline_from_dict
        from elastream.report import open_series
        series = open_series(pipeline_from_dict(linear_pipeline(2)), {str(tmp_path)!r})
        for k in range(1, 4):  # intervals longer than the flush period, as a run's are
            time.sleep({FLUSH_S + 0.2})
            ops = [stats(o, replicas=1, received=k, processed=k) for o in ("op1", "op2")]
            snap = snapshot(*ops, t=5.0 * k, interval_s=5.0, sources={{"src": k}}, completed=k)
            series(snap, Decision.of({{"op1": 1, "op2": 1}}))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    tests = Path(__file__).resolve().parents[1]  # support/ is there
    paths = [str(tests), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=60, check=False)
    assert done.returncode == -9  # killed, nothing closed
    intervals, timeseries = load_intervals(tmp_path), load_timeseries(tmp_path)
    assert list(intervals["t"]) == [5.0, 10.0, 15.0]
    assert list(intervals["input"]) == [1, 2, 3]
    assert len(timeseries) == 2 * 3


@pytest.mark.parametrize("recent_s", [None, DAY])
def test_a_resumed_run_appends_its_rows_after_the_killed_runs(tmp_path, recent_s):
    """A first part of 2 days of 10-minute intervals, then a resumed part of 3 more days:
    every interval of both parts in exactly one row; with `recent_s` the resumed part
    compacts its old rows into archive rows and the first part's rows stay as they were."""
    pipeline = pipeline_from_dict(linear_pipeline(2))
    td, first, then = 600.0, 2 * 144, 3 * 144
    with open_series(pipeline, tmp_path, recent_s=recent_s) as series:
        feed(series, 0, first, td)
    before = load_intervals(tmp_path)
    with open_series(pipeline, tmp_path, recent_s=recent_s, append=True) as series:
        feed(series, first, then, td)
        compactions = 0 if series.archive is None else series.archive.compactions
    intervals, timeseries = load_intervals(tmp_path), load_timeseries(tmp_path)
    n = first + then
    assert intervals["input"].sum() == n * (n + 1) // 2  # interval k offered k events
    assert intervals["interval_s"].sum() == pytest.approx(n * td)
    assert intervals["t"].is_monotonic_increasing and intervals["t"].iloc[-1] == n * td
    assert intervals.iloc[: len(before)].equals(before)  # the first part's rows, as written
    for op in ("op1", "op2"):
        assert timeseries[timeseries["operator"] == op]["received"].sum() == n * (n + 1) // 2
    if recent_s is not None:
        assert compactions > 0 and len(intervals) < n
    else:
        assert len(intervals) == n
