"""Baseline for the overhead benchmark: a plain Structured Streaming query (file source,
mapInPandas, noop sink) that applies a pipeline's operator functions to the same events in memory,
with no queues, no admission control and no exactly-once bookkeeping."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from elastream.model.events import Event
from elastream.model.pipeline import DEFAULT_STREAM, Pipeline, load_callable
from elastream.runtime.spark.session import spark_session

INPUT_SCHEMA = "id string, key string, ts double, payload string"


def run_in_memory(pipeline: Pipeline, events: list[Event], out_dir: str) -> int:
    """Push one batch through the DAG in topological order; returns the events reaching sinks."""
    inbox: dict[str, list[Event]] = {name: [] for name in pipeline.operator_names}
    for src in pipeline.source_names:
        for target in pipeline.successors(src):
            if target in inbox:
                inbox[target].extend(events)
    reached = 0
    for name in pipeline.topological_order:
        spec = pipeline.operator(name)
        if spec.vectorized:
            raise ValueError(
                f"operator {name!r} is vectorized: the plain-Spark baseline applies per-event "
                f"functions only"
            )
        params = {
            k: v.replace("{out}", out_dir) if isinstance(v, str) else v
            for k, v in spec.params.items()
        }
        emits = list(load_callable(spec.function)(inbox[name], **params)) if inbox[name] else []
        routes = pipeline.routes(name)
        for k, emit in enumerate(emits):
            child = Event(
                f"{emit.parent.id}.{name}{k}",
                emit.parent.key,
                emit.parent.ts,
                emit.payload,
                emit.parent.root,
            )
            for target in routes[emit.stream or DEFAULT_STREAM]:
                if target in inbox:
                    inbox[target].append(child)
                else:
                    reached += 1
    return reached


def write_input(pipeline: Pipeline, n: int, folder: Path, per_file: int) -> None:
    """The first source's generator, n events, as JSON-lines files of `per_file` events."""
    folder.mkdir(parents=True, exist_ok=True)
    src = pipeline.sources[0]
    generate = load_callable(src.import_path or "")
    rng = random.Random(0)
    for first in range(0, n, per_file):
        lines = []
        for i in range(first, min(n, first + per_file)):
            key, payload = generate(i, rng)
            lines.append(
                json.dumps(
                    {
                        "id": f"{src.name}-{i}",
                        "key": str(key),
                        "ts": time.time(),
                        "payload": json.dumps(payload),
                    }
                )
            )
        (folder / f"part-{first:09d}.json").write_text("\n".join(lines) + "\n")


def run_plain_query(pipeline: Pipeline, n: int, out: Path, per_batch: int) -> float:
    """Wall seconds for a plain streaming query to process n events written as files of
    `per_batch` events, one file per micro-batch."""
    write_input(pipeline, n, out / "input", per_batch)
    spark = spark_session(f"local[{pipeline.overprovisioned_replicas}]")
    replicas = max(1, pipeline.operators[0].replicas.max)
    pipeline_json = pipeline.model_dump_json(by_alias=True)
    out_dir = str(out)

    def process(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        local = Pipeline.model_validate_json(pipeline_json)
        for frame in frames:
            events = [
                Event(r.id, r.key, r.ts, json.loads(r.payload))
                for r in frame.itertuples(index=False)
            ]
            yield pd.DataFrame({"reached": [run_in_memory(local, events, out_dir)]})

    started = time.time()
    query = (
        spark.readStream.schema(INPUT_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(str(out / "input"))
        .repartition(replicas)
        .mapInPandas(process, "reached long")
        .writeStream.format("noop")
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return time.time() - started
