"""CPU seconds of a process and all its descendants through psutil (the run's own processes: the
driver, Spark's JVM and its Python workers in local mode), on any platform psutil supports."""

from __future__ import annotations

import os

import psutil


def _own_seconds(process: psutil.Process) -> float | None:
    """User + system CPU seconds of `process` and the children it has reaped; None when it has
    exited since it was listed (it is no longer ours to count)."""
    try:
        t = process.cpu_times()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    return t.user + t.system + t.children_user + t.children_system


def tree_cpu_seconds(root: int | None = None) -> float | None:
    """User + system CPU seconds of `root` (default: this process) and its living descendants,
    each with the children it has reaped (a worker that exited is counted in its parent once
    reaped). None when `root` does not exist."""
    try:
        top = psutil.Process(root or os.getpid())
        descendants = top.children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    own = _own_seconds(top)
    if own is None:
        return None
    return own + sum(s for p in descendants if (s := _own_seconds(p)) is not None)
