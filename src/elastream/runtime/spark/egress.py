"""Sinks that deliver (files, redis, foreach_batch): a Spark streaming query per sink over its
terminal queue, exactly once to the target across a crash and --resume (docs/sources-sinks.md).

The `elastream_sink` data source reads a sink queue by offset, so Spark's checkpoint fixes each
micro-batch's rows and a replayed batch has the same rows and batch id. files: Spark's file sink
and its metadata log; redis: a Lua script that appends only offsets beyond the delivered mark it
keeps in the same Redis, atomically; foreach_batch: the user's function with Spark's batch id.
Each query's `commit` records the delivered offset, and retention keeps every event above it."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

from elastream.model.pipeline import Pipeline, SinkKind, SinkSpec, load_callable
from elastream.runtime.queues import ControlTable, DataPath, TaskStore
from elastream.runtime.queues.base import BatchPlan
from elastream.runtime.spark.ingest import check_creatable, check_redis, redis_client
from elastream.runtime.spark.task import store_for

SINK_SOURCE = "elastream_sink"
SINK_SCHEMA = "off LONG, id STRING, key STRING, ts DOUBLE, root STRING, payload STRING"
MAX_ROWS = 50_000  # events per delivery micro-batch at most
REDIS_CHUNK = 500  # events per Lua call
SPARK_METADATA = "_spark_metadata"

# KEYS[1] the stream, KEYS[2] the delivered mark; ARGV[1] the first offset, then id, root, key,
# ts, payload per event. Appends the events at offsets >= the mark, then raises the mark: atomic.
DELIVER = """
local done = tonumber(redis.call('GET', KEYS[2]) or '0')
local first = tonumber(ARGV[1])
local n = (#ARGV - 1) / 5
local added = 0
for k = 0, n - 1 do
  if first + k >= done then
    local i = 2 + 5 * k
    redis.call('XADD', KEYS[1], '*', 'id', ARGV[i], 'root', ARGV[i + 1], 'key', ARGV[i + 2],
               'ts', ARGV[i + 3], 'payload', ARGV[i + 4])
    added = added + 1
  end
end
if first + n > done then redis.call('SET', KEYS[2], first + n) end
return added
"""


class SinkError(RuntimeError):
    """A sink that cannot deliver; the message names the sink and the cause."""


def delivered_key(sink: str) -> str:
    """The store's meta key holding the offset below which `sink` is delivered."""
    return f"delivered:{sink}"


@dataclass(frozen=True)
class SinkPartition(InputPartition):
    start: int
    end: int


class SinkStreamReader(DataSourceStreamReader):
    """Offsets are the sink queue's; `commit` records what the target has."""

    def __init__(self, db: str, sink: str) -> None:
        self.db = db
        self.sink = sink

    def initialOffset(self) -> dict:
        return {"off": 0}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        del limit
        return {"off": min(store_for(self.db).latest(self.sink), int(start["off"]) + MAX_ROWS)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return [SinkPartition(int(start["off"]), int(end["off"]))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's events as one Arrow record batch (column-wise: no row conversion)."""
        if not isinstance(partition, SinkPartition):
            raise TypeError(f"{SINK_SOURCE} source got a foreign partition: {partition!r}")
        if partition.end <= partition.start:
            return
        yield sink_batch(store_for(self.db), self.sink, partition.start, partition.end)

    def commit(self, end: dict) -> None:
        store_for(self.db).set_meta(delivered_key(self.sink), int(end["off"]))


def sink_batch(store: DataPath, sink: str, start: int, end: int) -> Any:
    """Sink queue `sink`'s events at offsets [start, end) as an Arrow record batch of
    SINK_SCHEMA's columns (the payload as JSON text)."""
    import pyarrow as pa

    whole = BatchPlan(sink, start, end, 1, bytes(end - start))  # every event, one reader
    events = store.read_share(whole, 0)
    if len(events) != end - start:
        raise SinkError(f"sink {sink!r}: the queue holds {len(events)} of [{start}, {end})")
    payloads = [json.dumps(p, default=str) for p in events.payloads]
    columns = [
        pa.array(range(start, end), pa.int64()),
        pa.array(events.ids, pa.string()),
        pa.array(events.keys, pa.string()),
        pa.array(events.ts, pa.float64()),
        pa.array(events.roots, pa.string()),
        pa.array(payloads, pa.string()),
    ]
    return pa.RecordBatch.from_arrays(columns, names=["off", "id", "key", "ts", "root", "payload"])


class SinkDataSource(DataSource):
    """`spark.readStream.format("elastream_sink").option("db", queues).option("sink", name)`."""

    @classmethod
    def name(cls) -> str:
        return SINK_SOURCE

    def schema(self) -> str:
        return SINK_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return SinkStreamReader(self.options["db"], self.options["sink"])


@dataclass
class RedisWriter:
    """A redis sink's foreachBatch: XADD fields id, root (the source event it descends from), key,
    ts, payload (JSON), offsets above the
    delivered mark only (`DELIVER`); a restarting server is waited for while the run lasts."""

    spec: SinkSpec
    mark: str  # the delivered mark's key in the target Redis
    stop: threading.Event

    def __call__(self, df: Any, batch_id: int) -> None:
        del batch_id
        self.deliver(df.orderBy("off").toArrow().to_pylist())

    def deliver(self, rows: list[dict[str, Any]]) -> None:
        """Rows with contiguous offsets `off` (and id, root, key, ts, payload) to the stream."""
        client = redis_client(self.spec.url or "", 5.0)
        script = client.register_script(DELIVER)
        for k in range(0, len(rows), REDIS_CHUNK):
            chunk = rows[k : k + REDIS_CHUNK]
            args: list[Any] = [chunk[0]["off"]]
            for row in chunk:
                args += [row["id"], row["root"], row["key"], repr(row["ts"]), row["payload"]]
            self._retry(lambda a=args: script(keys=[self.spec.stream, self.mark], args=a))

    def _retry(self, call: Callable[[], Any]) -> None:
        import redis

        while True:
            try:
                call()
                return
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                if self.stop.is_set():
                    raise
                time.sleep(0.5)


def redis_mark(spec: SinkSpec, queues: str) -> str:
    """The key of a redis sink's delivered mark: one per stream, run store and sink."""
    return f"elastream:delivered:{spec.stream}:{queues}:{spec.name}"


@dataclass
class Egress:
    """Every delivering sink of a run: one query each, started before the operators' outputs
    reach them and stopped after."""

    pipeline: Pipeline
    queues: str
    checkpoints: Path
    stop_event: threading.Event = field(default_factory=threading.Event)
    queries: dict[str, Any] = field(default_factory=dict)

    @property
    def sinks(self) -> tuple[SinkSpec, ...]:
        return tuple(s for s in self.pipeline.sinks if s.delivered)

    def start(self, spark: Any, resume: bool) -> None:
        if not self.sinks:
            return
        spark.dataSource.register(SinkDataSource)
        for spec in self.sinks:
            if spec.kind is SinkKind.REDIS and not resume:  # a new run delivers from offset 0
                redis_client(spec.url or "").delete(redis_mark(spec, self.queues))
            self.queries[spec.name] = self._start_query(spark, spec)
            first_batch(self.queries[spec.name], f"sink {spec.name!r}")

    def _start_query(self, spark: Any, spec: SinkSpec) -> Any:
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", f"sink-{spec.name}")
        frame = (
            spark.readStream.format(SINK_SOURCE)
            .option("db", self.queues)
            .option("sink", spec.name)
            .load()
        )
        checkpoint = str((self.checkpoints / f"sink-{spec.name}").resolve())
        if spec.kind is SinkKind.FILES:
            writer = files_frame(frame, spec).writeStream.format(spec.format)
            writer = writer.option("path", str(Path(spec.path or "").resolve()))
        elif spec.kind is SinkKind.REDIS:
            handler = RedisWriter(spec, redis_mark(spec, self.queues), self.stop_event)
            writer = frame.writeStream.foreachBatch(handler)
        else:
            function = load_callable(spec.function or "", f"sink {spec.name!r} function")
            writer = frame.drop("off").writeStream.foreachBatch(function)
        return (
            writer.queryName(f"elastream-sink-{spec.name}")
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="1 second")
            .start()
        )

    def delivered(self, store: ControlTable, sink: str) -> int:
        """The offset below which `sink`'s events are written: the end of its query's last
        completed batch (Spark commits a batch's offsets to the source only when it plans the
        next one, so the recorded mark may lag by a batch)."""
        done = int(store.meta(delivered_key(sink), 0))
        progress = self.queries[sink].lastProgress if sink in self.queries else None
        if progress and progress.get("sources"):
            end = progress["sources"][0].get("endOffset")
            end = json.loads(end) if isinstance(end, str) else end
            if isinstance(end, dict) and "off" in end:
                done = max(done, int(end["off"]))
        return done

    def lag(self, store: TaskStore) -> int:
        """Sink events not yet delivered, over every delivering sink."""
        return sum(store.latest(s.name) - self.delivered(store, s.name) for s in self.sinks)

    def hold(self, store: TaskStore) -> float | None:
        """The arrival time of the earliest event not yet delivered (retention keeps it)."""
        times = []
        for spec in self.sinks:
            done = int(store.meta(delivered_key(spec.name), 0))  # the recorded, durable mark
            if done < store.latest(spec.name):
                times.append(store.read(spec.name, done, done + 1)[0].enq)
        return min(times, default=None)

    def failed(self) -> list[tuple[str, Any]]:
        """(sink, error) of every sink query that stopped with an error while the run lasts."""
        if self.stop_event.is_set():
            return []
        failures = ((name, query.exception()) for name, query in self.queries.items())
        return [(name, error) for name, error in failures if error is not None]

    def restart(self, spark: Any, name: str) -> None:
        """Start sink `name`'s query again from its checkpoint: a replayed batch has the same
        rows and batch id, so it is delivered once (files: the metadata log; redis: the mark)."""
        spec = next(s for s in self.sinks if s.name == name)
        self.queries[name] = self._start_query(spark, spec)

    def stop(self, stop_query: Callable[[Any], None]) -> None:
        if self.stop_event.is_set():
            return
        self.stop_event.set()
        for query in self.queries.values():
            stop_query(query)


def files_frame(frame: Any, spec: SinkSpec) -> Any:
    """What a files sink writes: id, key, ts and the payload, parsed into the declared columns
    (`schema`) or as one JSON string."""
    if spec.schema_ is None:
        return frame.select("id", "key", "ts", "payload")
    from pyspark.sql import functions as F

    parsed = frame.select("id", "key", "ts", F.from_json("payload", spec.schema_).alias("p"))
    return parsed.select("id", "key", "ts", "p.*")


def check_sinks(pipeline: Pipeline, resume: bool) -> list[Path]:
    """Start-up checks, before Spark starts, creating nothing: a files sink's directory is
    writable, or can be created (the run creates it), and for a new run holds no earlier run's
    output; a redis sink's server answers; a foreach_batch function imports. One line naming
    the culprit. Returns the directories to create."""
    to_create = []
    for spec in pipeline.sinks:
        what = f"sink {spec.name!r}"
        if spec.kind is SinkKind.FILES:
            folder = Path(spec.path or "")
            if check_writable(folder, what):
                to_create.append(folder)
            if not resume and (folder / SPARK_METADATA).exists():
                raise SinkError(
                    f"{what}: {spec.path} holds an earlier run's output ({SPARK_METADATA}); "
                    "remove it, or give --resume to carry that run on"
                )
        elif spec.kind is SinkKind.REDIS:
            check_redis(spec.url or "", what)
        elif spec.kind is SinkKind.FOREACH_BATCH:
            load_callable(spec.function or "", f"{what} function")
    return to_create


def check_writable(folder: Path, what: str) -> bool:
    """A file can be written in `folder` (False), or `folder` is absent and can be created
    (True: to be created); SinkError in one line otherwise."""
    if not folder.exists():
        check_creatable(folder, what, SinkError)
        return True
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".elastream-check-"):
            pass
    except OSError as exc:
        raise SinkError(f"{what}: cannot write to {folder} ({exc.strerror or exc})") from None
    if not os.access(folder, os.W_OK):
        raise SinkError(f"{what}: cannot write to {folder}")
    return False


def first_batch(query: Any, what: str, timeout_s: float = 120.0) -> None:
    """Wait until `query` has run its first micro-batch: each Python data source query forks a
    helper that must connect back to the JVM within 10 s, which queries started together on a
    loaded machine miss (docs/runtime.md)."""
    deadline = time.time() + timeout_s
    while query.lastProgress is None:
        error = query.exception()
        if error is not None:
            raise SinkError(f"{what}: {str(error).strip().splitlines()[0]}")
        if time.time() > deadline:
            raise SinkError(f"{what}: its query did not start within {timeout_s:.0f} s")
        time.sleep(0.2)
