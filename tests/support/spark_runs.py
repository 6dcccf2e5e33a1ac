"""Running the CLI on Spark in a test: the filter3 pipeline, waiting for outcomes, conservation."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from support.paths import PIPELINES

PIPELINE = PIPELINES / "filter3.yaml"


def events_sent(trace) -> int:
    """The events a step-wise trace sends over its length: Σ rate × step, counted here (not by
    the feeder's TraceIntegral, which drives the generator); a whole number by construction of
    the tests' traces."""
    total = math.fsum(trace.rates) * trace.step_s
    assert abs(total - round(total)) < 1e-9, total
    return round(total)


def assert_conserved(audit, events_in):
    assert audit.events_in == events_in
    assert audit.pending == 0
    fates = audit.to_sink + audit.filtered + audit.timeout + audit.overflow + audit.failed
    assert fates == events_in, audit
    assert audit.roots_with_two_fates == 0
    assert audit.duplicate_sink_roots == 0


def run_cli(
    out: Path,
    *extra: str,
    pipeline: Path = PIPELINE,
    trace: str = "constant:rate=40,duration=40",
) -> subprocess.Popen:
    """`elastream run` in its own process group (a test can SIGKILL all of it at once)."""
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(pipeline), "--trace", trace]
    cmd += ["--interval-s", "3", "--out", str(out), "--quiet", "--event-timeout-s", "600", *extra]
    return subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def outcomes_so_far(db: Path, op: str = "emit") -> int:
    """Events operator `op` has handled so far, read from the run's queue store."""
    if not db.exists():
        return 0
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            row = conn.execute("SELECT SUM(n) FROM shares WHERE op = ?", (op,)).fetchone()
            return row[0] or 0
        except sqlite3.OperationalError:  # tables not created yet
            return 0


def wait_until_counted(
    run: subprocess.Popen, count: Callable[[], int], n: int, timeout_s: float = 300
) -> None:
    """Until `count()` reaches `n` while `run` goes on (Spark's start-up included)."""
    deadline = time.time() + timeout_s
    while count() < n:
        assert run.poll() is None, run.stdout.read()
        assert time.time() < deadline, f"fewer than {n} outcomes after {timeout_s:.0f} s"
        time.sleep(1)


def wait_for_outcomes(
    run: subprocess.Popen, db: Path, n: int, timeout_s: float = 300, op: str = "emit"
) -> None:
    """Until operator `op` has recorded `n` outcomes in the SQLite store `db`."""
    wait_until_counted(run, lambda: outcomes_so_far(db, op), n, timeout_s)


def descendants(pid: int, marker: str) -> list[int]:
    """Processes below `pid` whose command line contains `marker`."""
    # -ww: full command lines (ps cuts them at the terminal's width, or 80 columns without one)
    table = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True)
    children: dict[int, list[tuple[int, str]]] = {}
    for line in table.stdout.splitlines():
        child, parent, args = line.split(None, 2)
        children.setdefault(int(parent), []).append((int(child), args))
    found, todo = [], [pid]
    while todo:
        for child, args in children.get(todo.pop(), []):
            todo.append(child)
            if marker in args:
                found.append(child)
    return found


def kill_run(run: subprocess.Popen) -> None:
    """SIGKILL a run's driver, its JVM and the JVM's Python workers at once, as a machine's crash
    would: the JVM runs in a session of its own (a signal to the driver's group leaves it to the
    graceful stop), so every process below the driver is killed by its pid."""
    for pid in [run.pid, *descendants(run.pid, "")]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
