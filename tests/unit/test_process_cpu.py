"""The run's own CPU: real process trees sampled through psutil, and the recorder's rows of it."""

from __future__ import annotations

import subprocess
import sys
import time

from elastream.history import HistoryStore
from elastream.runner.process_cpu import tree_cpu_seconds
from elastream.runner.recording import HistoryRecorder

BURN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_a_tree_counts_a_grandchild_and_not_a_stranger(tmp_path):
    """A child that starts a busy grandchild: the tree of the child holds the grandchild's CPU;
    a busy process outside the tree (started by this test, not below the child) is not counted;
    a pid that does not exist gives None."""
    grandchild = BURN.format(s=0.5) + "time.sleep(30)\n"
    parent = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
        "time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", parent])
    stranger = subprocess.Popen([sys.executable, "-c", BURN.format(s=5.0)])
    try:
        deadline = time.monotonic() + 60
        while (tree_cpu_seconds(child.pid) or 0) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        seconds = tree_cpu_seconds(child.pid)
        assert seconds is not None and seconds >= 0.5  # the grandchild's burn
        assert seconds < 0.5 + 1.5  # and not the stranger's 5 s (it burns meanwhile)
    finally:
        for p in (child, stranger):
            p.kill()
            p.wait()
    assert tree_cpu_seconds(2**22 + 17) is None  # above Linux's pid_max: no such process


def test_a_busy_child_is_counted_while_it_runs_and_after_it_is_reaped():
    before = tree_cpu_seconds()
    assert before is not None
    child = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.6) + "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 60
        while (tree_cpu_seconds() or 0) - before < 0.6 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (tree_cpu_seconds() or 0) - before >= 0.6  # the living child's time
    finally:
        child.kill()
        child.wait()
    assert (tree_cpu_seconds() or 0) - before >= 0.6  # reaped: now in this process's cutime


def test_the_recorder_writes_the_runs_cpu_from_the_second_interval(tmp_path):
    from support.builders import snapshot, stats

    recorder = HistoryRecorder("run", "p", tmp_path / "h.db", process_cpu=True)
    o = stats("op", replicas=1, received=10, processed=10)
    for t in (2.0, 4.0, 6.0):
        end = time.process_time() + 0.05
        while time.process_time() < end:
            pass
        recorder(snapshot(o, t=t, td=2.0), None)
    recorder.save()
    with HistoryStore(tmp_path / "h.db") as store:
        rows = store.run_cpu()
    assert [(r.t, r.interval_s) for r in rows] == [(2.0, 2.0), (4.0, 2.0)]
    assert all(r.cores > 0 for r in rows)
    off = HistoryRecorder("run", "p", process_cpu=False)
    off(snapshot(o, t=2.0, td=2.0), None)
    off(snapshot(o, t=4.0, td=2.0), None)
    assert off.cpu_rows == []


def test_the_runs_own_cpu_is_recorded_only_where_all_its_processes_are_below_the_driver():
    from elastream.config.run import SparkSettings

    assert SparkSettings().local and SparkSettings(master="local[4,4]").local
    cluster = SparkSettings(master="spark://host:7077")
    assert cluster.standalone and not cluster.local
    assert not SparkSettings(master="yarn").local and not SparkSettings().standalone
