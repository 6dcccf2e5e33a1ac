"""Ingest speed of a `files` source next to the generator feeder: events per second appended to a
first operator's queue (SQLite store, no consumer), the files source through Spark's file stream
and its foreachBatch append (Spark's start-up excluded), the feeder through its generate-and-append
path. Prints figures (no asserts). Usage:
    .venv/bin/python benchmarks/io_speed.py [--events N] [--files F]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import open_store
from elastream.runtime.spark.feeder import SourceStream
from elastream.runtime.spark.ingest import Admission, DeadLetters, FilesBatch, files_frame
from elastream.runtime.spark.session import spark_session


def pipeline(folder: Path, kind: str):
    source = (
        {"name": "s", "kind": "files", "path": str(folder), "format": "json",
         "schema": "user STRING, n LONG, text STRING", "key": "user",
         "options": {"maxFilesPerTrigger": "8"}}
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


def write_files(folder: Path, events: int, files: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    per = events // files
    for f in range(files):
        rows = (
            json.dumps({"user": f"u{i % 1000}", "n": i, "text": "lorem ipsum dolor"})
            for i in range(f * per, (f + 1) * per)
        )
        (folder / f"part-{f:04d}.json").write_text("\n".join(rows) + "\n")


def files_rate(work: Path, events: int, files: int) -> float:
    folder = work / "in"
    write_files(folder, events, files)
    spec = pipeline(folder, "files")
    store = open_store(str(work / "files.db"))
    store.create_queue("op", None)
    spark = spark_session("local[2]")
    admission = Admission(store.address, "s", ("op",), 10**9, threading.Event())
    handler = FilesBatch(spec.sources[0], admission, DeadLetters(work / "dead"), str(folder))
    frame = files_frame(spark, spec.sources[0], store)
    query = (
        frame.writeStream.foreachBatch(handler)
        .option("checkpointLocation", str(work / "ckpt"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    while store.latest("op") == 0:
        time.sleep(0.01)
    started, first = time.perf_counter(), store.latest("op")
    while store.latest("op") < events:
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    query.stop()
    return (events - first) / elapsed


def feeder_rate(work: Path, events: int, tick: int = 5_000) -> float:
    spec = pipeline(work, "generator")
    store = open_store(str(work / "gen.db"))
    store.create_queue("op", None)
    stream = SourceStream(spec.sources[0], spec, store, seed=0)
    started = time.perf_counter()
    for due in range(tick, events + 1, tick):
        stream.feed_until(due)
    return events / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--files", type=int, default=80)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gen = feeder_rate(work, args.events)
        files = files_rate(work, args.events, args.files)
    print(f"generator feeder  {gen:>10,.0f} events/s")
    print(f"files source      {files:>10,.0f} events/s (target >= 50,000)")


if __name__ == "__main__":
    main()
