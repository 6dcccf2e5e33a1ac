"""The ingest path without Spark: appends wait for room instead of dropping (the queue stays
within its bound), a replayed micro-batch appends at its recorded position and adds nothing, rows
become events with the declared key, and the start-up checks fail in one line."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import open_store, read_sink
from elastream.runtime.spark.admission import (
    Admission,
    SourceError,
    Stopped,
    batch_start,
    source_batch,
)
from elastream.runtime.spark.egress import check_sinks
from elastream.runtime.spark.files_source import CORRUPT, FILE_COL, DeadLetters, FilesBatch
from elastream.runtime.spark.ingest import check_sources
from elastream.runtime.spark.sink_columns import SinkError

PIPELINE = pipeline_from_dict(
    {
        "sources": [{"name": "s", "kind": "spark", "function": "x:y", "key": "u"}],
        "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
        "sinks": [{"name": "out"}],
        "streams": [{"from": "s", "to": "op"}, {"from": "op", "to": "out"}],
    }
)


def _rows(first: int, n: int) -> pa.Table:
    return pa.table({"u": [i % 3 for i in range(first, first + n)]})


def test_a_full_queue_holds_the_source_back_and_a_replay_adds_nothing(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "q.db"))
    store.create_queue("op", 1000)  # q_size 1000: the runtime's bound is min(q_size, ingest)
    stop = threading.Event()
    admission = Admission(store.address, PIPELINE, "s", ("op",), 1000, stop)
    first = batch_start("s", 0, admission)
    admission.append_table(first, _rows(0, 600))
    first = batch_start("s", 1, admission)
    assert first == 600
    stop.set()  # the run stops while batch 1 waits for room: it stays uncommitted
    with pytest.raises(Stopped):
        admission.append_table(first, _rows(600, 600))
    assert store.pending("op") == 1000  # filled to the bound, not beyond, nothing refused
    assert store.overflow_count("op", 0, 2e9) == 0
    assert batch_start("s", 1, admission) == 600  # the replay appends where it did
    events = [e for e in store.read_events("op", 0, 1000)]
    assert [e.root for e in events] == [PIPELINE.source_roots("s", i) for i in range(1000)]
    assert events[4].key == "1" and events[4].payload == {"u": 1}


def test_the_start_up_checks_name_the_source_or_sink(tmp_path: Path) -> None:
    spec = {
        "sources": [
            {"name": "trips", "kind": "files", "path": str(tmp_path / "no"), "format": "csv"}
        ],
        "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
        "sinks": [{"name": "out", "kind": "files", "path": "/proc/elastream-out"}],
        "streams": [{"from": "trips", "to": "op"}, {"from": "op", "to": "out"}],
    }
    pipeline = pipeline_from_dict(spec)
    with pytest.raises(SourceError, match=r"^source 'trips': .*/no does not exist \(declare"):
        check_sources(pipeline)
    spec["sources"][0]["schema"] = "a STRING"  # files will arrive: the run creates the directory
    assert check_sources(pipeline_from_dict(spec)) == [tmp_path / "no"]
    assert not (tmp_path / "no").exists()  # the checks create nothing
    with pytest.raises(SinkError, match=r"^sink 'out': cannot create /proc/elastream-out"):
        check_sinks(pipeline, resume=False)


def test_read_sink_returns_a_queue_sinks_events(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "queues.db"))
    store.create_queue("out", None, sink=True)
    store.append("out", source_batch(PIPELINE, PIPELINE.sources[0], 0, _rows(0, 3)), "s", 0)
    store.close()
    assert [(e.id, e.payload) for e in read_sink(tmp_path, "out")] == [
        (0, {"u": 0}),
        (1, {"u": 1}),
        (2, {"u": 2}),
    ]


class _Batch:
    """A stand-in for a foreachBatch DataFrame (the Spark test runs the real one)."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def toArrow(self):
        import pyarrow as pa

        return pa.Table.from_pylist(self.rows)


def test_a_files_batch_numbers_rows_per_file_and_sends_bad_rows_to_the_dead_letters(
    tmp_path: Path,
) -> None:
    pipeline = pipeline_from_dict(
        {
            "sources": [
                {"name": "t", "kind": "files", "path": "/in", "format": "json", "key": "b"}
            ],
            "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "out"}],
            "streams": [{"from": "t", "to": "op"}, {"from": "op", "to": "out"}],
        }
    )
    spec = pipeline.sources[0]
    store = open_store(str(tmp_path / "q.db"))
    store.create_queue("op", None)
    admission = Admission(store.address, pipeline, "t", ("op",), 1000, threading.Event())
    handler = FilesBatch(spec, admission, DeadLetters(tmp_path / "dead"), "/in")
    rows = [
        {"a": "x", "b": 1, CORRUPT: None, FILE_COL: "file:///in/one.json"},
        {"a": None, "b": None, CORRUPT: "{bad", FILE_COL: "file:///in/one.json"},
        {"a": "y", "b": 2, CORRUPT: None, FILE_COL: "file:///in/one.json"},
        {"a": "z", "b": 3, CORRUPT: None, FILE_COL: "file:///in/two.json"},
    ]
    handler(_Batch(rows), 0)
    handler(_Batch(rows), 0)  # Spark replays the batch: nothing twice
    events = [e for e in store.read_events("op", 0, store.latest("op"))]
    assert [e.root for e in events] == [pipeline.source_roots("t", i) for i in range(3)]
    assert [e.key for e in events] == ["1", "2", "3"] and events[0].payload == {"a": "x", "b": 1}
    dead = [json.loads(line) for line in (tmp_path / "dead" / "batch-00000000.jsonl").open()]
    assert (
        dead == [{"file": "one.json", "row": 1, "reason": dead[0]["reason"], "record": "{bad"}]
        and "malformed json" in dead[0]["reason"]
    )


class FakeQuery:
    """A stand-in for a StreamingQuery that stopped with `error` after batch `last` (the real
    restart is on Spark: tests/spark/test_spark_io.py, a redis outage)."""

    def __init__(self, error: Exception | None, last: int) -> None:
        self.error, self.lastProgress, self.id = error, {"batchId": last}, object()

    def exception(self) -> Exception | None:
        return self.error

    def stop(self) -> None:
        pass


class FakeStreams:
    def get(self, query_id: object) -> None:
        return None


def test_a_failed_source_query_restarts_as_an_operators_does_until_the_limit(tmp_path, monkeypatch):
    """The runtime's one restart path for sources: counted as source-NAME, healthy again once a
    batch completes, and `spark.max_restarts` failures in a row end the run naming the source."""
    from types import SimpleNamespace

    import numpy as np

    from elastream.config import make_config
    from elastream.runtime.spark import ingest as ingest_module
    from elastream.runtime.spark.runtime import RuntimeFailure, SparkEngine
    from elastream.workloads import Trace

    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "trips", "kind": "files", "path": str(tmp_path),
                         "format": "json", "schema": "a STRING"}],
            "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "out"}],
            "streams": [{"from": "trips", "to": "op"}, {"from": "op", "to": "out"}],
        }
    )  # fmt: skip
    spark = {"max_restarts": 2, "restart_backoff_s": 0.0}
    config = make_config(out=tmp_path / "run", spark=spark)
    engine = SparkEngine(pipeline, config, Trace(np.array([1.0])))
    engine.spark = engine.queries.spark = SimpleNamespace(streams=FakeStreams())
    engine.ingest = ingest_module.Ingest(pipeline, "unused", 100, tmp_path, tmp_path)
    engine.ingest.queries["trips"] = FakeQuery(RuntimeError("store unreachable"), 7)
    started: list[FakeQuery] = []

    def start_again(spark, store, spec):
        started.append(FakeQuery(RuntimeError("store still unreachable"), 7))
        return started[-1]

    monkeypatch.setattr(engine.ingest, "_start_query", start_again)
    monkeypatch.setattr(ingest_module, "thread_store", lambda address: None)
    engine.check_health()  # restarted once
    assert engine.queries.restarts == {"source-trips": 1} and len(started) == 1
    started[-1].error, started[-1].lastProgress = None, {"batchId": 8}  # it completed a batch
    engine.check_health()
    assert "source-trips" not in engine.queries.failing  # healthy again
    engine.ingest.queries["trips"] = FakeQuery(RuntimeError("gone again"), 8)
    engine.check_health()  # restarted: the first failure in a row
    engine.check_health()  # the restarted query failed too: the second
    with pytest.raises(RuntimeFailure, match=r"^the query of source 'trips' stopped 3 times"):
        engine.check_health()
    assert engine.queries.restarts == {"source-trips": 3}


def test_a_resumed_files_source_knows_the_files_its_checkpoint_committed(tmp_path: Path) -> None:
    """After --resume the backlog counts only the files no batch read (the source's Spark log
    says which were), so a run whose input is all delivered shows a backlog of 0."""
    from elastream.runtime.spark.files_source import files_key
    from elastream.runtime.spark.ingest import Ingest

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a.json", "b.json", "c.json"):
        (folder / name).write_text('{"u": 1}\n{"u": 2}\n')
    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "f", "kind": "files", "path": str(folder), "format": "json"}],
            "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "out"}],
            "streams": [{"from": "f", "to": "op"}, {"from": "op", "to": "out"}],
        }
    )
    store = open_store(str(tmp_path / "q.db"))
    store.set_meta(files_key("f"), {"files": 2, "rows": 4})  # the run before read two files
    log = tmp_path / "ckpt" / "source-f" / "sources" / "0"
    log.mkdir(parents=True)
    for batch, name in enumerate(("a.json", "b.json")):  # Spark's file-source log, a batch each
        entry = {"path": f"file://{folder / name}", "timestamp": 0, "batchId": batch}
        (log / str(batch)).write_text("v1\n" + json.dumps(entry) + "\n")
    ingest = Ingest(pipeline, store.address, 100, tmp_path / "ckpt", tmp_path / "run")
    ingest._handler(pipeline.sources[0])
    assert ingest.backlog() == {"f": 2}  # c.json unread, at the 2 rows a file read so far
    entry = {"path": f"file://{folder / 'c.json'}", "timestamp": 0, "batchId": 2}
    (log / "2").write_text("v1\n" + json.dumps(entry) + "\n")
    again = Ingest(pipeline, store.address, 100, tmp_path / "ckpt", tmp_path / "run")
    again._handler(pipeline.sources[0])
    assert again.backlog() == {"f": 0}  # all delivered before the resume: nothing left
