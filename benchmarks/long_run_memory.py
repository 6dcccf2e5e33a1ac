"""Memory over a long Spark run: the 3-operator pass-through pipeline at a steady rate for 30
minutes on the embedded store, sampling the driver's RSS (this process), the Spark JVM's RSS and
its live heap (after a full GC forced by `jcmd GC.run`, read by `jstat -gc`), the Python
workers' RSS, and the queue store's size and rows; then the growth after the first retention
window (`spark.retention_s`), when the store should stop growing.

Prints figures (no asserts). Usage:
    .venv/bin/python benchmarks/long_run_memory.py [--rate 500] [--minutes 30]
        [--retention 600] [--every 30] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from throughput import passthrough_pipeline

from elastream.config import make_config
from elastream.report.progress import add_quiet, clock
from elastream.runner.engines import run_engine
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads.generators import constant

TABLES = ("segments", "appends", "shares")
MB = 1024 * 1024


@dataclass(frozen=True)
class Sample:
    """One sample: seconds since the start, RSS in MB, store bytes in MB, rows per table."""

    t: float
    driver_mb: float
    jvm_mb: float
    heap_mb: float
    workers_mb: float
    store_mb: float
    rows: tuple[int, ...]


def rss_mb(pid: int) -> float:
    """Resident set size of process `pid` in MB (0 if it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def descendants(pid: int) -> list[int]:
    """Every process below `pid`."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:  # the process ended since it was listed (Python workers come and go)
        return found
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except FileNotFoundError:  # the thread ended while we looked
            continue
        for child in map(int, children):
            found += [child, *descendants(child)]
    return found


def live_heap_mb(pid: int) -> float:
    """The JVM's heap in use right after a full GC (its live objects), in MB."""
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=True, timeout=60)
    out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, check=True)
    names, values = (line.split() for line in out.stdout.strip().splitlines()[:2])
    gc = dict(zip(names, map(float, values), strict=True))
    return sum(gc[k] for k in ("S0U", "S1U", "EU", "OU")) / 1024


def jvm_and_workers(pid: int) -> tuple[float, float, float]:
    """RSS and live heap of the Spark JVM (java below this process), and the RSS of every
    Python process below it."""
    jvm = heap = workers = 0.0
    for child in descendants(pid):
        try:
            exe = os.readlink(f"/proc/{child}/exe")
        except OSError:  # gone since it was listed
            continue
        if exe.endswith("java"):
            jvm += rss_mb(child)
            heap += live_heap_mb(child)
        elif "python" in exe:
            workers += rss_mb(child)
    return jvm, heap, workers


def store_figures(db: Path) -> tuple[float, tuple[int, ...]]:
    """The store's bytes on disk (file + WAL) and its rows per table in TABLES."""
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    if not db.exists():
        return size / MB, tuple(0 for _ in TABLES)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = tuple(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES)
    return size / MB, rows


def sampler(db: Path, every_s: float, samples: list[Sample], stop: threading.Event) -> None:
    """Sample until `stop` is set, printing each sample."""
    t0, me = time.time(), os.getpid()
    header = f"{'t min':>6} {'driver':>7} {'JVM':>7} {'heap':>6} {'workers':>8} {'store MB':>9}"
    print(f"{header}  rows {TABLES}")
    while not stop.wait(every_s):
        jvm, heap, workers = jvm_and_workers(me)
        size, rows = store_figures(db)
        s = Sample(time.time() - t0, rss_mb(me), jvm, heap, workers, size, rows)
        samples.append(s)
        print(
            f"{s.t / 60:6.1f} {s.driver_mb:7.0f} {s.jvm_mb:7.0f} {s.heap_mb:6.0f} "
            f"{s.workers_mb:8.0f} {s.store_mb:9.1f}  {s.rows}",
            flush=True,
        )


def at(samples: list[Sample], t: float) -> Sample:
    """The first sample at or after `t` seconds (the last one if none)."""
    return next((s for s in samples if s.t >= t), samples[-1])


def report(samples: list[Sample], retention_s: float) -> None:
    """Growth from the end of the first retention window (plus a minute, counted from the first
    events in the store) to the end of the run."""
    start = next((s.t for s in samples if any(s.rows)), 0.0)
    first, last = at(samples, start + retention_s + 60), samples[-1]
    minutes = (last.t - first.t) / 60
    print(f"\ngrowth from {first.t / 60:.1f} to {last.t / 60:.1f} min ({minutes:.1f} min):")
    for name in ("driver_mb", "jvm_mb", "heap_mb", "workers_mb", "store_mb"):
        a, b = getattr(first, name), getattr(last, name)
        change = f"{b - a:+.1f} MB, {100 * (b - a) / a:+.1f} %"
        print(f"  {name:<11} {a:8.1f} -> {b:8.1f} MB  ({change})")
    for table, a, b in zip(TABLES, first.rows, last.rows, strict=True):
        print(f"  rows {table:<8} {a:8d} -> {b:8d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500.0, help="events/s")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--retention", type=float, default=600.0, help="spark.retention_s")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--out", type=Path, default=None)
    add_quiet(parser)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="long-run-"))
    config = make_config(
        policy="static",
        replicas=2,
        interval_s=5.0,
        out=out,
        drain_s=30,
        event_timeout_s=30.0,
        queue_capacity=None,
        spark={"retention_s": args.retention},
    )
    trace = constant(rate=args.rate, duration=args.minutes * 60)
    engine = SparkEngine(passthrough_pipeline(2), config, trace)
    samples: list[Sample] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=sampler, args=(out / "queues.db", args.every, samples, stop), daemon=True
    )
    print(f"{args.rate:.0f} ev/s for {args.minutes:.0f} min, retention {args.retention:.0f} s")
    thread.start()
    with clock(args.minutes * 60, "long run", quiet=args.quiet):
        result = run_engine(engine, config)
    stop.set()
    thread.join()
    s = result.summary
    print(
        f"\nevents in {s.events_in:,}, processed ratio {s.processed_ratio:.4f}, "
        f"mean latency {s.latency_ms_mean:.0f} ms, p99 {s.latency_ms_p99:.0f} ms"
    )
    report(samples, args.retention)


if __name__ == "__main__":
    main()
