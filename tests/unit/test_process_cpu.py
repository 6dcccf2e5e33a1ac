"""The run's own CPU: real process trees sampled through psutil, and the recorder's rows of it."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from elastream.history import HistoryStore
from elastream.runner.process_cpu import tree_cpu_seconds
from elastream.runner.recording import HistoryRecorder

BURN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_a_tree_counts_a_grandchild_and_not_a_stranger(tmp_path):
    """A child that starts a busy grandchild: the tree of the child holds the grandchild's CPU;
    a busy process outside the tree (started by this test, not below the child) is not counted,
    read once the stranger has burned more than the whole tree could (psutil's own reading of
    each process is the yardstick); a pid that does not exist gives None."""
    grandchild = BURN.format(s=0.5) + "time.sleep(30)\n"
    parent = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
        "time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", parent])
    stranger = subprocess.Popen([sys.executable, "-c", BURN.format(s=30.0)])
    try:
        tree = wait_for_cpu([child.pid], 0.5)  # the child and, once it exists, its grandchild
        assert len(tree) == 2, tree
        mine = settled(tree)  # the two processes' own times, one by one, the burn over
        wait_for_cpu([stranger.pid], mine + 1.0)  # the stranger has burned more than them
        seconds = tree_cpu_seconds(child.pid)
        assert seconds is not None and seconds >= 0.5  # the grandchild's burn
        assert abs(seconds - mine) < 0.1, (seconds, mine, cpu_seconds(stranger.pid))
    finally:
        for p in (child, stranger):
            p.kill()
            p.wait()
    assert tree_cpu_seconds(2**22 + 17) is None  # above Linux's pid_max: no such process


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the one process `pid` (psutil, its children not counted)."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def settled(pids: list[int]) -> float:
    """The CPU seconds of `pids` once they no longer grow (two readings 0.3 s apart agree)."""
    before = -1.0
    while True:
        now = sum(cpu_seconds(p) for p in pids)
        if now - before < 0.01:
            return now
        before = now
        time.sleep(0.3)


def wait_for_cpu(pids: list[int], seconds: float, timeout_s: float = 120) -> list[int]:
    """Until `pids` and their descendants have burned `seconds` of CPU between them (a loaded
    machine gives a busy process less than a core); returns those processes' pids."""
    deadline = time.monotonic() + timeout_s
    while True:
        tree = [*pids, *(c.pid for p in pids for c in psutil.Process(p).children(recursive=True))]
        if sum(cpu_seconds(p) for p in tree) >= seconds:
            return tree
        assert time.monotonic() < deadline, f"{tree} burned less than {seconds} s in {timeout_s} s"
        time.sleep(0.1)


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
        recorder(snapshot(o, t=t, interval_s=2.0), None)
    recorder.save()
    with HistoryStore(tmp_path / "h.db") as store:
        rows = store.run_cpu()
    assert [(r.t, r.interval_s) for r in rows] == [(2.0, 2.0), (4.0, 2.0)]
    assert all(r.cores > 0 for r in rows)
    off = HistoryRecorder("run", "p", process_cpu=False)
    off(snapshot(o, t=2.0, interval_s=2.0), None)
    off(snapshot(o, t=4.0, interval_s=2.0), None)
    assert off.cpu_rows == []


def test_the_runs_own_cpu_is_recorded_only_where_all_its_processes_are_below_the_driver():
    from elastream.config.run import SparkSettings

    assert SparkSettings().local and SparkSettings(master="local[4,4]").local
    cluster = SparkSettings(master="spark://host:7077")
    assert cluster.standalone and not cluster.local
    assert not SparkSettings(master="yarn").local and not SparkSettings().standalone
