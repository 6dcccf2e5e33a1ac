"""Sinks that deliver (files, redis, foreach_batch): a driver thread per sink reads its terminal
queue in offset ranges, as Arrow, and writes each range in bulk, exactly once across a crash and
--resume (docs/sources-sinks.md).

files: one part file per range, `part-START-END.EXT`, written under a hidden temporary name and
renamed into place, so a reader never sees a partial file and the folder itself records what is
delivered; redis: a Lua script that appends only offsets beyond the delivered mark it keeps in
the same Redis, atomically; foreach_batch: the user's function with a DataFrame made from the
Arrow batch and a batch id recorded with its range before the call, so a replay after a crash
calls it again with the same rows and id. The written columns are the payload's own, typed, plus
elastream's `_elastream_id`, `_elastream_root`, `_elastream_key`, `_elastream_ts` (sink option
`metadata: false` leaves those out)."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from elastream.model.batch import EventBatch
from elastream.model.endpoints import SinkKind, SinkSpec
from elastream.model.pipeline import Pipeline, load_callable
from elastream.runtime.queues import ControlTable, TaskStore, open_store
from elastream.runtime.spark.ingest import check_creatable
from elastream.runtime.spark.redis_endpoint import check_redis, redis_client
from elastream.runtime.spark.sink_columns import (
    METADATA_FIELDS,
    SchemaKeeper,
    SinkColumnsError,
    SinkError,
    sink_table,
)

MAX_ROWS = 100_000  # events per delivered range at most
POLL_S = 0.05  # how often an idle writer looks for new events, s
REDIS_CHUNK = 5_000  # events per Lua call (one round trip)
PART = re.compile(r"^part-(\d{12})-(\d{12})\.(parquet|json|csv)$")
MARKER = "_elastream_sink.json"  # names the run whose parts a files sink folder holds
log = logging.getLogger(__name__)

# KEYS[1] the stream, KEYS[2] the delivered mark; ARGV[1] the first offset, ARGV[2] a msgpack
# list of events, each a flat list of field, value, field, value… Appends the events at offsets
# >= the mark, then raises the mark: atomic.
DELIVER = """
local done = tonumber(redis.call('GET', KEYS[2]) or '0')
local first = tonumber(ARGV[1])
local rows = cmsgpack.unpack(ARGV[2])
local added = 0
for k, row in ipairs(rows) do
  if first + k - 1 >= done then
    redis.call('XADD', KEYS[1], '*', unpack(row))
    added = added + 1
  end
end
if first + #rows > done then redis.call('SET', KEYS[2], first + #rows) end
return added
"""


def delivered_key(sink: str) -> str:
    """The store's meta key holding the offset below which `sink` is delivered."""
    return f"delivered:{sink}"


@dataclass
class SinkWriter:
    """One delivering sink: a driver thread that writes its queue's events in ranges."""

    spec: SinkSpec
    queues: str
    stop_event: threading.Event
    resume: bool
    spark: Any = None
    max_restarts: int = 5  # failed writes in a row before the run ends (spark.max_restarts)
    backoff_s: float = 1.0  # the first wait after a failed write, doubled each time in a row
    error: BaseException | None = None
    delivered: int = 0  # offsets below this are written
    restarts: int = 0  # failed writes retried, over the run

    def start(self) -> None:
        """Start the thread; return once it has recovered what was delivered before."""
        self._ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"elastream-sink-{self.spec.name}", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self.error is not None:
            raise SinkError(f"sink {self.spec.name!r}: {self.error}") from self.error

    def open(self) -> None:
        """This thread's store and deliverer, and the offset delivered so far (a SQLite
        connection serves only the thread that opened it)."""
        self.store = open_store(self.queues)
        self.deliver = self._deliverer()
        self.delivered = self.deliver.recover(
            int(self.store.meta(delivered_key(self.spec.name), 0))
        )
        self.store.set_meta(delivered_key(self.spec.name), self.delivered)

    def _deliverer(self) -> Deliverer:
        if self.spec.kind is SinkKind.FILES:
            return FilesDeliverer(self.spec, self.queues, self.store, self.resume, self.spark)
        if self.spec.kind is SinkKind.REDIS:
            return RedisDeliverer(self.spec, self.queues, self.stop_event, self.resume)
        return ForeachDeliverer(self.spec, self.store, self.spark)

    def _run(self) -> None:
        failed = 0  # writes failed in a row
        try:
            self.open()
            self._ready.set()
            store = self.store
            while True:
                latest = store.latest(self.spec.name)
                if latest <= self.delivered:
                    if self.stop_event.is_set():
                        break
                    time.sleep(POLL_S)
                    continue
                try:
                    self.write(store, self.delivered, min(latest, self.delivered + MAX_ROWS))
                    failed = 0
                except SinkColumnsError:
                    raise
                except (OSError, SinkError) as exc:
                    failed = self._failed(exc, failed)
        except BaseException as exc:  # surfaced by the engine at the next collect()
            self.error = exc
        finally:
            self._ready.set()
            if hasattr(self, "store"):
                self.store.close()

    def _failed(self, exc: BaseException, in_a_row: int) -> int:
        """A failed write is tried again after a backoff that doubles with each failure in a
        row; `max_restarts` in a row end the run with the last error."""
        if in_a_row >= self.max_restarts:
            raise exc
        log.warning(
            "sink %r: writing failed (%s); trying again (%d/%d)",
            self.spec.name,
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
            in_a_row + 1,
            self.max_restarts,
        )
        self.restarts += 1
        time.sleep(self.backoff_s * 2**in_a_row)
        return in_a_row + 1

    def write(self, store: TaskStore, start: int, end: int) -> None:
        """Deliver the events at offsets [start, end) (or the range a replay must repeat) and
        record the mark."""
        end = self.deliver.end(start, end)
        parts = store.read(self.spec.name, start, end)
        batch = EventBatch.concat([p.batch for p in parts])
        self.deliver(sink_table(batch, start, self.spec.metadata), start, end)
        store.set_meta(delivered_key(self.spec.name), end)
        self.delivered = end

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop once what is queued now is written (the caller has stopped the producers)."""
        self.stop_event.set()
        if hasattr(self, "_thread"):
            self._thread.join(timeout=timeout_s)


class Deliverer:
    """How one sink kind writes a range; `recover` gives the delivered offset after a crash."""

    def recover(self, mark: int) -> int:
        return mark

    def end(self, start: int, end: int) -> int:
        """Where the range from `start` ends: `end`, unless a replay must repeat another."""
        del start
        return end

    def __call__(self, table: pa.Table, start: int, end: int) -> None:
        raise NotImplementedError


class FilesDeliverer(Deliverer):
    """Part files `part-START-END.EXT` in the sink's folder, each written whole under a hidden
    name and renamed into place; the largest END there is what is delivered."""

    def __init__(
        self, spec: SinkSpec, queues: str, store: ControlTable, resume: bool, spark: Any
    ) -> None:
        self.spec = spec
        self.folder = Path(spec.path or "").resolve()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.run = str(Path(queues).resolve()) if "://" not in queues else queues
        declared = None
        if spec.schema_:
            declared = _declared_schema(spec, spark)
            if spec.metadata:  # elastream's columns after the declared ones
                declared = pa.schema([*declared, *METADATA_FIELDS])
        self.schema = SchemaKeeper(spec, store, declared)
        marker = self.folder / MARKER
        if not resume or not marker.exists():
            _write_json(marker, {"sink": spec.name, "run": self.run})

    def recover(self, mark: int) -> int:
        """Remove the hidden temporary files a crash left; the delivered offset is the largest
        end among the part files (a rename is the commit)."""
        for leftover in self.folder.glob(".part-*"):
            leftover.unlink(missing_ok=True)
        ends = [int(m.group(2)) for m in map(PART.match, os.listdir(self.folder)) if m]
        return max([mark, *ends])

    def __call__(self, table: pa.Table, start: int, end: int) -> None:
        table = self.schema.fit(table)
        name = f"part-{start:012d}-{end:012d}.{self.spec.format}"
        tmp = self.folder / f".{name}.tmp"
        _write_file(table, tmp, self.spec.format)
        os.replace(tmp, self.folder / name)


def _write_file(table: pa.Table, path: Path, fmt: str) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif fmt == "csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, path)
    else:  # JSON lines
        frame = table.to_pandas()
        frame.to_json(path, orient="records", lines=True, date_format="iso")


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)


def _declared_schema(spec: SinkSpec, spark: Any) -> pa.Schema:
    """A files sink's `schema` (Spark DDL) as an Arrow schema (Spark parses it)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    try:
        struct = StructType.fromDDL(spec.schema_ or "")
    except Exception as exc:  # Spark's parse error, in one line
        first = str(exc).strip().splitlines()[0]
        raise SinkError(f"sink {spec.name!r}: schema {spec.schema_!r}: {first}") from None
    return to_arrow_schema(struct)


class RedisDeliverer(Deliverer):
    """XADD each event (its fields: the payload's columns as text, then elastream's) beyond the
    delivered mark kept in the target Redis (`DELIVER`), a chunk per round trip; a restarting
    server is waited for while the run lasts."""

    def __init__(self, spec: SinkSpec, queues: str, stop: threading.Event, resume: bool) -> None:
        self.spec = spec
        self.stop = stop
        self.mark = redis_mark(spec, queues)
        self.client = redis_client(spec.url or "", 5.0)
        self.script = self.client.register_script(DELIVER)
        if not resume:  # a new run delivers from offset 0
            self.client.delete(self.mark)

    def recover(self, mark: int) -> int:
        return int(self.client.get(self.mark) or mark)

    def __call__(self, table: pa.Table, start: int, end: int) -> None:
        import msgpack

        names = table.column_names
        columns = [_texts(table.column(n)) for n in names]
        rows = [
            [v for pair in zip(names, values, strict=True) for v in pair]
            for values in zip(*columns, strict=True)
        ]
        for k in range(0, len(rows), REDIS_CHUNK):
            packed = msgpack.packb(rows[k : k + REDIS_CHUNK], use_bin_type=False)
            args = [start + k, packed]
            self._retry(lambda a=args: self.script(keys=[self.spec.stream, self.mark], args=a))

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


def _texts(column: pa.ChunkedArray) -> list[str]:
    """A column's values as the text a Redis field holds (strings as they are, the rest JSON)."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return ["" if v is None else v for v in column.to_pylist()]
    if pa.types.is_floating(column.type):
        return [repr(v) for v in column.to_pylist()]
    return [json.dumps(v, default=str) for v in column.to_pylist()]


def redis_mark(spec: SinkSpec, queues: str) -> str:
    """The key of a redis sink's delivered mark: one per stream, run store and sink."""
    return f"elastream:delivered:{spec.stream}:{queues}:{spec.name}"


class ForeachDeliverer(Deliverer):
    """The user's `fn(df, batch_id)`: each range's batch id and bounds are recorded before the
    call, so a replay after a crash calls it with the same id and rows (at least once, with the
    batch id to make the target idempotent, as Spark's foreachBatch)."""

    def __init__(self, spec: SinkSpec, store: ControlTable, spark: Any) -> None:
        self.spec = spec
        self.store = store
        self.spark = spark
        self.function = load_callable(spec.function or "", f"sink {spec.name!r} function")
        self.key = f"sink_batch:{spec.name}"

    def end(self, start: int, end: int) -> int:
        """A range recorded and not delivered is replayed whole: the same end (and id)."""
        recorded = self.store.meta(self.key)
        if recorded is not None and recorded["start"] == start:
            return int(recorded["end"])
        return end

    def __call__(self, table: pa.Table, start: int, end: int) -> None:
        recorded = self.store.meta(self.key)
        if recorded is not None and recorded["start"] == start:
            batch_id = int(recorded["id"])
        else:
            batch_id = 0 if recorded is None else int(recorded["id"]) + 1
            self.store.set_meta(self.key, {"id": batch_id, "start": start, "end": end})
        try:
            self.function(self.spark.createDataFrame(table), batch_id)
        except Exception as exc:  # the user's function: tried again with the same rows and id
            name = self.spec.function
            raise SinkError(f"{name} raised {type(exc).__name__}: {exc}") from exc


@dataclass
class Egress:
    """Every delivering sink of a run: a writer thread each, started before the operators'
    outputs reach them and stopped after."""

    pipeline: Pipeline
    queues: str
    max_restarts: int = 5
    backoff_s: float = 1.0
    writers: dict[str, SinkWriter] = field(default_factory=dict)
    stop_event: threading.Event = field(default_factory=threading.Event)

    @property
    def sinks(self) -> tuple[SinkSpec, ...]:
        return tuple(s for s in self.pipeline.sinks if s.delivered)

    def start(self, spark: Any, resume: bool) -> None:
        for spec in self.sinks:
            writer = SinkWriter(
                spec, self.queues, self.stop_event, resume, spark, self.max_restarts, self.backoff_s
            )
            writer.start()
            self.writers[spec.name] = writer

    def delivered(self, store: ControlTable, sink: str) -> int:
        """The offset below which `sink`'s events are written."""
        writer = self.writers.get(sink)
        return writer.delivered if writer else int(store.meta(delivered_key(sink), 0))

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

    def check(self) -> None:
        """Raise the first failure of a sink's writer (one that failed max_restarts times in a
        row)."""
        for name, writer in self.writers.items():
            if writer.error is not None:
                raise SinkError(f"sink {name!r} failed: {writer.error}")

    def restarts(self) -> dict[str, int]:
        """Failed writes retried per sink, over the run."""
        return {name: w.restarts for name, w in self.writers.items()}

    def stop(self, timeout_s: float = 60.0) -> None:
        """Write what is queued, then stop (the operators have stopped). Once."""
        if self.stop_event.is_set():
            return
        self.stop_event.set()
        for writer in self.writers.values():
            writer.stop(timeout_s)


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
            elif not resume and _earlier_output(folder):
                raise SinkError(
                    f"{what}: {spec.path} holds an earlier run's output; remove it, or give "
                    "--resume to carry that run on"
                )
        elif spec.kind is SinkKind.REDIS:
            check_redis(spec.url or "", what)
        elif spec.kind is SinkKind.FOREACH_BATCH:
            load_callable(spec.function or "", f"{what} function")
    return to_create


def _earlier_output(folder: Path) -> bool:
    """Whether a folder holds a run's sink output (its marker, part files, or the metadata log
    of Spark's file sink, which earlier elastream versions wrote)."""
    if (folder / MARKER).exists() or (folder / "_spark_metadata").exists():
        return True
    return any(PART.match(name) for name in os.listdir(folder))


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
