"""Start (or reuse) the local SparkSession the runtime needs, quietly, with our data source."""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from elastream.runtime.spark.pipeline_source import PipelineDataSource
from elastream.runtime.spark.source import QueueDataSource

_registered: set[int] = set()
RAW_LOCAL_FS = "org.apache.hadoop.fs.local.RawLocalFs"


def spark_session(
    master: str, app_name: str = "elastream", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A session with FAIR scheduling (one pool per query), Python worker reuse and the
    `elastream_queue` and `elastream_pipeline` sources registered; `conf` is applied last (it
    may override ours). An existing active session is reused as it is."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.getLogger("py4j").setLevel(logging.ERROR)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", _python())
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.scheduler.mode", "FAIR")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.metricsEnabled", "false")
        .config("spark.sql.streaming.numRecentProgressUpdates", "2000")
        .config("spark.driver.memory", "2g")
        # checkpoint files without Hadoop's .crc side files: each micro-batch's offset and
        # commit files cost fewer file operations (measured: commit log 0.19 -> 0.11 s per
        # batch); the checkpoint manager's atomic rename still guards against torn files
        .config("spark.hadoop.fs.AbstractFileSystem.file.impl", RAW_LOCAL_FS)
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return adopt_session(builder.getOrCreate())


def adopt_session(spark: SparkSession) -> SparkSession:
    """A running session made ready for the runtime: quiet logs, the `elastream_queue` source
    registered (once). Its static settings stay as they are: FAIR scheduling and Python worker
    reuse make replica changes cheap, so a caller's session should have them (docs/python.md)."""
    spark.sparkContext.setLogLevel("ERROR")
    if id(spark) not in _registered:
        spark.dataSource.register(QueueDataSource)
        spark.dataSource.register(PipelineDataSource)
        _registered.add(id(spark))
    return spark


def stop_query(spark: SparkSession, query: StreamingQuery) -> None:
    """Stop `query` and make sure the session forgets it. With asynchronous progress tracking
    Spark 4.3 can fail its own clean-up: it commits the Python source once more after the
    source's helper process is gone (`ClosedChannelException` in `commitAllSources`), which skips
    the query's deregistration, and the stopped query then blocks any query started from the
    same checkpoint (`CONCURRENT_QUERY`) or under the same name. We deregister it as that
    clean-up would have (docs/runtime.md, "Asynchronous progress tracking")."""
    query.stop()
    if spark.streams.get(query.id) is not None:
        execution = query._jsq.streamingQuery()  # the StreamExecution, as Spark registers it
        spark._jsparkSession.streams().notifyQueryTermination(execution)


def warm_python_workers(spark: SparkSession, n: int, hold_s: float = 1.0) -> int:
    """Start `n` Python workers of the kind the data source's `read` runs in, each with the
    runtime imported, before any event arrives: the replica pool is pre-allocated (PSPS), so a
    replica activated later starts at once instead of forking a worker mid-spike (measured here:
    1-3 s per new worker on 2 cores). `n` concurrent tasks hold a worker each for `hold_s`.
    Returns how many distinct workers answered."""
    rows = (
        spark.range(n, numPartitions=n)
        .mapInArrow(partial(_hold_worker, hold_s), "pid LONG")
        .collect()
    )
    return len({row.pid for row in rows})


def _hold_worker(hold_s: float, batches: Iterator[Any]) -> Iterator[Any]:
    """Runs in a Python worker: import what `read` needs, keep the worker busy, say who it is."""
    import pyarrow as pa

    import elastream.runtime.spark.task  # noqa: F401

    for _ in batches:
        pass
    time.sleep(hold_s)
    yield pa.RecordBatch.from_pydict({"pid": [os.getpid()]})


def _python() -> str:
    import sys

    return sys.executable
