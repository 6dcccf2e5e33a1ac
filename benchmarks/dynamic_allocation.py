"""Spark's own dynamic allocation against elastream's executor leasing, on one standalone cluster
and one files stream whose rate swings (issue 41, item 5): cores held, latency, rows out.

The same schedule of JSON-lines files (one a second, `--low` ↔ `--high` rows a second, each
level held `--period-s`/2) lands in a folder twice: first for plain Structured Streaming
(`readStream.json` → `repartition` over the most task slots → `mapInArrow` of `--service-ms` per
row, as an external call costs → Parquet) with `spark.dynamicAllocation.enabled` and shuffle
tracking between the same minimum and maximum executors, then for `elastream run` (files source
→ one operator of the same cost → Parquet) with `spark.leasing` of executors of the same size.
Cores held are read from the standalone master's status page every second (the cores its
workers have given to executors), from the first file to the last row out; each row's latency
is from its file's landing to the moment its Parquet part is readable; rows are matched by id
(exactly once: none missing, none twice). Usage:

    .venv/bin/python benchmarks/dynamic_allocation.py [--minutes 20] [--low 15] [--high 150]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import numpy as np
import pyarrow.parquet as pq
import yaml

from elastream.control.hosting import ReleaseRule
from elastream.report.progress import add_quiet, steps

BIN = Path(sys.executable).parent
EXECUTOR_CORES = 2
SCHEMA = "id LONG, landed DOUBLE, user STRING"
PLAIN = """
import sys, time
from pyspark.sql import SparkSession
master, source, out, service_s, low, high, idle = sys.argv[1:8]
spark = (SparkSession.builder.master(master).appName("plain-dynamic-allocation")
         .config("spark.ui.enabled", "false")
         .config("spark.executor.cores", "{cores}")
         .config("spark.dynamicAllocation.enabled", "true")
         .config("spark.dynamicAllocation.shuffleTracking.enabled", "true")
         .config("spark.dynamicAllocation.minExecutors", low)
         .config("spark.dynamicAllocation.maxExecutors", high)
         .config("spark.dynamicAllocation.executorIdleTimeout", idle + "s")
         .getOrCreate())
def work(batches):
    for batch in batches:
        time.sleep(batch.num_rows * float(service_s))  # an external call per row
        yield batch
(spark.readStream.schema("{schema}").json(source)
 .repartition({slots})  # the batch's rows over every slot the executors may have
 .mapInArrow(work, "{schema}")
 .writeStream.format("parquet").option("path", out)
 .option("checkpointLocation", out + "-checkpoint")
 .trigger(processingTime="2 seconds").start())
print("STARTED", flush=True)
spark.streams.awaitAnyTermination()
"""


@dataclass(eq=False)
class Feeder(threading.Thread):
    """Writes one JSON-lines file a second into `folder` (hidden while written, then renamed),
    `low` rows a second then `high`, each level held half a period, for `seconds`."""

    folder: Path
    seconds: float
    low: int
    high: int
    period_s: float
    written: int = 0
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        super().__init__(daemon=True)

    def rate(self, t: float) -> int:
        return self.low if (t % self.period_s) < self.period_s / 2 else self.high

    def run(self) -> None:
        start = time.time()
        for k in range(int(self.seconds)):
            time.sleep(max(0.0, start + k - time.time()))
            n, now = self.rate(k), time.time()
            lines = [json.dumps({"id": self.written + i, "landed": now, "user": f"u{i % 50}"})
                     for i in range(n)]  # fmt: skip
            hidden = self.folder / f".f{k:06d}.json"
            hidden.write_text("\n".join(lines) + "\n")
            hidden.rename(self.folder / f"f{k:06d}.json")
            self.written += n
        self.done.set()


class Outputs:
    """The rows of the readable Parquet parts under a folder: ids and latencies (first seen −
    landed); a part being written is read again at the next look."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seen: set[Path] = set()
        self.ids: list[np.ndarray] = []
        self.latency: list[np.ndarray] = []
        self.rows = 0

    def look(self) -> None:
        now = time.time()
        for path in self.folder.rglob("part-*.parquet") if self.folder.exists() else ():
            if path in self.seen or path.stat().st_size == 0:
                continue
            try:
                table = pq.read_table(path, columns=["id", "landed"])
            except (OSError, ValueError):  # no footer yet
                continue
            self.seen.add(path)
            self.ids.append(table["id"].to_numpy())
            self.latency.append(now - table["landed"].to_numpy())
            self.rows += table.num_rows

    def verdict(self, written: int) -> str:
        ids = np.concatenate(self.ids) if self.ids else np.array([], dtype=np.int64)
        distinct = np.unique(ids)
        missing = written - int(np.isin(np.arange(written), distinct).sum())
        twice = len(ids) - len(distinct)
        return "complete, once" if missing == twice == 0 else f"{missing} missing, {twice} twice"

    def percentile(self, q: float) -> float:
        return float(np.percentile(np.concatenate(self.latency), q)) if self.latency else np.nan


class CoresHeld(threading.Thread):
    """Every second: the cores the standalone master's workers have given to executors."""

    def __init__(self, webui_url: str) -> None:
        super().__init__(daemon=True)
        self.url = f"{webui_url}/json/"
        self.samples: list[tuple[float, float]] = []
        self.misses = 0  # seconds the page did not answer: the count before holds for them
        self.stopped = threading.Event()

    def run(self) -> None:
        held = 0.0
        while not self.stopped.wait(1.0):
            try:
                with urllib.request.urlopen(self.url, timeout=5) as response:
                    held = float(json.load(response)["coresused"])
            except (OSError, ValueError):
                self.misses += 1
            self.samples.append((time.time(), held))

    def seconds(self, start: float, end: float) -> float:
        """Core-seconds held between `start` and `end` (each sample holds for 1 s)."""
        return float(sum(n for t, n in self.samples if start <= t <= end))

    def peak(self) -> float:
        return max((n for _, n in self.samples), default=0.0)


def elastream_command(args: argparse.Namespace, master: str, source: Path, out: Path) -> list[str]:
    pipeline = {
        "name": "swing",
        "sources": [{"name": "files", "kind": "files", "path": str(source), "format": "json",
                     "schema": SCHEMA}],
        "operators": [{"name": "work", "function": "elastream.examples.synthetic:passthrough",
                       "service_time_ms": args.service_ms,
                       "replicas": {"min": 1, "max": args.max_executors * EXECUTOR_CORES}}],
        "sinks": [{"name": "out", "kind": "files", "path": str(out), "format": "parquet",
                   "schema": SCHEMA}],
        "streams": [{"from": "files", "to": "work"}, {"from": "work", "to": "out"}],
    }  # fmt: skip
    leasing = {"slots": EXECUTOR_CORES, "btu_s": args.btu_s, "min_hosts": args.min_executors,
               "max_hosts": args.max_executors}  # fmt: skip
    if args.release_rule:
        leasing["release_rule"] = args.release_rule
    folder = out.parent
    (folder / "pipeline.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    settings = {"spark": {"master": master, "leasing": leasing}}
    (folder / "settings.yaml").write_text(yaml.safe_dump(settings))
    return [str(BIN / "elastream"), "run", str(folder / "pipeline.yaml"), "--config",
            str(folder / "settings.yaml"), "--until-stopped", "--quiet", "--no-metrics",
            "--out", str(folder / "run")]  # fmt: skip


def plain_command(args: argparse.Namespace, master: str, source: Path, out: Path) -> list[str]:
    slots = args.max_executors * EXECUTOR_CORES
    script = PLAIN.replace("{cores}", str(EXECUTOR_CORES)).replace("{schema}", SCHEMA)
    script = script.replace("{slots}", str(slots))
    return [sys.executable, "-c", script, master, str(source), str(out),
            str(args.service_ms / 1000), str(args.min_executors), str(args.max_executors),
            str(args.idle_s)]  # fmt: skip


def run_case(name: str, command: list[str], folder: Path, args, webui: str) -> dict:
    """Start the job, feed the schedule once it runs, wait for every row, stop the job."""
    source, out = folder / "input", folder / "out"
    source.mkdir(parents=True)
    log = (folder / "log.txt").open("w")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}  # the executors' Python: this one
    job = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
    )
    held = CoresHeld(webui)
    held.start()
    time.sleep(args.warmup_s)  # the job's start; executors held meanwhile are counted apart
    outputs = Outputs(out)
    feeder = Feeder(source, args.minutes * 60, args.low, args.high, args.period_s)
    fed_at = time.time()
    feeder.start()
    deadline = fed_at + args.minutes * 60 + args.drain_s
    while time.time() < deadline and (not feeder.done.is_set() or outputs.rows < feeder.written):
        if job.poll() is not None:
            raise SystemExit(f"{name} exited {job.returncode}: see {folder / 'log.txt'}")
        time.sleep(0.5)
        outputs.look()
    last_out = time.time()
    os.killpg(job.pid, signal.SIGTERM)
    try:
        job.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    held.stopped.set()
    return {
        "core-seconds, first file → last row out": held.seconds(fed_at, last_out),
        "core-seconds, the job's start before it": held.seconds(0.0, fed_at),
        "cores at the most": held.peak(),
        "status page misses, s": held.misses,
        "rows written": feeder.written,
        "rows out": outputs.rows,
        "latency p50, s": outputs.percentile(50),
        "latency p99, s": outputs.percentile(99),
        "last row out after the last file, s": last_out - fed_at - args.minutes * 60,
        "output": outputs.verdict(feeder.written),
    }


def cluster(args: argparse.Namespace, *verb: str) -> subprocess.CompletedProcess:
    state = ("--state", str(args.dir / "cluster.json"))
    return subprocess.run([str(BIN / "elastream"), "cluster", *verb, *state],
                          capture_output=True, text=True, check=False)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="input length per case")
    parser.add_argument("--low", type=int, default=15, help="rows a second at the low level")
    parser.add_argument("--high", type=int, default=150, help="rows a second at the high level")
    parser.add_argument("--period-s", type=float, default=300.0, help="one low + high cycle, s")
    parser.add_argument("--service-ms", type=float, default=20.0, help="cost of a row, ms")
    parser.add_argument("--min-executors", type=int, default=1)
    parser.add_argument("--max-executors", type=int, default=4)
    parser.add_argument("--idle-s", type=int, default=60, help="Spark's executorIdleTimeout")
    parser.add_argument("--btu-s", type=float, default=60.0, help="elastream's lease unit, s")
    parser.add_argument("--release-rule", choices=get_args(ReleaseRule),
                        help="elastream's release rule (default: the product's)")  # fmt: skip
    parser.add_argument("--warmup-s", type=float, default=45.0, help="job start before input")
    parser.add_argument("--drain-s", type=float, default=300.0, help="most wait after input")
    parser.add_argument("--dir", type=Path, default=Path("runs/dynamic-allocation"))
    add_quiet(parser)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=False)
    workers = (args.max_executors + 1) // 2
    up = cluster(args, "up", "--workers", str(workers), "--cores", str(2 * EXECUTOR_CORES),
                 "--memory", "3g", "--no-authenticate")  # fmt: skip
    if up.returncode != 0:
        raise SystemExit(f"cluster up failed: {up.stderr}")
    state = json.loads((args.dir / "cluster.json").read_text())
    master, webui = state["master_url"], state["webui_url"]
    commands = {"plain, dynamic allocation": plain_command, "elastream, leasing": elastream_command}
    results = {}
    try:
        for k, (name, make) in enumerate(steps(commands.items(), "cases", quiet=args.quiet)):
            folder = args.dir / f"case{k}"
            folder.mkdir()
            command = make(args, master, folder / "input", folder / "out")
            results[name] = run_case(name, command, folder, args, webui)
    finally:
        cluster(args, "down")
    report(args, results)


def report(args: argparse.Namespace, results: dict[str, dict]) -> None:
    names = list(results)
    print(f"{args.minutes:g} min of input per case: {args.low} ↔ {args.high} rows/s, each level "
          f"held {args.period_s / 2:g} s; {args.service_ms:g} ms a row; executors of "
          f"{EXECUTOR_CORES} cores, {args.min_executors}–{args.max_executors}; release rule "
          f"{args.release_rule or 'default'}; load "
          f"{os.getloadavg()[0]:.2f} at the end")  # fmt: skip
    print(f"| | {' | '.join(names)} |\n|---|{'---:|' * len(names)}")
    for key in results[names[0]]:
        cells = [fmt(results[n][key]) for n in names]
        print(f"| {key} | {' | '.join(cells)} |")
    plain, ours = (results[n] for n in names)
    key = "core-seconds, first file → last row out"
    print(
        f"core-seconds, elastream ÷ dynamic allocation: {ours[key] / plain[key]:.2f} "
        "(issue 41: ≤ 0.7 at a p99 no worse)"
    )
    print(
        f"p99, elastream − dynamic allocation: "
        f"{ours['latency p99, s'] - plain['latency p99, s']:+.1f} s"
    )


def fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


if __name__ == "__main__":
    main()
