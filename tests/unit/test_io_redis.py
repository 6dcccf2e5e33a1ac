"""A redis source and a redis sink against a real redis-server, without Spark: an outside producer
process appends at a varying rate while the source's reader is restarted (as after a crash) and
the server itself is killed and restarted; every entry reaches the queue exactly once. The sink's
delivery, replayed, adds nothing twice."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import redis
from support.redis_server import local_redis

from elastream.model.batch import EventBatch
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import open_store
from elastream.runtime.spark.admission import Admission, SourceError
from elastream.runtime.spark.egress import RedisDeliverer
from elastream.runtime.spark.redis_endpoint import check_redis
from elastream.runtime.spark.redis_source import RedisReader
from elastream.runtime.spark.sink_columns import sink_table

PRODUCER = """
import random, sys, time, redis
client = redis.Redis.from_url(sys.argv[1])
n = int(sys.argv[2])
sent = 0
while sent < n:
    try:
        client.xadd("clicks", {"user": f"u{sent % 7}", "seq": str(sent)})
        sent += 1
    except redis.ConnectionError:
        time.sleep(0.1)  # the server restarts: try the same entry again
        continue
    time.sleep(random.choice([0.0, 0.0, 0.001, 0.003]))  # a varying rate
"""


def _pipeline(url: str):
    return pipeline_from_dict(
        {
            "sources": [
                {"name": "s", "kind": "redis", "url": url, "stream": "clicks", "key": "user"}
            ],
            "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "out", "kind": "redis", "url": url, "stream": "results"}],
            "streams": [{"from": "s", "to": "op"}, {"from": "op", "to": "out"}],
        }
    )


def _reader(pipeline, db: str, stop: threading.Event) -> RedisReader:
    store = open_store(db)
    for q in ("op",):
        store.create_queue(q, None)
    admission = Admission(db, pipeline, "s", ("op",), 1_000_000, stop)
    reader = RedisReader(pipeline.sources[0], admission)
    reader.start()
    return reader


def test_redis_source_exactly_once_across_reader_and_server_restarts(tmp_path: Path) -> None:
    server = local_redis(tmp_path / "redis")
    server.start()
    n = 3000
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER, server.url, str(n)])
    try:
        pipeline = _pipeline(server.url)
        db = str(tmp_path / "queues.db")
        stop = threading.Event()
        reader = _reader(pipeline, db, stop)
        time.sleep(1.0)
        stop.set()  # the reader stops mid-stream (as a killed run would)
        reader.join()
        store = open_store(db)
        # a crash between an append and its position's record: the record rolls back
        store.set_meta("redis_source:s", {"first": 0, "after": "0-0"})
        server.kill()  # the server dies with the producer writing...
        time.sleep(0.5)
        server.start()  # ...and comes back from its AOF
        stop = threading.Event()
        reader = _reader(pipeline, db, stop)
        assert producer.wait(timeout=60) == 0
        deadline = time.time() + 30
        while store.latest("op") < n and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # nothing more may come
        stop.set()
        reader.join()
        assert reader.error is None
        events = [e for e in store.read_events("op", 0, store.latest("op"))]
        entries = redis.Redis.from_url(server.url, decode_responses=True).xrange("clicks")
        # every entry of the stream once, in order, none missing (the producer itself may have
        # written an entry twice when the server died before its reply: two entries)
        assert [e.payload["seq"] for e in events] == [fields["seq"] for _, fields in entries]
        assert {int(e.payload["seq"]) for e in events} == set(range(n))
        assert events[0].key == "u0" and reader.measure_lag() == 0
    finally:
        producer.kill()
        server.stop()


def test_redis_sink_delivers_a_replayed_batch_once(tmp_path: Path) -> None:
    server = local_redis(tmp_path / "redis")
    server.start()
    try:
        spec = _pipeline(server.url).sinks[0]
        deliver = RedisDeliverer(spec, "db", threading.Event(), resume=False)
        batch = EventBatch.of(
            np.arange(1200) + 10, ["k"] * 1200, 1.5, [{"n": k, "who": f"u{k}"} for k in range(1200)]
        )

        def rows(lo: int, hi: int) -> pa.Table:
            return sink_table(batch.slice(lo, hi), lo, metadata=True)

        deliver(rows(0, 700), 0, 700)
        deliver(rows(500, 1200), 500, 1200)  # a replay overlapping what was delivered
        deliver(rows(0, 1200), 0, 1200)  # a whole replay
        assert deliver.recover(0) == 1200
        out = redis.Redis.from_url(server.url, decode_responses=True).xrange("results")
        assert [fields["_elastream_id"] for _, fields in out] == [str(k) for k in range(1200)]
        assert out[7][1] == {
            "n": "7",
            "who": "u7",
            "_elastream_id": "7",
            "_elastream_root": "17",
            "_elastream_key": "k",
            "_elastream_ts": "1.5",
        }
    finally:
        server.stop()


def test_an_unreachable_redis_fails_at_once_in_one_line() -> None:
    started = time.time()
    try:
        check_redis("redis://127.0.0.1:1/0", "source 'clicks'")
    except SourceError as exc:
        message = str(exc)
    assert time.time() - started < 5
    assert "\n" not in message and message.startswith(
        "source 'clicks': Redis at redis://127.0.0.1:1/0"
    )
