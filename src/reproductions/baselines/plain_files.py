"""Plain PySpark on a file backlog: JSON lines -> 3 mapInArrow steps -> Parquet, until SIGTERM.

The baseline of benchmarks/plain_vs_elastream.py, run in a process of its own:
    python -m reproductions.baselines.plain_files --input DIR --out DIR --checkpoint DIR \
        [--step batches|rows] [--max-files N] [--steps 3] [--java-options OPTIONS]
It imports nothing of elastream. SIGTERM (or SIGINT) lets the micro-batch under way finish (its
files committed to the sink's `_spark_metadata` log), then stops the query and the session and
exits 0; a query that fails exits 1 with Spark's error.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

SCHEMA = "user STRING, n LONG, text STRING"
Step = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def pass_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The vectorized pass-through: every Arrow batch forwarded as it is."""
    yield from batches


def row_step(row: dict[str, Any]) -> dict[str, Any]:
    """The per-row Python step: one call per row, a new dict out."""
    return dict(row)


def pass_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The per-row pass-through: each batch turned into Python dicts, `row_step` called on
    every row, and the dicts turned back into an Arrow batch."""
    for batch in batches:
        rows = [row_step(row) for row in batch.to_pylist()]
        yield pa.RecordBatch.from_pylist(rows, schema=batch.schema)


STEPS: dict[str, Step] = {"batches": pass_batches, "rows": pass_rows}


def session(java_options: str = "") -> Any:
    """`local[*]`, the UI off, quiet logs; workers run this interpreter; the driver JVM started
    with `java_options` (the benchmark gives both sides the same class cache)."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[*]")
        .appName("plain-files")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", java_options)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def start_query(spark: Any, args: argparse.Namespace) -> Any:
    """readStream.json -> `args.steps` x mapInArrow(step) -> writeStream.parquet."""
    reader = spark.readStream.schema(SCHEMA)
    if args.max_files is not None:
        reader = reader.option("maxFilesPerTrigger", args.max_files)
    frame = reader.json(args.input)
    step = STEPS[args.step]
    for _ in range(args.steps):
        frame = frame.mapInArrow(step, frame.schema)
    return (
        frame.writeStream.format("parquet")
        .option("path", args.out)
        .option("checkpointLocation", args.checkpoint)
        .start()
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="folder of JSON-lines files")
    parser.add_argument("--out", required=True, help="folder of the Parquet output")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint folder")
    parser.add_argument("--step", choices=sorted(STEPS), default="batches")
    parser.add_argument("--steps", type=int, default=3, help="mapInArrow steps in a row")
    parser.add_argument(
        "--max-files", type=int, default=None, help="maxFilesPerTrigger (default: Spark's, unset)"
    )
    parser.add_argument("--java-options", default="", help="the driver JVM's extra options")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    spark = session(args.java_options)
    query = start_query(spark, args)
    while query.isActive and not stop.wait(0.2):
        pass
    while query.isActive and query.status["isTriggerActive"]:
        time.sleep(0.05)  # the batch under way commits its files to the sink's log first
    error = query.exception()
    query.stop()
    spark.stop()
    if error is not None:
        print(f"plain query failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
