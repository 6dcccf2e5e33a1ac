"""Spark's own micro-batch floor here: trivial Python streaming sources, 1 and 3 queries at once.

What a hop of elastream cannot go below on this machine: each query reads a Python data source
whose reader yields one row per partition (2 partitions, as 2 replicas) and does nothing else,
in elastream's SparkSession (FAIR pools, warmed Python workers), with asynchronous progress
tracking and the default trigger (`spark.trigger_s`), as the operator queries run. Compare its
micro-batch with the `one micro-batch that read events` line of `benchmarks/throughput.py`.

    python benchmarks/spark_floor.py [--seconds 45]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from statistics import mean

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from elastream.config.run import SparkSettings
from elastream.report.progress import add_quiet, steps
from elastream.runtime.spark.session import spark_session, stop_query, warm_python_workers

PHASES = ("triggerExecution", "addBatch", "latestOffset", "queryPlanning", "walCommit")


class OneRowReader(DataSourceStreamReader):
    """One new offset per batch, one row per partition: the least a Python source can do."""

    def __init__(self) -> None:
        self.offset = 0

    def initialOffset(self) -> dict:
        return {"o": 0}

    def latestOffset(self) -> dict:
        self.offset += 1
        return {"o": self.offset}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [InputPartition(0), InputPartition(1)]

    def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
        yield (1,)


class OneRowSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "elastream_floor"

    def schema(self) -> str:
        return "x int"

    def streamReader(self, schema):  # type: ignore[no-untyped-def]
        return OneRowReader()


def batch_phases(n_queries: int, seconds: float, work: Path) -> dict[str, float]:
    """Mean seconds per phase of the micro-batches of `n_queries` concurrent queries."""
    spark = spark_session(f"local[{2 * n_queries}, 4]")
    spark.dataSource.register(OneRowSource)
    warm_python_workers(spark, 2 * n_queries)
    queries = []
    for i in range(n_queries):
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", f"floor-{i}")
        writer = (
            spark.readStream.format("elastream_floor")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", str(work / f"q{n_queries}-{i}"))
            .option("asyncProgressTrackingEnabled", "true")
            .option("asyncProgressTrackingCheckpointIntervalMs", "1000")
            .trigger(processingTime=f"{SparkSettings().trigger_s} seconds")
        )
        queries.append(writer.start())
    time.sleep(seconds)
    rows = [p["durationMs"] for q in queries for p in q.recentProgress[5:] if p["numInputRows"]]
    for query in queries:
        stop_query(spark, query)
    spark.stop()
    return {k: mean(r.get(k, 0) for r in rows) / 1000 for k in PHASES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=45.0, help="how long each case runs")
    add_quiet(parser)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="elastream-floor-"))
    try:
        for n in steps((1, 3), "queries at once", quiet=args.quiet):
            phases = batch_phases(n, args.seconds, work)
            shown = ", ".join(f"{k} {v:.3f}" for k, v in phases.items())
            print(f"{n} trivial Python-source quer{'y' if n == 1 else 'ies'} at once: {shown} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
