"""The run's own CPU: a process tree read from /proc (a made-up one, and this machine's), and
the recorder's rows of it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elastream.experiments.history import HistoryRecorder
from elastream.experiments.process_cpu import tree_cpu_seconds
from elastream.history import HistoryStore

TICK = os.sysconf("SC_CLK_TCK")


def fake_proc(root: Path, table: dict[int, tuple[int, str, tuple[int, int, int, int]]]) -> Path:
    """A /proc with one stat file per pid: (ppid, command name, utime stime cutime cstime)."""
    for pid, (ppid, name, times) in table.items():
        (root / str(pid)).mkdir(parents=True)
        fields = ["S", str(ppid), *["0"] * 9, *map(str, times), "0"]
        (root / str(pid) / "stat").write_text(f"{pid} ({name}) {' '.join(fields)}\n")
    (root / "self").mkdir()  # not a pid: skipped
    return root


def test_a_tree_sums_its_descendants_and_their_reaped_children(tmp_path):
    proc = fake_proc(
        tmp_path,
        {
            10: (1, "python3", (100, 20, 5, 5)),  # the run: 130 ticks with its reaped children
            11: (10, "java) (weird name", (300, 30, 0, 0)),  # a name with ") (" in it
            12: (11, "python3 -m daemon", (40, 10, 60, 0)),
            20: (1, "other", (999, 0, 0, 0)),  # not below the run
        },
    )
    assert tree_cpu_seconds(10, proc) == pytest.approx((130 + 330 + 110) / TICK)
    assert tree_cpu_seconds(11, proc) == pytest.approx(440 / TICK)
    assert tree_cpu_seconds(99, proc) is None  # no such process


def test_a_busy_child_is_counted_while_it_runs_and_after_it_is_reaped():
    before = tree_cpu_seconds()
    assert before is not None
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"
    child = subprocess.Popen([sys.executable, "-c", burn + "time.sleep(30)"])
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
    from helpers import snapshot, stats

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
