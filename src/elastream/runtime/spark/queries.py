"""The Spark runtime's query lifecycle: the operator queries started (one per operator, or one
for the whole pipeline), watched, restarted from their checkpoints when they fail, stopped."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from elastream.config import RunConfig
from elastream.model.pipeline import Pipeline
from elastream.runtime.queues import QueueStore
from elastream.runtime.spark.ingest import Ingest
from elastream.runtime.spark.pipeline_source import PIPELINE_SOURCE_NAME
from elastream.runtime.spark.session import stop_query
from elastream.runtime.spark.source import SOURCE_NAME

PIPELINE_QUERY = "_pipeline"  # the query (and checkpoint folder) of the `pipeline` layout
log = logging.getLogger(__name__)


class RuntimeFailure(RuntimeError):
    """A query died or the feeder failed; the message names the operator and the cause."""


@dataclass
class Failing:
    """A query that failed: how many times in a row, and its last batch before the failure."""

    in_a_row: int
    last_batch: int


def last_batch(query: Any) -> int:
    """The id of the query's latest reported micro-batch (-1 before the first)."""
    progress = query.lastProgress
    return int(progress["batchId"]) if progress else -1


def query_label(name: str) -> str:
    """How messages name a query."""
    if name == PIPELINE_QUERY:
        return "the pipeline's query"
    return f"the query of operator {name!r}"


class Queries:
    """The run's streaming queries, their run ids and restarts (`spark` is set once the run's
    session is up)."""

    def __init__(
        self, pipeline: Pipeline, config: RunConfig, queues: str, checkpoints: Path
    ) -> None:
        self.pipeline = pipeline
        self.config = config
        self.queues = queues
        self.checkpoints = checkpoints
        self.spark: Any = None
        self.running: dict[str, Any] = {}  # every query started, by name
        self.stopped = False  # every query stopped for good (stop_all)
        self.run_ids: dict[str, set[str]] = {}
        self.restarts: dict[str, int] = {}  # per operator (source-NAME, sink-NAME), over the run
        self.failing: dict[str, Failing] = {}  # queries that failed and have not recovered

    def names(self) -> list[str]:
        """The run's queries: one per operator, or the one PIPELINE_QUERY (`spark.layout`)."""
        if self.config.spark.layout == "pipeline":
            return [PIPELINE_QUERY]
        return list(self.pipeline.topological_order)

    def start(self, name: str, new_run: bool = True) -> None:
        """Start query `name` from its checkpoint (in its own FAIR pool)."""
        sc = self.spark.sparkContext
        sc.setLocalProperty("spark.scheduler.pool", name)
        if name == PIPELINE_QUERY:  # every operator's replicas are partitions of one query
            reader = self.spark.readStream.format(PIPELINE_SOURCE_NAME).option("db", self.queues)
        else:
            reader = (
                self.spark.readStream.format(SOURCE_NAME)
                .option("db", self.queues)
                .option("op", name)
            )
        writer = (
            reader.load()
            .writeStream.format("noop")
            .queryName(f"elastream-{name}")
            .option("checkpointLocation", str((self.checkpoints / name).resolve()))
        )
        spark = self.config.spark
        if spark.async_progress:  # needs a processing-time trigger (0 s: back to back)
            interval_ms = str(round(spark.progress_interval_s * 1000))
            writer = writer.option("asyncProgressTrackingEnabled", "true")
            writer = writer.option("asyncProgressTrackingCheckpointIntervalMs", interval_ms)
        writer = writer.trigger(processingTime=f"{spark.trigger_s} seconds")
        query = writer.start()
        self.running[name] = query
        if new_run:
            self.run_ids[name] = set()
        self.run_ids[name].add(str(query.runId))

    def await_sources(self, name: str, check: Callable[[], None], timeout_s: float = 120.0) -> None:
        """Wait until query `name` has made its sources (a Python source's helper process has
        connected to the JVM) or has stopped (`check` raises a failure)."""
        deadline = time.time() + timeout_s
        query = self.running[name]
        while time.time() < deadline:
            check()
            if not str(query.status["message"]).startswith("Initializing"):
                return
            time.sleep(0.1)
        raise RuntimeFailure(
            f"{query_label(name)} did not make its sources within {timeout_s:.0f} s"
        )

    def await_first_batches(self, check: Callable[[], None], timeout_s: float = 120.0) -> None:
        """Wait until every query has planned and run its first (empty) micro-batch, so the
        feeder does not start the clock during Spark's cold start (`check` raises a failure)."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            check()
            if all(q.lastProgress is not None for q in self.running.values()):
                return
            time.sleep(0.2)
        raise RuntimeFailure(f"the operator queries did not start within {timeout_s:.0f} s")

    def heal(self) -> None:
        """Restart every failed operator query from its checkpoint (the store's bookkeeping
        keeps it exactly-once); note the ones that recovered."""
        for name, query in list(self.running.items()):
            error = query.exception()
            if error is not None or not query.isActive:
                restart = partial(self.start, name, new_run=False)
                self.restart(name, query_label(name), query, error, restart)
            else:
                self.note_recovery(name, query)
            self.run_ids[name].add(str(self.running[name].runId))

    def heal_io(self, io: Ingest, kind: str) -> None:
        """Restart the failed query of an external source or a delivering sink (`kind`) as an
        operator's: from its checkpoint, the same backoff, limit and count (key `kind-NAME`)."""
        for name, error in io.failed():
            label = f"the query of {kind} {name!r}"
            restart = partial(io.restart, self.spark, name)
            self.restart(f"{kind}-{name}", label, io.queries[name], error, restart)
        for name, query in io.queries.items():
            self.note_recovery(f"{kind}-{name}", query)

    def restart(
        self, key: str, label: str, query: Any, error: Any, start: Callable[[], Any]
    ) -> None:
        """Stop `query` and `start()` it again from its checkpoint, after a backoff that
        doubles with each failure in a row; a query that fails `max_restarts` times in a row
        without completing a batch ends the run."""
        spark = self.config.spark
        failing = self.failing.get(key) or Failing(0, last_batch(query))
        if failing.in_a_row >= spark.max_restarts:
            raise RuntimeFailure(
                f"{label} stopped {failing.in_a_row + 1} times in a row "
                f"(restarts: {spark.max_restarts}): {error}"
            )
        first_line = str(error).strip().splitlines()[0] if error is not None else "not active"
        log.warning(
            "%s failed (%s); restarting it from its checkpoint (%d/%d)",
            label,
            first_line,
            failing.in_a_row + 1,
            spark.max_restarts,
        )
        stop_query(self.spark, query)
        time.sleep(spark.restart_backoff_s * 2**failing.in_a_row)
        start()
        self.failing[key] = Failing(failing.in_a_row + 1, failing.last_batch)
        self.restarts[key] = self.restarts.get(key, 0) + 1

    def note_recovery(self, name: str, query: Any) -> None:
        """A restarted query that has completed a batch since its failure is healthy again."""
        failing = self.failing.get(name)
        if failing is not None and last_batch(query) > failing.last_batch:
            del self.failing[name]

    def stop_all(self, store: QueueStore) -> None:
        """Stop every operator query: no batch commits after this, so the totals read next
        are the final ones (a batch cut short leaves its events queued for --resume)."""
        if not self.running or self.stopped:
            return
        # In-flight empty batches interrupted by stop() log aborted commits: not errors.
        self.spark.sparkContext.setLogLevel("FATAL")
        for query in self.running.values():
            stop_query(self.spark, query)
        self.stopped = True  # kept in `running`: their progress is read after the run
        self.await_quiet(store)
        self.spark.sparkContext.setLogLevel("ERROR")

    def await_quiet(self, store: QueueStore, timeout_s: float = 30.0, still_s: float = 1.0) -> None:
        """After the queries stopped: wait until Spark runs no task and the queues have not
        changed for `still_s` (a replica's task cut short may still commit its share)."""
        tracker = self.spark.sparkContext.statusTracker()
        deadline = time.time() + timeout_s
        while tracker.getActiveStageIds() and time.time() < deadline:
            time.sleep(0.1)
        last, still_since = None, time.time()
        while time.time() < deadline:
            now = [store.pending(op) for op in self.pipeline.operator_names]
            if now != last:
                last, still_since = now, time.time()
            elif time.time() - still_since >= still_s:
                return
            time.sleep(0.2)
