"""An unbounded run stopped by SIGTERM after some minutes, then resumed: does it exit 0 with its
outputs written and every ingested event accounted for (delivered, or still queued and counted in
the summary), and does `--resume` deliver the rest, nothing twice?

`elastream run` of a 3-operator filter pipeline (40 events/s, the middle operator 40 ms per event,
pools of 1-4) with neither --duration nor --trace, on the embedded store; SIGTERM to the driver
after `--minutes`; the queue store's audit against summary.json; then `--resume --duration 5`
until drained. Prints figures (no asserts), with the load average. Usage:
    .venv/bin/python benchmarks/unbounded_stop.py [--minutes 3] [--drain-s 0] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elastream.report.progress import add_quiet, clock
from elastream.runtime.queues import SqliteQueueStore

PIPELINE = Path(__file__).parent / "pipelines" / "filter3.yaml"
OUTPUTS = ("summary.json", "timeseries.csv", "intervals.csv", "report.html")


def run(pipeline: Path, out: Path, *extra: str) -> subprocess.Popen:
    """`elastream run` in its own process group (the signal goes to the driver only)."""
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(pipeline), "--interval-s", "3"]
    cmd += ["--out", str(out), "--quiet", *extra]
    return subprocess.Popen(
        cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


def stopped_run(pipeline: Path, out: Path, minutes: float, drain: float) -> dict:
    """The unbounded run, SIGTERMed after `minutes` of flow; its figures."""
    began, load_before = time.time(), load()
    first = run(pipeline, out, "--drain-s", str(drain))
    db = out / "queues.db"
    while not (db.exists() and SqliteQueueStore(db).audit().to_sink > 0):
        if first.poll() is not None:
            raise SystemExit(f"the run ended by itself:\n{first.stdout.read()}")
        time.sleep(1)
    flowing = time.time()
    time.sleep(minutes * 60)
    load_at_stop = load()
    still_running = first.poll() is None
    first.send_signal(signal.SIGTERM)
    signalled = time.time()
    output, _ = first.communicate(timeout=600)
    exited = time.time()
    audit = SqliteQueueStore(db).audit()
    summary = json.loads((out / "summary.json").read_text())
    delivered = audit.to_sink + audit.filtered + audit.failed
    return {
        "start_s": round(flowing - began, 1),
        "flow_s": round(signalled - flowing, 1),
        "still_running_at_stop": still_running,
        "exit": first.returncode,
        "sigterm_to_exit_s": round(exited - signalled, 1),
        "events_in": audit.events_in,
        "delivered": delivered,
        "queued": audit.pending,
        "dropped": audit.timeout + audit.overflow,
        "conserved": audit.events_in == delivered + audit.pending + audit.timeout + audit.overflow,
        "summary_matches_audit": (
            summary["events_in"] == audit.events_in
            and summary["events_queued"] == audit.pending
            and summary["events_out"] + summary["events_filtered"] == audit.to_sink + audit.filtered
        ),
        "outputs_written": all((out / name).is_file() for name in OUTPUTS),
        "sigterm_logged": "SIGTERM received" in output,
        "load_before": load_before,
        "load_at_stop": load_at_stop,
    }


def resumed_run(pipeline: Path, out: Path, before: dict) -> dict:
    """`--resume --duration 5`: the queued events delivered, nothing twice."""
    began = time.time()
    again = run(pipeline, out, "--resume", "--duration", "5", "--drain-s", "300")
    output, _ = again.communicate(timeout=900)
    store = SqliteQueueStore(out / "queues.db")
    audit = store.audit()
    sink_ids = store.sink_roots("out")
    return {
        "exit": again.returncode,
        "wall_s": round(time.time() - began, 1),
        "events_in": audit.events_in,
        "new_events": audit.events_in - before["events_in"],
        "queued": audit.pending,
        "delivered": audit.to_sink + audit.filtered + audit.failed,
        "delivered_by_resume": audit.to_sink + audit.filtered + audit.failed - before["delivered"],
        "sink_ids": len(sink_ids),
        "sink_ids_distinct": len(set(sink_ids)),
        "two_fates": audit.roots_with_two_fates,
        "duplicates": audit.duplicate_sink_roots,
        "summary_queued": json.loads((out / "summary.json").read_text())["events_queued"],
        "load": load(),
        "tail": output.strip().splitlines()[-1:] if again.returncode else [],
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0, help="flow before the SIGTERM")
    parser.add_argument("--drain-s", type=float, default=0.0, help="--drain-s of the stopped run")
    parser.add_argument("--out", type=Path, default=None, help="output directory (a temp one)")
    add_quiet(parser)
    args = parser.parse_args(argv)
    root = args.out or Path(tempfile.mkdtemp(prefix="elastream-unbounded-"))
    root.mkdir(parents=True, exist_ok=True)
    pipeline = root / "filter3.yaml"
    pipeline.write_text(PIPELINE.read_text())
    out = root / "run"
    with clock(args.minutes * 60, "run until SIGTERM", quiet=args.quiet):
        first = stopped_run(pipeline, out, args.minutes, args.drain_s)
    print("stopped run:", json.dumps(first, indent=2))
    second = resumed_run(pipeline, out, first)
    print("resumed run:", json.dumps(second, indent=2))
    sizes = {name: round(size_mb(out / name), 2) for name in (*OUTPUTS, "queues.db", "spark.log")}
    sizes["checkpoints"] = round(size_mb(out / "checkpoints"), 2)
    print("sizes (MB):", json.dumps(sizes))
    logs = checkpoint_logs(out / "checkpoints")
    print("checkpoint log files (offsets, commits) per query:", json.dumps(logs))
    return {"stopped": first, "resumed": second, "sizes_mb": sizes, "checkpoint_logs": logs}


def checkpoint_logs(folder: Path) -> dict[str, list[int]]:
    """How many batch files each query's offset and commit logs hold (Spark keeps the last
    `spark.sql.streaming.minBatchesToRetain`, 100 by default)."""
    return {
        query.name: [len(list((query / log).glob("[0-9]*"))) for log in ("offsets", "commits")]
        for query in sorted(folder.iterdir())
        if query.is_dir()
    }


if __name__ == "__main__":
    main()
