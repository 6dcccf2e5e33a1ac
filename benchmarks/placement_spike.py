"""Spike: can a Spark standalone cluster run a stage's tasks on a chosen worker?

Two workers declare different custom resources (worker A: `nodeA`, worker B: `nodeB`, from a
resources file); every Python task reports the worker it ran on (its executor's working
directory lies under that worker's --work-dir). Cases (one application each):
  default-pin  executors request `nodeA` in the default profile (whole application on A)
  task-profile dynamic allocation off, mapInPandas(profile=TaskResourceProfile(nodeB))
  stage-dynamic dynamic allocation on (shuffle tracking), mapInPandas(profile=ResourceProfile
               with executor + task requests nodeB), then nodeA, in one application
  stream       as stage-dynamic, over a Python streaming data source with 3 partitions
Usage: python benchmarks/placement_spike.py CASE [WORKDIR]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elastream.runtime.spark.cluster import HOST, MASTER_CLASS, WORKER_CLASS, free_port, spark_class


def start_cluster(root: Path) -> tuple[str, list[subprocess.Popen]]:
    port = free_port()
    url = f"spark://{HOST}:{port}"
    procs = [
        _launch(
            [MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(free_port())],
            root / "master.log",
            "",
        )
    ]
    time.sleep(6)
    for name in ("A", "B"):
        work = root / f"worker{name}"
        work.mkdir()
        res = root / f"res{name}.json"
        res.write_text(
            json.dumps(
                [
                    {
                        "id": {"componentName": "spark.worker", "resourceName": f"node{name}"},
                        "addresses": ["0", "1"],
                    }
                ]
            )
        )
        opts = f"-Dspark.worker.resourcesFile={res} -Dspark.worker.resource.node{name}.amount=2"
        procs.append(
            _launch(
                [
                    WORKER_CLASS,
                    url,
                    "--host",
                    HOST,
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(work),
                ],
                root / f"worker{name}.log",
                opts,
            )
        )
    time.sleep(12)
    return url, procs


def _launch(args: list[str], log: Path, opts: str) -> subprocess.Popen:
    env = dict(
        os.environ,
        SPARK_LOCAL_IP=HOST,
        SPARK_HOME=str(spark_class().parents[1]),
        PYSPARK_PYTHON=sys.executable,
        SPARK_WORKER_OPTS=opts,
    )
    out = log.open("ab")
    return subprocess.Popen(
        ["bash", str(spark_class()), *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


def where(it):
    """mapInPandas body: one row per task with the worker dir it ran in."""
    import pandas as pd
    from pyspark import TaskContext

    ctx = TaskContext.get()
    cwd = os.getcwd()
    worker = next((p for p in cwd.split(os.sep) if p.startswith("worker")), cwd)
    for _ in it:
        pass
    yield pd.DataFrame(
        {
            "part": [ctx.partitionId()],
            "worker": [worker],
            "res": [json.dumps({k: v.addresses for k, v in ctx.resources().items()})],
        }
    )


def session(url: str, extra: dict[str, str]):
    from pyspark.sql import SparkSession

    b = SparkSession.builder.master(url).appName("spike")
    conf = {
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.ui.showConsoleProgress": "false",
        **extra,
    }
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def profile(name: str, executor: bool):
    from pyspark.resource import (
        ExecutorResourceRequests,
        ResourceProfileBuilder,
        TaskResourceRequests,
    )

    builder = ResourceProfileBuilder().require(TaskResourceRequests().cpus(1).resource(name, 1))
    if executor:
        builder = builder.require(
            ExecutorResourceRequests().cores(1).resource(name, 1, discoveryScript="")
        )
    return builder.build


def run_case(case: str, url: str) -> None:
    schema = "part int, worker string, res string"
    dyn = {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.maxExecutors": "4",
    }
    if case == "default-pin":
        spark = session(
            url,
            {"spark.executor.resource.nodeA.amount": "1", "spark.task.resource.nodeA.amount": "1"},
        )
        rows = spark.range(0, 60, 1, 4).mapInPandas(where, schema).collect()
    elif case == "task-profile":
        spark = session(url, {"spark.cores.max": "4"})
        df = spark.range(0, 60, 1, 4).mapInPandas(where, schema, profile=profile("nodeB", False))
        rows = df.collect()
    elif case == "stage-dynamic":
        spark = session(url, dyn)
        rows = []
        for node in ("nodeB", "nodeA"):
            df = spark.range(0, 60, 1, 3).mapInPandas(where, schema, profile=profile(node, True))
            rows += [(node, *r) for r in df.collect()]
    elif case in ("stream", "stream-plain"):
        spark = session(url, dyn)
        rows = stream_rows(spark, schema, case == "stream")
    else:
        raise SystemExit(f"unknown case {case!r}")
    for r in rows:
        print("ROW", tuple(r))
    spark.stop()


def stream_rows(spark, schema: str, pinned: bool) -> list:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class Reader(DataSourceStreamReader):
        def initialOffset(self):
            return {"n": 0}

        def latestOffset(self):
            return {"n": int(time.time())}

        def partitions(self, start, end):
            return [InputPartition(i) for i in range(3)]

        def read(self, partition):
            yield (partition.value,)

        def commit(self, end):
            pass

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "spike_src"

        def schema(self):
            return "v int"

        def streamReader(self, schema):
            return Reader()

    spark.dataSource.register(Source)
    seen = []
    df = spark.readStream.format("spike_src").load()
    df = df.mapInPandas(where, schema, profile=profile("nodeB", True) if pinned else None)

    def sink(batch, _id):
        seen.extend(batch.collect())

    q = df.writeStream.foreachBatch(sink).trigger(processingTime="2 seconds").start()
    deadline = time.time() + 90
    while len(seen) < 6 and time.time() < deadline:
        time.sleep(1)
    print("QUERY ACTIVE", q.isActive, "EXCEPTION", q.exception(), "PROGRESS", q.lastProgress)
    q.stop()
    return seen


def main() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    case = sys.argv[1]
    root = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="spike-"))
    url, procs = start_cluster(root)
    try:
        run_case(case, url)
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, 15)


if __name__ == "__main__":
    main()
