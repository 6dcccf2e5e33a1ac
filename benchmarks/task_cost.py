"""Where a Python-source micro-batch's and task's time go on this machine (docs/results.md,
"Where a hop's time goes"): a trivial Python streaming source (one row per partition) beside
Spark's JVM `rate-micro-batch` source, one query each in elastream's SparkSession, batches back
to back (trigger 0 by default). Prints per case the mean micro-batch phases (Spark's durationMs),
the CPU of the whole process tree, and with --ui each task's median launch -> read() -> end
split (from the UI's REST API and the worker's own clock). Prints figures (no asserts):

    .venv/bin/python benchmarks/task_cost.py --ui [--kinds rate,python] [--parts 1,3,6]
        [--seconds 12] [--trigger 0] [--conf K=V] [--sqlconf K=V] [--times]

`--kinds idle` runs the Python source with no new offsets (the cost of polling);
`--times` logs PySpark's per-task "Times:" lines (stderr); KEEP=1 keeps the work folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from statistics import mean, median

import pyarrow as pa
from layouts import _children
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from elastream.report.progress import add_quiet, steps
from elastream.runtime.spark.session import spark_session, stop_query, ui_conf, warm_python_workers

PHASES = (
    "triggerExecution",
    "latestOffset",
    "queryPlanning",
    "addBatch",
    "walCommit",
    "commitOffsets",
    "getBatch",
)
SCHEMA = pa.schema([("x", pa.int32())])


class Part(InputPartition):
    def __init__(self, i):
        self.i = i


class ProbeReader(DataSourceStreamReader):
    def __init__(self, parts, log, arrow):
        self.parts, self.log, self.arrow = parts, log, arrow
        self.idle = False
        self.offset = 0

    def initialOffset(self):
        return {"o": 0}

    def latestOffset(self):
        if self.idle:
            return {"o": self.offset}
        self.offset += 1
        return {"o": self.offset}

    def partitions(self, start, end):
        return [Part(i) for i in range(self.parts)]

    def read(self, partition):
        t0 = time.time()
        from pyspark import TaskContext

        tid = TaskContext.get().taskAttemptId()
        if self.arrow:
            yield pa.RecordBatch.from_arrays([pa.array([1], pa.int32())], schema=SCHEMA)
        else:
            yield (1,)
        t1 = time.time()
        if self.log:
            with open(os.path.join(self.log, f"{os.getpid()}.txt"), "a") as f:
                f.write(f"{tid} {t0:.6f} {t1:.6f} {os.getppid()}\n")


class ProbeSource(DataSource):
    @classmethod
    def name(cls):
        return "elastream_task_probe"

    def schema(self):
        return "x int"

    def streamReader(self, schema):
        o = self.options
        r = ProbeReader(int(o.get("parts", "1")), o.get("log"), o.get("arrow") == "1")
        r.idle = o.get("idle") == "1"
        return r


def _descendants(pid: int) -> list[int]:
    """`pid` and every process below it (the JVM, its Python daemons, workers and helpers)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += _children(p)
    return found


def cpu_ticks() -> int:
    """User + system clock ticks of this process and all its descendants."""
    total = 0
    for p in _descendants(os.getpid()):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended since it was listed
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def ts(s):  # "2026-11-28T00:41:02.123GMT"
    return datetime.strptime(s.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def rest(spark, path):
    url = spark.sparkContext.uiWebUrl
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/{path}") as r:
        return json.load(r)


def run(spark, kind, parts, seconds, trigger, work, opts=None, arrow=False, asyncp=True, ui=False):
    log = work / f"log-{kind}-{parts}-{time.time()}"
    log.mkdir()
    if kind in ("python", "idle"):
        reader = (
            spark.readStream.format("elastream_task_probe")
            .option("parts", parts)
            .option("arrow", "1" if arrow else "0")
        )
        reader = reader.option("idle", "1" if kind == "idle" else "0")
        if ui:
            reader = reader.option("log", str(log))
    else:
        reader = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", parts)
            .option("numPartitions", parts)
        )
    w = (
        reader.load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(work / f"cp-{time.time()}"))
    )
    if asyncp:
        w = w.option("asyncProgressTrackingEnabled", "true").option(
            "asyncProgressTrackingCheckpointIntervalMs", "1000"
        )
    for k, v in (opts or {}).items():
        w = w.option(k, v)
    w = w.trigger(processingTime=f"{trigger} seconds")
    t_start = time.time()
    q = w.start()
    time.sleep(3)
    c0 = cpu_ticks()
    time.sleep(seconds - 3)
    c1 = cpu_ticks()
    stop_query(spark, q)
    prog = [p for p in q.recentProgress if p["numInputRows"]][5:]
    res = {k: mean(p["durationMs"].get(k, 0) for p in prog) for k in PHASES} if prog else {}
    res["cpu_pct"] = 100 * (c1 - c0) / os.sysconf("SC_CLK_TCK") / (seconds - 3)
    res["n"] = len(prog)
    res["batches_per_s"] = len(prog) / seconds
    if ui:
        stages = rest(spark, "stages?status=complete&details=true")
        tasks = {}
        for st in stages:
            if ts(st["submissionTime"]) < t_start + 3:  # skip warm-up
                continue
            for t in st.get("tasks", {}).values():
                tasks[t["taskId"]] = t
        reads = {}
        for f in log.glob("*.txt"):
            for line in f.read_text().split("\n"):
                if line:
                    tid, a, b, _ = line.split()
                    reads[int(tid)] = (float(a), float(b))
        rows = []
        for tid, t in tasks.items():
            m = t["taskMetrics"]
            launch = ts(t["launchTime"])
            end = launch + t["duration"] / 1000
            row = dict(
                duration=t["duration"],
                sched=t.get("schedulerDelay", 0),
                deser=m["executorDeserializeTime"],
                run=m["executorRunTime"],
                cpu=m["executorCpuTime"] / 1e6,
                resser=m["resultSerializationTime"],
                getres=t.get("gettingResultTime", 0),
            )
            if tid in reads:
                a, b = reads[tid]
                row["to_read"] = (a - launch) * 1000
                row["read"] = (b - a) * 1000
                row["after_read"] = (end - b) * 1000
            rows.append(row)
        keys = sorted({k for r in rows for k in r})
        res["tasks"] = len(rows)
        res["worker_pids"] = len(list(log.glob("*.txt")))
        res["task"] = {k: round(median([r[k] for r in rows if k in r]), 2) for k in keys}
        # stage-level: submission->completion
        spans = [
            (ts(st["completionTime"]) - ts(st["submissionTime"])) * 1000
            for st in stages
            if "completionTime" in st and ts(st["submissionTime"]) >= t_start + 3
        ]
        res["stage_ms"] = round(median(spans), 1) if spans else None
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="1,2,4,8")
    ap.add_argument("--kinds", default="rate,python")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--trigger", type=float, default=0.0)
    ap.add_argument("--slots", type=int, default=6)
    ap.add_argument("--ui", action="store_true")
    ap.add_argument("--arrow", action="store_true")
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--conf", action="append", default=[])
    ap.add_argument("--sqlconf", action="append", default=[])
    ap.add_argument("--times", action="store_true")
    add_quiet(ap)
    a = ap.parse_args()
    conf = dict(c.split("=", 1) for c in a.conf)
    if a.ui:
        conf.update(ui_conf(True, 4077))
    spark = spark_session(f"local[{a.slots},4]", conf=conf)
    spark.dataSource.register(ProbeSource)
    warm_python_workers(spark, a.slots)
    for c in a.sqlconf:
        k, v = c.split("=", 1)
        spark.conf.set(k, v)
    if a.times:
        jvm = spark.sparkContext._jvm
        lv = jvm.org.apache.logging.log4j.Level.INFO
        for name in ("org.apache.spark.api.python", "org.apache.spark.sql.execution.python"):
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, lv)
    work = Path(tempfile.mkdtemp(prefix="elastream-task-cost-"))
    print(f"load {os.getloadavg()}", flush=True)
    try:
        cases = [(kind, int(p)) for kind in a.kinds.split(",") for p in a.parts.split(",")]
        for kind, p in steps(cases, "cases", quiet=a.quiet):
            r = run(
                spark,
                kind,
                p,
                a.seconds,
                a.trigger,
                work,
                arrow=a.arrow,
                asyncp=not a.sync,
                ui=a.ui,
            )
            print(
                kind,
                p,
                json.dumps({k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()}),
                flush=True,
            )
    finally:
        print(f"load {os.getloadavg()}", flush=True)
        spark.stop()
        if not os.environ.get("KEEP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)


if __name__ == "__main__":
    main()
