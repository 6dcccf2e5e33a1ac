"""External sources (files, redis, spark) appended to the first operators' queues, exactly once
and with backpressure (docs/sources-sinks.md).

files and spark sources are Spark streaming queries whose `foreachBatch` appends the batch's rows;
a redis source is a driver thread reading XREAD from a position recorded in the queue store.
Every append names its producer position (`QueueStore.append(q, events, source, first)`), which
the store de-duplicates: a batch Spark replays after a crash, or entries re-read from Redis, add
nothing twice. When a target queue holds `bound` pending events the append waits for room."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from elastream.base.extras import require
from elastream.model.batch import EventBatch, payload_table
from elastream.model.endpoints import SourceKind, SourceSpec
from elastream.model.pipeline import Pipeline, load_callable
from elastream.runtime.queues import ControlTable, TaskStore, open_store
from elastream.runtime.spark.backlog import query_backlog

if TYPE_CHECKING:  # redis is an extra: imported where a redis source or sink needs it
    import redis

CORRUPT = "_corrupt_record"  # Spark's column for a row its CSV/JSON reader could not parse
FILE_COL = "_elastream_file"
WAIT_S = 0.05  # how often a blocked append looks for room, s
REDIS_BLOCK_MS = 500  # XREAD's longest wait for new entries
REDIS_COUNT = 5_000  # entries read at most per XREAD
REDIS_CONNECT_S = 2.0  # a start-up check's connection timeout, s
DEFAULT_MAX_FILES = "64"  # files per micro-batch unless the source's options say otherwise


class SourceError(RuntimeError):
    """An external source that cannot run; the message names the source and the cause."""


class Stopped(RuntimeError):
    """The run stops while an append waits for room: the batch is not committed (a resumed run
    replays it, appending nothing twice)."""


def source_batch(
    pipeline: Pipeline, spec: SourceSpec, first: int, table: pa.Table, now: float | None = None
) -> EventBatch:
    """A source's rows, its events number `first`, `first + 1`, …, as one batch: root the
    source's position, key the `key` column as text (else the root's digits), timestamp now;
    the payload is the table itself (no row-by-row conversion)."""
    roots = pipeline.source_roots(spec.name, np.arange(first, first + table.num_rows))
    if spec.key is not None:
        if spec.key not in table.column_names:
            raise SourceError(f"source {spec.name!r}: key column {spec.key!r} is not in its rows")
        keys = pc.fill_null(pc.cast(table.column(spec.key), pa.string()), "None")
    else:
        keys = pc.cast(pa.array(roots), pa.string())
    return EventBatch.build(roots, keys, time.time() if now is None else now, table)


_threads = threading.local()


def thread_store(address: str) -> TaskStore:
    """This thread's connection to the store at `address` (Spark calls foreachBatch functions
    from its own threads, and a SQLite connection serves the thread that opened it)."""
    stores: dict[str, TaskStore] = _threads.__dict__.setdefault("stores", {})
    if address not in stores:
        stores[address] = open_store(address)
    return stores[address]


@dataclass
class Admission:
    """Appends a source's events to its targets, waiting while a target has no room (`bound`
    pending events: the runtime passes the smaller of q_size and ingest_bound): backpressure
    instead of a drop."""

    address: str  # the queue store's
    pipeline: Pipeline
    source: str
    targets: tuple[str, ...]
    bound: int
    stop: threading.Event
    offered: int = 0  # events appended over the run (the snapshot's λ comes from the store)

    @property
    def store(self) -> TaskStore:
        return thread_store(self.address)

    def position(self) -> int:
        """Where the source goes on: the fewest events any target has from it."""
        return min(self.store.produced(t, self.source) for t in self.targets)

    @property
    def spec(self) -> SourceSpec:
        return next(s for s in self.pipeline.sources if s.name == self.source)

    def append_table(self, first: int, table: pa.Table) -> None:
        """The rows of `table` as the source's events number first, first + 1, …"""
        self.append(first, source_batch(self.pipeline, self.spec, first, table))

    def append(self, first: int, events: EventBatch) -> None:
        """Offer events number first .. first + len - 1, in chunks that fit; the store skips
        the ones offered before."""
        done = 0
        while done < len(events):
            room = self._room()
            if room <= 0:
                if self.stop.is_set():
                    raise Stopped(f"source {self.source!r}: the run stops")
                time.sleep(WAIT_S)
                continue
            chunk = events.slice(done, min(len(events), done + room))
            store = self.store
            for target in self.targets:
                store.append(target, chunk, self.source, first + done)
            done += len(chunk)
        self.offered += len(events)

    def _room(self) -> int:
        store = self.store
        return min(self.bound - store.pending(t) for t in self.targets)


def batch_start(source: str, batch_id: int, admission: Admission) -> int:
    """The producer position of Spark micro-batch `batch_id`: recorded when the batch first
    ran, so that a replay appends at the same position (and adds nothing)."""
    store = admission.store
    key = f"ingest:{source}:{batch_id}"
    recorded = store.meta(key)
    if recorded is not None:
        return int(recorded)
    first = admission.position()
    store.set_meta(key, first)
    store.set_meta(f"ingest:{source}:{batch_id - 2}", None)  # older batches are never replayed
    return first


class DeadLetters:
    """Malformed rows of a files source, written as JSON lines (file, reason, record) to one
    file per micro-batch (rewritten whole on a replay)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def write(self, batch_id: int, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"batch-{batch_id:08d}.jsonl"
        tmp = target.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.replace(tmp, target)
        self.count += len(rows)


@dataclass
class FilesBatch:
    """A files source's foreachBatch: rows numbered within their file (id `source:file:row`),
    malformed ones to the dead letters, the rest appended."""

    spec: SourceSpec
    admission: Admission
    dead: DeadLetters
    base: str  # the source directory, as Spark writes file paths
    log: Path | None = None  # Spark's file-source log of the query (the files of each batch)
    files_seen: set[str] = field(default_factory=set)
    rows_seen: int = 0  # rows read from the files seen (good and malformed)

    def __call__(self, df: Any, batch_id: int) -> None:
        import pyarrow.compute as pc

        table = df.toArrow()
        files, index = file_rows(table.column(FILE_COL), self.base)
        broken = (
            pc.is_valid(table.column(CORRUPT))
            if CORRUPT in table.column_names
            else pa_false(len(table))
        )
        bad = self._malformed(table, files, index, broken)
        good = table.filter(pc.invert(broken)) if bad else table
        good = good.drop_columns([c for c in (FILE_COL, CORRUPT) if c in good.column_names])
        read = set(pc.unique(files).to_pylist())
        if self.spec.format == "parquet" and self.log is not None:
            bad += self._unreadable(batch_id, read)
        self.dead.write(batch_id, bad)
        first = batch_start(self.spec.name, batch_id, self.admission)
        self.admission.append_table(first, good)
        self.files_seen.update(read)
        self.rows_seen += len(table)
        self.admission.store.set_meta(
            files_key(self.spec.name), {"files": len(self.files_seen), "rows": self.rows_seen}
        )

    def _malformed(self, table: Any, files: Any, index: Any, broken: Any) -> list[dict]:
        """The dead letters of the rows Spark could not parse (file, row in it, reason)."""
        if not pc_any(broken):
            return []
        rows = table.filter(broken)
        reason = f"malformed {self.spec.format} record or a value not of the schema"
        return [
            {"file": f, "row": i, "reason": reason, "record": r}
            for f, i, r in zip(
                files.filter(broken).to_pylist(),
                index.filter(broken).to_pylist(),
                rows.column(CORRUPT).to_pylist(),
                strict=True,
            )
        ]

    def _unreadable(self, batch_id: int, read: set[str]) -> list[dict[str, Any]]:
        """The batch's Parquet files that gave no row and whose footer cannot be read (Spark
        skipped them: `ignoreCorruptFiles`), each as one dead letter naming file and reason."""
        import pyarrow.parquet as pq

        out = []
        for path in batch_files(self.log, batch_id) if self.log is not None else []:
            name = _relative(path, self.base)
            if name in read:
                continue
            try:
                pq.read_metadata(path.removeprefix("file://").removeprefix("file:"))
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                reason = f"unreadable Parquet file: {exc}"
                out.append({"file": name, "row": None, "reason": reason, "record": None})
                self.files_seen.add(name)
        return out


def batch_files(log: Path, batch_id: int) -> list[str]:
    """The files Spark's file stream source gave micro-batch `batch_id`, from its metadata log
    (`sources/0/N`, or the `N.compact` file that every tenth batch folds the earlier ones into)."""
    for name in (str(batch_id), f"{batch_id}.compact"):
        path = log / name
        if path.exists():
            entries = (json.loads(line) for line in path.read_text().splitlines()[1:] if line)
            return [e["path"] for e in entries if e.get("batchId", batch_id) == batch_id]
    return []


def logged_files(log: Path) -> set[str]:
    """Every file Spark's file-source log records as read (a resumed query's checkpoint)."""
    if not log.is_dir():
        return set()
    names = set()
    for path in log.iterdir():
        if path.name.split(".")[0].isdigit():
            lines = path.read_text().splitlines()[1:]
            names.update(json.loads(line)["path"] for line in lines if line)
    return names


def pa_false(n: int) -> Any:
    import pyarrow as pa

    return pa.array([False] * n, pa.bool_())


def pc_any(mask: Any) -> bool:
    import pyarrow.compute as pc

    return bool(pc.any(mask).as_py())


def file_rows(paths: Any, base: str) -> tuple[Any, Any]:
    """Each row's file (relative to the source directory) and its number within that file in
    the batch's order, computed column-wise (no Python per row)."""
    import numpy as np
    import pyarrow as pa

    encoded = paths.combine_chunks().dictionary_encode() if len(paths) else None
    if encoded is None:
        return pa.array([], pa.string()), pa.array([], pa.int64())
    names = pa.array([_relative(p, base) for p in encoded.dictionary.to_pylist()], pa.string())
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    n = len(codes)
    starts = np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return names.take(pa.array(codes)), pa.array(rank)


def _relative(path: str, base: str) -> str:
    """A file's name relative to the source directory (Spark gives file: URIs)."""
    local = path.removeprefix("file://").removeprefix("file:")
    try:
        return str(Path(local).relative_to(base))
    except ValueError:
        return local


@dataclass
class SparkBatch:
    """A spark source's foreachBatch: the micro-batch's rows appended as Arrow, at the position
    recorded for its batch id (a replayed batch adds nothing)."""

    spec: SourceSpec
    admission: Admission

    def __call__(self, df: Any, batch_id: int) -> None:
        first = batch_start(self.spec.name, batch_id, self.admission)
        self.admission.append_table(first, df.toArrow())


def redis_client(url: str, timeout_s: float | None = None) -> redis.Redis:
    """A client of the Redis server at `url` (decoded strings)."""
    import redis

    return redis.Redis.from_url(
        url, decode_responses=True, socket_connect_timeout=timeout_s, socket_timeout=timeout_s
    )


def check_redis(url: str, what: str) -> None:
    """Fail at once, in one line naming `what`, when the Redis server at `url` does not answer
    (or the redis extra is not installed)."""
    redis = require("redis", extra="redis", feature=what)
    try:
        redis_client(url, REDIS_CONNECT_S).ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        raise SourceError(f"{what}: Redis at {url} is unreachable ({exc})") from None


@dataclass
class RedisReader:
    """A redis source: a driver thread appending the stream's entries (id `source:entry id`,
    payload the entry's fields) to its targets.

    Before each append it records (producer position, entry id it reads after) in the queue
    store. After a crash it reads again from the recorded entry id: the same entries in the same
    order, which the store's position de-duplicates, so each entry is appended exactly once.
    Connection errors (a restarting server) are retried while the run lasts."""

    spec: SourceSpec
    admission: Admission
    error: BaseException | None = None
    lag: int | None = None  # entries added to the stream and not yet appended (last measured)
    _probe: redis.Redis | None = None  # the client `measure_lag` uses

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"elastream-redis-{self.spec.name}")
        self._thread.daemon = True
        self._thread.start()

    def join(self) -> None:
        if hasattr(self, "_thread"):
            self._thread.join(timeout=10)

    @property
    def _key(self) -> str:
        return f"redis_source:{self.spec.name}"

    def _run(self) -> None:
        import redis

        store = self.admission.store
        client = redis_client(self.spec.url or "", 5.0)
        recorded = store.meta(self._key) or {"first": 0, "after": "0-0"}
        first, after = int(recorded["first"]), str(recorded["after"])
        while not self.admission.stop.is_set():
            try:
                first, after = self._step(client, store, first, after)
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                time.sleep(0.5)  # a restarting server: read again from the recorded place
            except Stopped:
                break
            except BaseException as exc:  # surfaced by the engine at the next collect()
                self.error = exc
                break

    def _step(self, client: redis.Redis, store: ControlTable, first: int, after: str) -> tuple:
        reply = client.xread({self.spec.stream: after}, count=REDIS_COUNT, block=REDIS_BLOCK_MS)
        entries = reply[0][1] if reply else []
        if not entries:
            return first, after
        table = payload_table([fields for _, fields in entries])
        self.admission.append_table(first, table)
        last = entries[-1][0]
        store.set_meta(self._key, {"first": first + len(entries), "after": last})
        return first + len(entries), last

    def measure_lag(self) -> int | None:
        """Entries added to the stream and not appended yet, now: XINFO `entries-added` minus
        the source's position in its targets (measured by the caller's thread, so that it is
        current while the reader waits for room). The last value when Redis does not answer."""
        import redis

        if self._probe is None:
            self._probe = redis_client(self.spec.url or "", REDIS_CONNECT_S)
        try:
            stream = self.spec.stream
            info = self._probe.xinfo_stream(stream) if self._probe.exists(stream) else {}
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
            return self.lag  # a restarting server: the last known lag
        added = info.get("entries-added", 0)
        self.lag = None if added is None else max(0, int(added) - self.admission.position())
        return self.lag


@dataclass
class Ingest:
    """Every external source of a run: started after the operator queries, stopped before them.
    A failed files or spark query is restarted by the runtime (`failed`, `restart`); `check()`
    raises a redis reader's failure."""

    pipeline: Pipeline
    queues: str
    bound: int
    checkpoints: Path
    out: Path
    stop_event: threading.Event = field(default_factory=threading.Event)
    queries: dict[str, Any] = field(default_factory=dict)
    readers: dict[str, RedisReader] = field(default_factory=dict)
    files: dict[str, FilesBatch] = field(default_factory=dict)
    handlers: dict[str, Callable[[Any, int], None]] = field(default_factory=dict)

    def start(self, spark: Any, store: ControlTable) -> None:
        for spec in self.pipeline.sources:
            if spec.kind is SourceKind.REDIS:
                reader = RedisReader(spec, self._admission(spec))
                reader.start()
                self.readers[spec.name] = reader
            elif spec.external:
                self.queries[spec.name] = self._start_query(spark, store, spec)

    def _admission(self, spec: SourceSpec) -> Admission:
        targets = self.pipeline.successors(spec.name)
        return Admission(
            self.queues, self.pipeline, spec.name, targets, self.bound, self.stop_event
        )

    def _start_query(self, spark: Any, store: ControlTable, spec: SourceSpec) -> Any:
        """Start (or start again, from its checkpoint) a files or spark source's query; its
        foreachBatch handler is made once, so a restarted query keeps what the source has read."""
        if spec.kind is SourceKind.FILES:
            frame = files_frame(spark, spec, store)
        else:
            build = load_callable(spec.function or "", f"source {spec.name!r} function")
            frame = build(spark)
        if spec.name not in self.handlers:
            self.handlers[spec.name] = self._handler(spec)
        handler = self.handlers[spec.name]
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", f"source-{spec.name}")
        return (
            frame.writeStream.foreachBatch(handler)
            .queryName(f"elastream-source-{spec.name}")
            .option("checkpointLocation", str(self._checkpoint(spec)))
            .trigger(processingTime="0.5 seconds")
            .start()
        )

    def _handler(self, spec: SourceSpec) -> Callable[[Any, int], None]:
        """The foreachBatch function of a files or spark source (it runs in this process)."""
        admission = self._admission(spec)
        if spec.kind is SourceKind.SPARK:
            return SparkBatch(spec, admission)
        dead = DeadLetters(Path(spec.dead_letter or self.out / "dead-letter" / spec.name))
        log = self._checkpoint(spec) / "sources" / "0"
        handler = FilesBatch(spec, admission, dead, str(Path(spec.path or "").resolve()), log)
        seen = admission.store.meta(files_key(spec.name))  # what a resumed run had read
        if seen:
            handler.files_seen.update(_relative(f, handler.base) for f in logged_files(log))
            handler.rows_seen = round(
                int(seen["rows"]) * len(handler.files_seen) / max(1, seen["files"])
            )
        self.files[spec.name] = handler
        return handler

    def _checkpoint(self, spec: SourceSpec) -> Path:
        return (self.checkpoints / f"source-{spec.name}").resolve()

    def failed(self) -> list[tuple[str, Any]]:
        """(source, error) of every source query that stopped with an error while the run lasts
        (the runtime restarts it: `restart`)."""
        if self.stop_event.is_set():
            return []
        failures = ((name, query.exception()) for name, query in self.queries.items())
        return [(name, error) for name, error in failures if error is not None]

    def restart(self, spark: Any, name: str) -> None:
        """Start source `name`'s query again from its checkpoint: Spark replays the batch that
        failed with the same files (or offsets) and batch id, which `batch_start` appends at the
        position it recorded, so nothing is added twice."""
        spec = next(s for s in self.pipeline.sources if s.name == name)
        self.queries[name] = self._start_query(spark, thread_store(self.queues), spec)

    def check(self) -> None:
        """Raise the first failure of a redis source's reader (a failed query is restarted)."""
        for name, reader in self.readers.items():
            if reader.error is not None:
                raise SourceError(f"source {name!r} failed: {reader.error}")

    def backlog(self) -> dict[str, int | None]:
        """What each external source can tell of its backlog, in events: files not yet read
        times the mean events per file read so far, Redis entries not yet appended (None:
        unknown, e.g. before a files source read its first file)."""
        out: dict[str, int | None] = {}
        for spec in self.pipeline.sources:
            if spec.kind is SourceKind.FILES:
                out[spec.name] = _unread_files(Path(spec.path or ""), self.files[spec.name])
            elif spec.kind is SourceKind.REDIS:
                out[spec.name] = self.readers[spec.name].measure_lag()
            elif spec.external:
                out[spec.name] = query_backlog(self.queries[spec.name].lastProgress)
        return out

    def stop(self, stop_query: Callable[[Any], None]) -> None:
        """Stop reading: the readers' threads end, each query stops (a batch waiting for room is
        abandoned uncommitted: a resumed run replays it). Once."""
        if self.stop_event.is_set():
            return
        self.stop_event.set()
        for reader in self.readers.values():
            reader.join()
        for query in self.queries.values():
            stop_query(query)


def _unread_files(folder: Path, handler: FilesBatch) -> int | None:
    """The events in the files not read yet, estimated from the files read so far."""
    names = (str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    visible = [n for n in names if not Path(n).name.startswith((".", "_"))]
    unread = sum(1 for n in visible if n not in handler.files_seen)
    if unread == 0:
        return 0
    if not handler.files_seen:
        return None
    return round(unread * handler.rows_seen / len(handler.files_seen))


SCHEMA_KEY = "source_schema:{}"


def files_key(source: str) -> str:
    """The store's meta key of the files a files source has read, and their rows."""
    return f"files_read:{source}"


def files_frame(spark: Any, spec: SourceSpec, store: ControlTable) -> Any:
    """The streaming DataFrame of a files source: its schema (declared, else inferred once from
    the files present and recorded in the store), malformed CSV/JSON rows kept in CORRUPT, and
    each row's file."""
    schema = spec.schema_ or store.meta(SCHEMA_KEY.format(spec.name))
    fmt = spec.format or "json"
    options = {"maxFilesPerTrigger": DEFAULT_MAX_FILES, **spec.options}
    if fmt == "parquet":  # a corrupt file is skipped, then sent to the dead letters by name
        options = {"ignoreCorruptFiles": "true", **options}
    if schema is None:
        schema = infer_schema(spark, spec, options)
        store.set_meta(SCHEMA_KEY.format(spec.name), schema)
    if fmt in ("csv", "json") and CORRUPT not in schema:
        schema = f"{schema}, {CORRUPT} STRING"
        options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, **options}
    reader = spark.readStream.format(fmt).schema(schema).options(**options)
    frame = reader.load(str(Path(spec.path or "").resolve()))
    return frame.selectExpr("*", f"_metadata.file_path AS {FILE_COL}")


def infer_schema(spark: Any, spec: SourceSpec, options: dict[str, str]) -> str:
    """The schema Spark infers from the files in the source directory now, as DDL."""
    folder = Path(spec.path or "")
    if not any(p.is_file() for p in folder.iterdir()):
        raise SourceError(
            f"source {spec.name!r}: no `schema` given and no file in {folder} to infer it from"
        )
    static = {k: v for k, v in options.items() if k != "maxFilesPerTrigger"}
    inferred = spark.read.format(spec.format).options(**static).load(str(folder.resolve()))
    return inferred.schema.toDDL()


def check_sources(pipeline: Pipeline, resume: bool = False) -> list[Path]:
    """Start-up checks, before Spark starts, creating nothing: a files source's directory is
    there and readable, with a file to infer its schema from when it declares none (a resumed
    run has the schema it recorded), or, when it declares its schema, can be created (files
    will arrive: the run creates it); a redis source's server answers; a spark source's
    function imports. One line naming the culprit. Returns the directories to create."""
    to_create = []
    for spec in pipeline.sources:
        what = f"source {spec.name!r}"
        if spec.kind is SourceKind.FILES:
            folder = Path(spec.path or "")
            if check_directory(folder, spec.schema_ is not None, what):
                to_create.append(folder)
            elif spec.schema_ is None and not resume:
                check_data_file(folder, what)
        if spec.kind is SourceKind.REDIS:
            check_redis(spec.url or "", what)
        if spec.kind is SourceKind.SPARK:
            load_callable(spec.function or "", f"{what} function")
    return to_create


def check_directory(folder: Path, create: bool, what: str) -> bool:
    """A files source's directory: there and readable (False), or absent and, if `create`,
    creatable (True: to be created); SourceError in one line otherwise."""
    if folder.is_dir():
        if not os.access(folder, os.R_OK | os.X_OK):
            raise SourceError(f"{what}: cannot read {folder} (permission denied)")
        return False
    if folder.exists() or not create:
        reason = "is not a directory" if folder.exists() else "does not exist"
        hint = "" if folder.exists() else " (declare `schema` to have it created)"
        raise SourceError(f"{what}: {folder} {reason}{hint}")
    check_creatable(folder, what, SourceError)
    return True


def check_creatable(folder: Path, what: str, error: type[RuntimeError]) -> None:
    """`folder` can be created: tried, and what was made removed again (deepest first)."""
    made = [p for p in [folder, *folder.absolute().parents] if not p.exists()]
    try:
        folder.mkdir(parents=True)
    except OSError as exc:
        raise error(f"{what}: cannot create {folder} ({exc.strerror or exc})") from None
    finally:
        for path in made:
            if path.is_dir():
                path.rmdir()


def check_data_file(folder: Path, what: str) -> None:
    """A files source without a declared schema needs a file to infer it from (Spark reads no
    file whose name starts with `_` or `.`)."""
    if not any(p.is_file() and not p.name.startswith(("_", ".")) for p in folder.iterdir()):
        raise SourceError(
            f"{what}: no `schema` given and no file in {folder} to infer it from (declare "
            "`schema`, or put a file there first)"
        )
