"""CPU seconds of a process and all its descendants, read from Linux's /proc (the run's own
processes: the driver, Spark's JVM and its Python workers in local mode)."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid_dir: Path) -> list[str] | None:
    """Fields 3… of /proc/PID/stat (after the command name, which may hold spaces); None when
    the process has exited since /proc was listed."""
    try:
        text = (pid_dir / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None  # it exited between the listing and the read: it is no longer ours to count
    return text.rsplit(")", 1)[1].split()


def tree_cpu_seconds(root: int | None = None, proc: Path = PROC) -> float | None:
    """User + system CPU seconds of `root` (default: this process) and its living descendants,
    each with the children it has reaped (a worker that exited is counted in its parent once
    reaped). None where there is no /proc (not Linux)."""
    root = root or os.getpid()
    if not (proc / str(root)).is_dir():
        return None
    children: dict[int, list[int]] = defaultdict(list)
    ticks: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is None:
            continue
        pid = int(entry.name)
        children[int(fields[1])].append(pid)  # field 4: ppid
        ticks[pid] = sum(int(x) for x in fields[11:15])  # fields 14–17: utime stime cutime cstime
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total / os.sysconf("SC_CLK_TCK")
