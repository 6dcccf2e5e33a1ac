"""External sources (files, redis, spark) appended to the first operators' queues, exactly once
and with backpressure (docs/sources-sinks.md).

files and spark sources are Spark streaming queries whose `foreachBatch` appends the batch's rows;
a redis source is a driver thread reading XREAD from a position recorded in the queue store.
Every append names its producer position (`QueueStore.append(q, events, source, first)`), which
the store de-duplicates: a batch Spark replays after a crash, or entries re-read from Redis, add
nothing twice. When a target queue holds `bound` pending events the append waits for room."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elastream.model.endpoints import SourceKind, SourceSpec
from elastream.model.pipeline import Pipeline, load_callable
from elastream.runtime.queues import ControlTable
from elastream.runtime.spark.admission import (
    Admission,
    SourceError,
    batch_start,
    thread_store,
)
from elastream.runtime.spark.backlog import query_backlog
from elastream.runtime.spark.files_source import (
    DeadLetters,
    FilesBatch,
    files_frame,
    files_key,
    logged_files,
    relative_name,
    unread_files,
)
from elastream.runtime.spark.redis_endpoint import check_redis
from elastream.runtime.spark.redis_source import RedisReader


@dataclass
class SparkBatch:
    """A spark source's foreachBatch: the micro-batch's rows appended as Arrow, at the position
    recorded for its batch id (a replayed batch adds nothing)."""

    spec: SourceSpec
    admission: Admission

    def __call__(self, df: Any, batch_id: int) -> None:
        first = batch_start(self.spec.name, batch_id, self.admission)
        self.admission.append_table(first, df.toArrow())


@dataclass
class Ingest:
    """Every external source of a run: started once the operator queries have made their own
    sources (their first batches may still run), stopped before them.
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

    @property
    def started(self) -> bool:
        """Some external source reads (a query or a redis reader started)."""
        return bool(self.queries or self.readers)

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
            handler.files_seen.update(relative_name(f, handler.base) for f in logged_files(log))
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
                out[spec.name] = unread_files(Path(spec.path or ""), self.files[spec.name])
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
