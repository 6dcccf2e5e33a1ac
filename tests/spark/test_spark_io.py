"""Sources and sinks on a real Spark: files in and Parquet out equal to a batch computation with
replicas changing live, a malformed file's rows in the dead letters, a `spark` source (Spark's
rate source) into a `foreach_batch` sink; and a SIGKILLed run resumed with nothing lost or
written twice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.spark_runs import kill_run

from elastream.config import make_config
from elastream.control.policy import Decision
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads import Trace

pytestmark = pytest.mark.spark
PASS = "elastream.examples.synthetic:passthrough"
FILES, ROWS = 6, 400
METADATA = ["_elastream_id", "_elastream_root", "_elastream_key", "_elastream_ts"]
FIELDS = "a STRING, b INT, id INT, key STRING, ts STRING"
BATCHES = Path(os.environ.get("ELASTREAM_TEST_BATCHES", "/tmp/elastream-foreach-batches"))


def collect_batch(df: Any, batch_id: int) -> None:
    """A foreach_batch sink for the test: each batch's rows to one JSON file named by batch id
    (a replayed batch rewrites its file)."""
    rows = [row.asDict() for row in df.collect()]
    BATCHES.mkdir(parents=True, exist_ok=True)
    (BATCHES / f"{batch_id:06d}.json").write_text(json.dumps(rows, default=str))


def rate_source(spark: Any) -> Any:
    """A `spark` source: Spark's own rate source."""
    return spark.readStream.format("rate").option("rowsPerSecond", 40).load()


def write_inputs(folder: Path, bad: bool = True) -> list[tuple[str, int]]:
    """JSON-lines files; with `bad`, the last file has a malformed line and a value not of the
    schema. Returns the good rows (a, b)."""
    folder.mkdir(parents=True, exist_ok=True)
    good = []
    for f in range(FILES):
        lines = []
        for i in range(ROWS):
            # fields named like elastream's own metadata stay the user's columns
            lines.append(json.dumps({"a": f"f{f}-{i}", "b": i, "id": 7, "key": "mine", "ts": "x"}))
            good.append((f"f{f}-{i}", i))
        if bad and f == FILES - 1:
            lines[3] = "{not json"
            lines[7] = json.dumps({"a": "x", "b": "not a number"})
            good = [g for g in good if g not in {(f"f{f}-3", 3), (f"f{f}-7", 7)}]
        (folder / f"part-{f}.json").write_text("\n".join(lines) + "\n")
    return good


def files_pipeline(tmp: Path, extra_source: bool) -> dict:
    sources = [
        {"name": "trips", "kind": "files", "path": str(tmp / "in"), "format": "json",
         "schema": FIELDS, "key": "b", "options": {"maxFilesPerTrigger": "2"}},
    ]  # fmt: skip
    operators = [{"name": "op", "function": PASS, "replicas": {"min": 1, "max": 3}}]
    sinks = [{"name": "out", "kind": "files", "path": str(tmp / "out")}]
    streams = [{"from": "trips", "to": "op"}, {"from": "op", "to": "out"}]
    if extra_source:
        sources.append({"name": "rates", "kind": "spark", "function": f"{__name__}:rate_source"})
        operators.append({"name": "op2", "function": PASS})
        sinks.append(
            {"name": "fb", "kind": "foreach_batch", "function": f"{__name__}:collect_batch"}
        )
        streams += [{"from": "rates", "to": "op2"}, {"from": "op2", "to": "fb"}]
    return {"sources": sources, "operators": operators, "sinks": sinks, "streams": streams}


def read_parquet(spark: Any, folder: Path) -> Counter:
    """The files sink's output read back with plain PySpark."""
    return Counter((r.a, r.b) for r in spark.read.parquet(str(folder)).collect())


def test_files_to_parquet_and_rate_to_foreach_batch_with_live_replica_changes(spark, tmp_path):
    good = write_inputs(tmp_path / "in")
    shutil.rmtree(BATCHES, ignore_errors=True)
    pipeline = pipeline_from_dict(files_pipeline(tmp_path, extra_source=True))
    config = make_config(
        interval_s=2.0, out=tmp_path / "run", drain_s=60, event_timeout_s=None, duration=16
    )
    engine = SparkEngine(pipeline, config, _trace(16), spark=spark)
    engine.start()
    try:
        for replicas in (3, 2, 1, 3, 2, 2, 2, 2):  # live changes, the queries never restarted
            engine.collect()
            engine.enact(Decision.of({"op": replicas}))
        while not engine.finished():
            engine.collect()
        spark = engine.spark
        assert all(len(ids) == 1 for ids in engine.queries.run_ids.values()), engine.queries.run_ids
        written = read_parquet(spark, tmp_path / "out")
        assert written == Counter(good)  # every good row once, none missing
        frame = spark.read.parquet(str(tmp_path / "out"))
        assert frame.columns == ["a", "b", "id", "key", "ts", *METADATA]
        assert dict(frame.dtypes)["b"] == "int" and dict(frame.dtypes)["id"] == "int"
        import pandas as pd

        pandas_rows = pd.read_parquet(tmp_path / "out")
        assert list(pandas_rows.columns) == frame.columns and len(pandas_rows) == len(good)
        assert set(pandas_rows["key"]) == {"mine"} and set(pandas_rows["id"]) == {7}
        letters = [json.loads(line) for p in sorted((tmp_path / "run" / "dead-letter" / "trips")
                   .glob("*.jsonl")) for line in p.read_text().splitlines()]  # fmt: skip
        assert sorted((d["file"], d["row"]) for d in letters) == [("part-5.json", 3),
                                                                  ("part-5.json", 7)]  # fmt: skip
        assert all(d["reason"] for d in letters)
        delivered = [r for p in sorted(BATCHES.glob("*.json")) for r in json.loads(p.read_text())]
        values = sorted(r["value"] for r in delivered)
        assert values and values == list(range(len(values)))  # rate rows once, no gap
        assert engine.store.audit().duplicate_sink_roots == 0
    finally:
        engine.keep_session = True
        engine.stop()


def test_a_corrupt_parquet_file_goes_to_the_dead_letters_by_name(spark, tmp_path):
    """A Parquet files source given a good file, a file that is not Parquet and a truncated
    one: the good rows are appended, each bad file is one dead letter naming it and the reason,
    and the query goes on (in the tests' shared session)."""
    import threading

    import pyarrow as pa
    import pyarrow.parquet as pq

    from elastream.runtime.queues import open_store
    from elastream.runtime.spark.admission import Admission
    from elastream.runtime.spark.files_source import DeadLetters, FilesBatch, files_frame

    folder = tmp_path / "in"
    folder.mkdir()
    table = pa.table({"a": [f"r{i}" for i in range(5)], "b": pa.array(range(5), pa.int32())})
    pq.write_table(table, folder / "good.parquet")
    whole = (folder / "good.parquet").read_bytes()
    (folder / "truncated.parquet").write_bytes(whole[: len(whole) // 2])
    (folder / "bad.parquet").write_bytes(b"PAR1 this is not a Parquet file PAR1")
    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "p", "kind": "files", "path": str(folder), "format": "parquet",
                         "schema": "a STRING, b INT"}],
            "operators": [{"name": "op", "function": PASS}],
            "sinks": [{"name": "out"}],
            "streams": [{"from": "p", "to": "op"}, {"from": "op", "to": "out"}],
        }
    )  # fmt: skip
    spec = pipeline.sources[0]
    store = open_store(str(tmp_path / "q.db"))
    store.create_queue("op", None)
    admission = Admission(store.address, pipeline, "p", ("op",), 10**6, threading.Event())
    dead = DeadLetters(tmp_path / "dead")
    ckpt = tmp_path / "ckpt"
    handler = FilesBatch(spec, admission, dead, str(folder), ckpt / "sources" / "0")
    query = (
        files_frame(spark, spec, store)
        .writeStream.foreachBatch(handler)
        .option("checkpointLocation", str(ckpt))
        .start()
    )
    try:
        deadline = time.time() + 120
        while store.latest("op") < 5 or dead.count < 2:
            assert query.exception() is None and time.time() < deadline, query.exception()
            time.sleep(0.2)
    finally:
        query.stop()
    assert store.latest("op") == 5  # the good file's rows, once
    letters = [json.loads(line) for p in sorted((tmp_path / "dead").glob("*.jsonl"))
               for line in p.read_text().splitlines()]  # fmt: skip
    assert sorted(d["file"] for d in letters) == ["bad.parquet", "truncated.parquet"]
    assert all(d["reason"].startswith("unreadable Parquet file: ") for d in letters), letters


def test_a_files_source_query_failed_by_a_redis_outage_restarts_in_place(
    spark, tmp_path, monkeypatch
):
    """A files source on Redis queues, its files landing while the run goes: redis-server is
    killed while three more files land, so the source's foreachBatch fails (the driver's
    retry budget is cut to about 1 s here, instead of about 50 s, so that a short outage outlasts
    it) and its query stops. The runtime restarts it in place from its checkpoint, counted in
    query_restarts; every row reaches the Parquet sink once and the run finishes by itself."""
    from support.redis_server import local_redis

    from elastream.runtime.queues import redis_client

    staged = tmp_path / "staged"
    good = write_inputs(staged, bad=False)
    server = local_redis(tmp_path / "redis")
    server.start()
    pipeline = pipeline_from_dict(files_pipeline(tmp_path, extra_source=False))
    config = make_config(interval_s=2.0, out=tmp_path / "run", drain_s=60, event_timeout_s=None,
                         duration=30, queues=server.url)  # fmt: skip
    engine = SparkEngine(pipeline, config, _trace(30), spark=spark)
    engine.start()
    try:
        while engine.store.meta("trace_elapsed") is None:  # the feeder's client is made
            time.sleep(0.05)
        # the engine's and the feeder's clients keep the full retry budget; the source's, made
        # at its first batch, gets the short one
        monkeypatch.setattr(redis_client, "RETRY_TRIES", 3)
        land(staged, tmp_path / "in", range(3))
        deadline = time.time() + 60
        while engine.store.latest("op") < 3 * ROWS:
            assert time.time() < deadline, engine.store.latest("op")
            engine.collect()
        server.kill()
        land(staged, tmp_path / "in", range(3, FILES))
        source = engine.ingest.queries["trips"]
        deadline = time.time() + 20  # within the other clients' retries (about 50 s)
        while source.exception() is None:  # the source's next batch fails
            assert time.time() < deadline, "the source's query did not fail"
            time.sleep(0.2)
        server.start()  # from its AOF (appendfsync always): nothing acknowledged is lost
        while not engine.finished():
            engine.collect()
        assert engine.queries.restarts == {"source-trips": 1}
        assert engine.totals().query_restarts == 1
        assert read_parquet(engine.spark, tmp_path / "out") == Counter(good)  # every row once
        audit = engine.store.audit()
        assert audit.events_in == len(good) and audit.duplicate_sink_roots == 0
    finally:
        engine.keep_session = True
        engine.stop()
        server.stop()


def land(staged: Path, folder: Path, files: range) -> None:
    """Files `part-N.json` appear in `folder` whole (renamed in, as a writer should)."""
    for f in files:
        os.replace(staged / f"part-{f}.json", folder / f"part-{f}.json")


def _trace(seconds: int) -> Trace:
    import numpy as np

    return Trace(np.array([1.0] * seconds))


@pytest.mark.slow
def test_a_killed_files_run_resumes_with_every_row_once(spark, tmp_path):
    """SIGKILL `elastream run` while it writes Parquet, then --resume: the output equals the
    input, every row once."""
    good = write_inputs(tmp_path / "in", bad=False)
    spec = tmp_path / "pipeline.yaml"
    spec.write_text(yaml.safe_dump(files_pipeline(tmp_path, extra_source=False)))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(spec), "--out", str(out)]
    cmd += [
        "--duration",
        "25",
        "--interval-s",
        "2",
        "--quiet",
        "--policy",
        "static",
        "--replicas",
        "2",
    ]
    first = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while not list((tmp_path / "out").glob("*.parquet")):
        assert first.poll() is None and time.time() < deadline, first.stdout.read()
        time.sleep(0.5)
    kill_run(first)  # the driver, its JVM and Python workers at once
    first.wait(timeout=30)
    second = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=400)
    assert second.returncode == 0, second.stdout + second.stderr
    assert not list((tmp_path / "out").glob(".part-*"))  # no leftover a reader could trip on
    assert read_parquet(spark, tmp_path / "out") == Counter(good)  # the shared session
    import pandas as pd

    frame = pd.read_parquet(tmp_path / "out")  # every file whole: pandas reads the folder
    assert Counter(zip(frame["a"], frame["b"], strict=True)) == Counter(good)


REDIS_PRODUCER = """
import random, sys, time, redis
client = redis.Redis.from_url(sys.argv[1])
for seq in range(int(sys.argv[2])):
    while True:
        try:
            client.xadd("clicks", {"user": f"u{seq % 5}", "seq": str(seq)})
            break
        except redis.ConnectionError:
            time.sleep(0.1)  # the server restarts: the same entry again
    time.sleep(random.choice([0.002, 0.01, 0.03]))  # a varying rate
"""


@pytest.mark.slow
def test_redis_in_redis_out_exactly_once_across_kill_resume_and_server_restart(tmp_path):
    """An outside producer process appends to a Redis stream throughout; elastream reads it and
    writes a Redis stream. elastream is SIGKILLed and resumed, and the redis-server is killed and
    restarted meanwhile: every entry of the input stream is in the output stream exactly once."""
    import redis as redis_lib
    from support.redis_server import local_redis

    server = local_redis(tmp_path / "redis")
    server.start()
    spec = tmp_path / "pipeline.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "sources": [{"name": "s", "kind": "redis", "url": server.url, "stream": "clicks",
                             "key": "user"}],
                "operators": [{"name": "op", "function": PASS, "replicas": {"min": 1, "max": 2}}],
                "sinks": [{"name": "out", "kind": "redis", "url": server.url, "stream": "results"}],
                "streams": [{"from": "s", "to": "op"}, {"from": "op", "to": "out"}],
            }
        )
    )  # fmt: skip
    producer = subprocess.Popen([sys.executable, "-c", REDIS_PRODUCER, server.url, "2000"])
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(spec), "--out", str(tmp_path / "run")]
    cmd += ["--duration", "50", "--interval-s", "2", "--quiet"]
    client = redis_lib.Redis.from_url(server.url, decode_responses=True)
    try:
        first = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, text=True)
        deadline = time.time() + 240
        while client.xlen("results") < 100:
            assert first.poll() is None and time.time() < deadline, first.stdout.read()
            time.sleep(0.5)
        kill_run(first)  # the driver, its JVM and Python workers at once
        first.wait(timeout=30)
        server.kill()  # the server dies with the producer writing, and comes back from its AOF
        server.start()
        second = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=400)
        assert second.returncode == 0, second.stdout + second.stderr
        assert producer.wait(timeout=60) == 0
        inputs = [fields["seq"] for _, fields in client.xrange("clicks")]
        outputs = [fields["seq"] for _, fields in client.xrange("results")]
        assert len(inputs) >= 2000
        assert Counter(outputs) == Counter(inputs)  # every entry once, none missing
    finally:
        producer.kill()
        server.stop()
