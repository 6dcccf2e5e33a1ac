"""The files sink without Spark: the payload's own columns, typed, beside elastream's prefixed
ones; part files renamed into place (no partial file for a reader), a replay written once, an
earlier run's folder refused. Spark reads the same files in tests/spark/test_spark_io.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from elastream.model.batch import EventBatch
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import open_store
from elastream.runtime.spark.egress import SinkWriter, check_sinks, delivered_key
from elastream.runtime.spark.sink_columns import SinkError

PAYLOADS = [  # fields named like elastream's own metadata must stay the user's columns
    {"id": 7, "key": "mine", "ts": "noon", "n": k, "tags": ["a"] * (k % 3), "who": {"x": k}}
    for k in range(10)
]


def pipeline(folder: Path, **sink: object):
    return pipeline_from_dict(
        {
            "sources": [{"name": "s", "generator": "elastream.examples.synthetic:generate"}],
            "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "out", "kind": "files", "path": str(folder), **sink}],
            "streams": [{"from": "s", "to": "op"}, {"from": "op", "to": "out"}],
        }
    )


def store_with(tmp_path: Path, payloads: list, first: int = 0):
    store = open_store(str(tmp_path / "q.db"))
    store.create_queue("out", None, sink=True)
    n = len(payloads)
    roots = np.arange(first, first + n) + 100
    batch = EventBatch.of(roots, [f"k{i}" for i in range(n)], 5.0, payloads)
    store.append("out", batch, "op", first)
    return store


def writer(tmp_path: Path, resume: bool = False, **sink: object) -> SinkWriter:
    spec = pipeline(tmp_path / "results", **sink).sinks[0]
    w = SinkWriter(spec, str(tmp_path / "q.db"), threading.Event(), resume)
    w.open()
    return w


def test_the_files_sink_writes_the_users_columns_typed_and_elastreams_prefixed(tmp_path):
    store = store_with(tmp_path, PAYLOADS)
    w = writer(tmp_path)
    w.write(store, 0, 6)
    w.write(store, 6, 10)
    frame = pd.read_parquet(tmp_path / "results")
    assert list(frame.columns) == [
        "id",
        "key",
        "ts",
        "n",
        "tags",
        "who",
        "_elastream_id",
        "_elastream_root",
        "_elastream_key",
        "_elastream_ts",
    ]
    frame = frame.sort_values("n")
    assert frame["n"].tolist() == list(range(10)) and frame["id"].tolist() == [7] * 10
    assert frame["key"].tolist() == ["mine"] * 10 and frame["ts"].tolist() == ["noon"] * 10
    assert frame["_elastream_id"].tolist() == list(range(10))  # offsets in the sink
    assert frame["_elastream_root"].tolist() == [100 + k for k in range(10)]
    assert [list(t) for t in frame["tags"]] == [p["tags"] for p in PAYLOADS]
    assert [w_["x"] for w_ in frame["who"]] == list(range(10))
    schema = pq.read_schema(next((tmp_path / "results").glob("part-*.parquet")))
    assert schema.field("n").type == pa.int64() and schema.field("ts").type == pa.string()
    assert store.meta(delivered_key("out")) == 10


def test_metadata_false_writes_the_payload_only(tmp_path):
    store = store_with(tmp_path, PAYLOADS)
    writer(tmp_path, metadata=False).write(store, 0, 10)
    assert list(pd.read_parquet(tmp_path / "results").columns) == [
        "id",
        "key",
        "ts",
        "n",
        "tags",
        "who",
    ]


def test_a_crash_leaves_no_partial_file_and_a_replay_writes_a_range_once(tmp_path):
    store = store_with(tmp_path, PAYLOADS)
    w = writer(tmp_path)
    w.write(store, 0, 4)
    folder = tmp_path / "results"
    (folder / ".part-000000000004-000000000010.parquet.tmp").write_bytes(b"PAR1 half")
    store.set_meta(delivered_key("out"), 0)  # the mark lagged the rename when it crashed
    again = writer(tmp_path, resume=True)
    assert again.delivered == 4  # the folder's part files say what is written
    assert not list(folder.glob(".part-*"))  # the half-written file is gone
    again.write(store, 4, 10)
    frame = pd.read_parquet(folder)
    assert sorted(frame["n"]) == list(range(10))  # each row once
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("_")) == [
        "part-000000000000-000000000004.parquet",
        "part-000000000004-000000000010.parquet",
    ]


def test_a_later_batch_missing_a_column_gets_nulls_and_new_columns_widen_the_schema(tmp_path):
    store = store_with(tmp_path, [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}])
    store.append(
        "out", EventBatch.of([9, 10], ["k", "k"], 1.0, [{"a": 3}, {"a": 4, "c": 1.5}]), "op", 2
    )
    w = writer(tmp_path, metadata=False)
    w.write(store, 0, 2)
    w.write(store, 2, 4)
    frame = pd.read_parquet(tmp_path / "results" / "part-000000000002-000000000004.parquet")
    assert frame["a"].tolist() == [3, 4] and frame["b"].isna().all()
    assert frame["c"].isna().tolist() == [True, False] and frame["c"][1] == 1.5
    assert store.meta("sink_schema:out") is not None  # the widened columns are recorded


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_json_lines_and_csv_sinks(tmp_path, fmt):
    store = store_with(tmp_path, [{"n": k, "w": f"w{k}"} for k in range(5)])
    writer(tmp_path, format=fmt, metadata=False).write(store, 0, 5)
    (part,) = (tmp_path / "results").glob(f"part-*.{fmt}")
    if fmt == "json":
        rows = [json.loads(line) for line in part.read_text().splitlines()]
    else:
        rows = pd.read_csv(part).to_dict("records")
    assert rows == [{"n": k, "w": f"w{k}"} for k in range(5)]


def test_an_earlier_runs_folder_is_refused_unless_resumed(tmp_path):
    store = store_with(tmp_path, PAYLOADS)
    writer(tmp_path).write(store, 0, 10)
    p = pipeline(tmp_path / "results")
    with pytest.raises(SinkError, match="holds an earlier run's output"):
        check_sinks(p, resume=False)
    check_sinks(p, resume=True)


def test_the_writer_thread_drains_what_is_queued_when_stopped(tmp_path):
    store = store_with(tmp_path, PAYLOADS)
    spec = pipeline(tmp_path / "results").sinks[0]
    w = SinkWriter(spec, str(tmp_path / "q.db"), threading.Event(), resume=False)
    w.start()
    w.stop(timeout_s=20)
    assert w.error is None and w.delivered == 10
    assert sorted(pd.read_parquet(tmp_path / "results")["n"]) == list(range(10))
    assert store.meta(delivered_key("out")) == 10
