"""Speed of the real sources and sinks next to the generator, side by side in one Spark session:

1. ingest: events per second appended to a first operator's queue (SQLite store, no consumer):
   the generator feeder's generate-and-append path, and a `files` source (Spark's file stream and
   its foreachBatch append, Spark's start-up excluded) over the same events written as JSON lines,
   CSV and Parquet;
2. pass-through: 3 vectorized pass-through operators at 2 replicas, N events from a `files`
   source (Parquet) to a `files` sink (Parquet) next to N events from the generator to a `queue`
   sink: events per second from the first ingested event to the last one delivered.

Prints figures and the load average before and after (no asserts). Usage (starts Spark: under
the shared lock):
    flock /work/spark.lock .venv/bin/python benchmarks/io_speed.py \
        [--events N] [--files F] [--max-files M] [--formats json,csv,parquet] [--pass-events P]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from elastream.config import make_config
from elastream.model.pipeline import Pipeline, pipeline_from_dict
from elastream.report.progress import ProgressBar, add_quiet
from elastream.runtime.queues import open_store
from elastream.runtime.spark.admission import Admission
from elastream.runtime.spark.feeder import SourceStream
from elastream.runtime.spark.files_source import DeadLetters, FilesBatch, files_frame
from elastream.runtime.spark.runtime import SparkEngine
from elastream.runtime.spark.session import spark_session
from elastream.workloads.generators import constant

SCHEMA = "user STRING, n LONG, text STRING"
OPERATORS = ("first", "second", "third")


def ingest_pipeline(folder: Path, kind: str, fmt: str = "json", max_files: int = 8) -> Pipeline:
    source = (
        {"name": "s", "kind": "files", "path": str(folder), "format": fmt, "schema": SCHEMA,
         "key": "user", "options": {"maxFilesPerTrigger": str(max_files)}
         | ({"header": "true"} if fmt == "csv" else {})}
        if kind == "files"
        else {"name": "s", "generator": "elastream.examples.synthetic:generate"}
    )  # fmt: skip
    return pipeline_from_dict(
        {
            "sources": [source],
            "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "out"}],
            "streams": [{"from": "s", "to": "op"}, {"from": "op", "to": "out"}],
        }
    )


def write_files(folder: Path, events: int, files: int, fmt: str) -> None:
    """`events` rows in `files` files of format `fmt` (json lines, csv with a header, parquet)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    per = events // files
    for f in range(files):
        numbers = range(f * per, (f + 1) * per)
        rows = {
            "user": [f"u{i % 1000}" for i in numbers],
            "n": list(numbers),
            "text": ["lorem ipsum dolor"] * per,
        }
        target = folder / f"part-{f:04d}.{fmt}"
        if fmt == "json":
            lines = (json.dumps({k: rows[k][i] for k in rows}) for i in range(per))
            target.write_text("\n".join(lines) + "\n")
        elif fmt == "csv":
            pacsv.write_csv(pa.table(rows), target)
        else:
            pq.write_table(pa.table(rows), target)


def files_rate(work: Path, spark: Any, events: int, files: int, fmt: str, max_files: int) -> float:
    """The files source's append rate over `events` events, from its first append on."""
    folder = work / f"in-{fmt}"
    write_files(folder, events, files, fmt)
    spec = ingest_pipeline(folder, "files", fmt, max_files)
    store = open_store(str(work / f"files-{fmt}.db"))
    store.create_queue("op", None)
    admission = Admission(store.address, spec, "s", ("op",), 10**9, threading.Event())
    handler = FilesBatch(spec.sources[0], admission, DeadLetters(work / "dead"), str(folder))
    frame = files_frame(spark, spec.sources[0], store)
    query = (
        frame.writeStream.foreachBatch(handler)
        .option("checkpointLocation", str(work / f"ckpt-{fmt}"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    while store.latest("op") == 0:
        time.sleep(0.01)
    started, first = time.perf_counter(), store.latest("op")
    while store.latest("op") < events:
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    query.stop()
    return (events - first) / elapsed


def feeder_rate(work: Path, events: int, tick: int = 5_000) -> float:
    spec = ingest_pipeline(work, "generator")
    store = open_store(str(work / "gen.db"))
    store.create_queue("op", None)
    stream = SourceStream(spec.sources[0], spec, store, seed=0)
    started = time.perf_counter()
    for due in range(tick, events + 1, tick):
        stream.feed_until(due)
    return events / (time.perf_counter() - started)


def passthrough_pipeline(source: dict, sink: dict) -> Pipeline:
    """source -> first -> second -> third -> sink, vectorized pass-throughs at 2 replicas."""
    chain = ["s", *OPERATORS, "out"]
    return pipeline_from_dict(
        {
            "name": "passthrough3",
            "sources": [{"name": "s", **source}],
            "operators": [
                {
                    "name": name,
                    "function": "elastream.examples.synthetic:passthrough_columns",
                    "vectorized": True,
                    "et_ms": 0.01,  # a first admission cap that does not throttle the start
                    "replicas": {"min": 2, "max": 2},
                }
                for name in OPERATORS
            ],
            "sinks": [{"name": "out", **sink}],
            "streams": [{"from": a, "to": b} for a, b in pairwise(chain)],
        }
    )


def passthrough_rate(pipeline: Pipeline, events: int, out: Path, rate: float) -> float:
    """Events per second through the pipeline: `events` events from the first one ingested to
    the last one delivered (a files sink: written out), the generator offering `rate`/s."""
    config = make_config(policy="static", replicas=2, interval_s=1.0, out=out, drain_s=120)
    duration = max(2.0, events / rate)
    trace = constant(rate=rate, duration=duration)
    engine = SparkEngine(pipeline, config, trace, keep_session=True)
    engine.start()
    try:
        store = engine.store
        while store.latest("first") == 0:
            time.sleep(0.01)
        started = time.perf_counter()
        while store.latest("out") < events or (engine.egress and engine.egress.lag(store) > 0):
            if time.perf_counter() - started > 600:
                raise RuntimeError(f"{store.latest('out')} of {events} events after 600 s")
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
    finally:
        engine.request_stop()
        while not engine.finished():
            engine.collect()
        engine.stop()
    return events / elapsed


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--files", type=int, default=80)
    parser.add_argument("--max-files", type=int, default=8)
    parser.add_argument("--formats", default="json,csv,parquet")
    parser.add_argument("--pass-events", type=int, default=200_000)
    add_quiet(parser)
    args = parser.parse_args()
    print(f"load average before: {load()}", flush=True)
    rates: dict[str, float] = {}
    formats = args.formats.split(",")
    bar = ProgressBar(3 + len(formats), "io speed", quiet=args.quiet)
    with tempfile.TemporaryDirectory() as tmp, bar:
        work = Path(tmp)
        bar.update(0, "generator feeder")
        rates["generator feeder"] = feeder_rate(work, args.events)
        # the pass-through first: its engine starts the session as a run does (local[n] sized
        # to the replicas); the files source's ingest runs reuse it
        n = args.pass_events
        folder = work / "pass-in"
        write_files(folder, n, 40, "parquet")
        files_source = {"kind": "files", "path": str(folder), "format": "parquet",
                        "schema": SCHEMA, "key": "user",
                        "options": {"maxFilesPerTrigger": str(args.max_files)}}  # fmt: skip
        parquet_sink = {"kind": "files", "path": str(work / "pass-out"), "format": "parquet",
                        "schema": SCHEMA}  # fmt: skip
        generator = {"generator": "elastream.examples.synthetic:generate"}
        pairs = {
            "3 ops, generator -> queue": ("generator", generator, {}),
            "3 ops, files -> files": ("files", files_source, parquet_sink),
        }
        for name, (slug, source, sink) in pairs.items():
            bar.advance(1, name)
            pipeline = passthrough_pipeline(source, sink)
            rate = passthrough_rate(pipeline, n, work / f"pass-{slug}", 10**5)
            rates[name] = rate
            print(f"{name} {rate:,.0f} events/s", flush=True)
        spark = spark_session("local[2]")
        for fmt in formats:
            bar.advance(1, f"files source ({fmt})")
            rate = files_rate(work, spark, args.events, args.files, fmt, args.max_files)
            rates[f"files source ({fmt})"] = rate
            print(f"files source ({fmt}) {rate:,.0f} events/s", flush=True)
        bar.advance(1, "done")
    print(f"load average after: {load()}")
    for name, rate in rates.items():
        target = " (target >= 50,000)" if name.startswith("files source") else ""
        print(f"{name:28s} {rate:>10,.0f} events/s{target}")


if __name__ == "__main__":
    main()
