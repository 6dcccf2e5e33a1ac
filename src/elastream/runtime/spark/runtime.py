"""The Spark runtime engine: the Engine protocol (collect → decide → enact) on Spark, in three
parts: measuring (measure.py), realizing a plan (replicas.py, hosts.py) and the query lifecycle
(queries.py, driver.py); one query per operator or one for the whole pipeline (`spark.layout`),
live replica changes, no restart."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from pyspark import SparkContext

from elastream.config import RunConfig, SparkSettings
from elastream.control.features import (
    GracefulStop,
    Hosts,
    LeasedHosts,
    MessageTransport,
    Preflight,
)
from elastream.control.policy import Decision, Lease, Placement
from elastream.leasing.hosts import Host
from elastream.model.metrics import RunTotals, latency_histogram
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot
from elastream.runtime.queues import QueueStore, store_exists
from elastream.runtime.spark.driver import jvm_running, log_ui, open_session, task_slots
from elastream.runtime.spark.egress import Egress, check_sinks
from elastream.runtime.spark.executors import Executors
from elastream.runtime.spark.feeder import Feeder
from elastream.runtime.spark.hosts import ExecutorHosts, adopt_hosts
from elastream.runtime.spark.ingest import Ingest, check_sources
from elastream.runtime.spark.java import check_java
from elastream.runtime.spark.logs import jvm_log_conf, redirect_jvm_logs, send_jvm_stderr
from elastream.runtime.spark.measure import Monitor
from elastream.runtime.spark.queries import PIPELINE_QUERY, Queries, RuntimeFailure
from elastream.runtime.spark.replicas import Replicas
from elastream.runtime.spark.run_store import prepare_store, store_address
from elastream.runtime.spark.session import (
    launched_by_spark_submit,
    stop_query,
    ui_conf,
    warm_python_workers,
)
from elastream.runtime.spark.source import open_interval
from elastream.runtime.spark.watermark import END_OF_INPUT, declare_end_of_input, flushed
from elastream.runtime.tcp import transport as tcp_transport
from elastream.workloads.trace import Trace

# how often, within an interval, a leased executor's registration and a first et_i are looked for, s
HOST_POLL_S = 0.25
log = logging.getLogger(__name__)
__all__ = ["PIPELINE_QUERY", "RuntimeFailure", "SparkEngine", "store_address"]


class Phases:
    """How long each phase of the start took (one log line: where a run's start-up goes)."""

    def __init__(self) -> None:
        self.mark = time.perf_counter()
        self.took: list[tuple[str, float]] = []

    def end(self, phase: str) -> None:
        now = time.perf_counter()
        self.took.append((phase, now - self.mark))
        self.mark = now

    def __str__(self) -> str:
        total = sum(s for _, s in self.took)
        return f"{total:.1f} s: " + ", ".join(f"{phase} {s:.1f} s" for phase, s in self.took)


def leased(hosts: ExecutorHosts | None) -> ExecutorHosts:
    """The run's leased hosts; RuntimeFailure for a run that leases none."""
    if hosts is None:
        raise RuntimeFailure("this run leases no hosts: set spark.leasing in the run settings")
    return hosts


def check_feeder(feeder: Feeder | None) -> None:
    """RuntimeFailure with the source feeder's error, if it failed."""
    if feeder is not None and feeder.error is not None:
        raise RuntimeFailure(f"the source feeder failed: {feeder.error}")


def session_conf(spark: SparkSettings) -> dict[str, str]:
    """The Spark settings a run starts its session with: the UI's, then the user's
    (`spark.conf` wins); with `spark.leasing`, graceful release and executors of `slots` cores
    (without it a standalone worker gives an executor all its cores, paid for while the host
    planner fills only `slots` of them)."""
    conf = {**ui_conf(spark.ui, spark.ui_port), **spark.conf}
    if spark.leasing is not None:
        if not spark.standalone:
            raise RuntimeFailure(
                "spark.leasing leases executors of a standalone cluster: give "
                "--spark-master spark://HOST:PORT (elastream cluster up starts one)"
            )
        conf.setdefault("spark.decommission.enabled", "true")
        conf.setdefault("spark.executor.cores", str(spark.leasing.slots))
    return conf


class SparkEngine:
    """Implements the Engine protocol on a real (local or standalone) Spark cluster."""

    features = frozenset({Hosts, LeasedHosts, GracefulStop, MessageTransport, Preflight})
    # the decentralized policy's agents live in the driver and talk over TCP (docs/decentralized.md)
    message_transport = tcp_transport.NAME

    def __init__(
        self,
        pipeline: Pipeline,
        config: RunConfig,
        trace: Trace,
        *,
        resume: bool = False,
        keep_session: bool = False,
        spark: Any = None,
    ) -> None:
        self.pipeline = pipeline
        self.config = config
        self.trace = trace  # the session has cut it to the run's duration
        self.out = Path(config.out)
        self.queues = store_address(config)
        self.resume = resume
        self.keep_session = keep_session or spark is not None  # never stop the caller's
        self.given_session = spark  # a SparkSession to run in (the Python API's spark=)
        self.stop_requested = threading.Event()  # request_stop(): SIGINT, SIGTERM
        self.aborted = False  # abort(): a second signal; the JVM is gone
        self.stopping_since: float | None = None  # when the sources stopped on request
        self.queries = Queries(pipeline, config, self.queues, self.checkpoints)
        self.restarts_seen = 0  # query restarts reported in a snapshot already
        self.leases: ExecutorHosts | None = None  # executors leased as hosts (spark.leasing)
        self.ingest: Ingest | None = None  # external sources' reading (started by start())
        self.ingest_from = 0.0  # when they started: the first interval's start (wall-clock s)
        self.egress: Egress | None = None  # delivering sinks' writers (started by start())
        self.to_create: list[Path] | None = None  # folders the checks found missing (check())
        self.t0 = time.time()  # the run's clock starts when the feeder does (start())

    # -- Engine protocol ---------------------------------------------------------------------
    def check(self) -> list[str]:
        """Preflight: what can be checked before Spark starts — Java (unless a JVM runs
        already), the sources, the sinks, the functions, the store a resumed run needs — one
        line naming the first problem; nothing is created. Returns what it checked."""
        jvm = jvm_running(self.given_session) or launched_by_spark_submit()
        done = ["Java: the JVM running already" if jvm else check_java()]
        self.pipeline.check_imports()
        done.append("every function and generator imports")
        sources = check_sources(self.pipeline, self.resume)
        sinks = check_sinks(self.pipeline, self.resume)
        done.append("the sources are readable and the sinks writable")
        done += [f"{folder} is created when the run starts" for folder in [*sources, *sinks]]
        if self.resume and not store_exists(self.queues):
            raise RuntimeFailure(f"nothing to resume: no queue store at {self.queues}")
        self.to_create = [*sources, *sinks]
        return done

    def start(self) -> None:
        phases = Phases()
        if self.to_create is None:  # not checked yet (the run session checks first)
            self.check()
        for folder in self.to_create or []:
            folder.mkdir(parents=True, exist_ok=True)
        self.open_store()
        phases.end("checks and store")
        spark = self.config.spark
        conf = jvm_log_conf(self.out, session_conf(spark))  # Spark's log lines to spark.log
        self.spark, callers = open_session(
            self.pipeline, self.config, self.out, self.given_session, conf
        )
        self.keep_session = self.keep_session or callers
        self.queries.spark = self.spark
        if launched_by_spark_submit():  # its JVM started with Spark's own logging: ours now
            redirect_jvm_logs(self.spark, self.out)
        send_jvm_stderr(self.spark, self.out)  # uncaught JVM stacks to spark.log, not the console
        log_ui(self.spark, self.config)
        phases.end("Spark session")
        if spark.leasing is not None:
            self.leases = adopt_hosts(Executors(self.spark), spark.leasing)
        self._start_queries_and_sources()
        phases.end("operator queries with the Python workers and the sources")
        self._start_egress()
        phases.end("sinks")
        log.info("started in %s", phases)
        resume_at = float(self.store.meta("trace_elapsed", 0.0)) if self.resume else 0.0
        self.feeder = Feeder(
            self.pipeline,
            self.queues,
            self.trace,
            self.config.seed,
            resume_at=resume_at,
            forever=self.config.unbounded,
        )
        self.t0 = time.time() - resume_at
        self.started_at = time.time()
        # the first interval holds what the external sources appended while the start ended
        self.t_prev = self.ingest_from if self.ingest and self.ingest.started else self.started_at
        open_interval(self.store, self.t_prev, self.config.interval_s)
        self.feeder.start()

    def _start_queries_and_sources(self) -> None:
        """The operator queries, one at a time, with the pool's Python workers starting beside
        them (each is serial work on one core: the daemon's imports, the queries' Python
        helpers; on two cores they take the longer one's time, not both); the external
        sources once the last query has made its own, so their first batches read while its
        first batch runs (results.md, 30 Nov)."""
        with ThreadPoolExecutor(1, thread_name_prefix="elastream-warm") as beside:
            warming = beside.submit(warm_python_workers, self.spark, task_slots(self.pipeline))
            *first, last = self.queries.names()
            for name in first:
                # One at a time: each query forks a Python helper that must connect back to
                # the JVM within 10 s (fixed in Spark); forked together on a loaded machine
                # they missed it.
                self.queries.start(name)
                self.queries.await_first_batches(self.check_health)
            self.queries.start(last)
            self.queries.await_sources(last, self.check_health)
            self._start_ingest()
            self.queries.await_first_batches(self.check_health)
            warming.result()

    def open_store(self) -> None:
        """The run's queue store prepared, the replica counts loaded and published in it."""
        self.store: QueueStore = prepare_store(
            self.pipeline, self.config, self.queues, self.checkpoints, self.resume
        )
        self.replicas = Replicas(self.pipeline, self.store, self.config.spark.batch_s)
        self.replicas.load(self.resume)
        self.monitor = Monitor(self.pipeline, self.store, self.replicas)

    def _start_ingest(self) -> None:
        """The external sources' queries and readers (runtime/spark/ingest.py)."""
        bound = min(
            self.config.queue_capacity or self.config.ingest_bound, self.config.ingest_bound
        )
        self.ingest = Ingest(self.pipeline, self.queues, bound, self.checkpoints, self.out)
        self.ingest_from = time.time()
        open_interval(self.store, self.ingest_from, self.config.interval_s)
        self.ingest.start(self.spark, self.store)

    def _start_egress(self) -> None:
        """The delivering sinks' writers (runtime/spark/egress.py)."""
        spark = self.config.spark
        self.egress = Egress(
            self.pipeline, self.queues, spark.max_restarts, spark.restart_backoff_s
        )
        self.egress.start(self.spark, self.resume)

    def _stop_io(self, part: str) -> None:
        """Stop the external sources' reading (`part` ingest) or the sinks' delivery (egress:
        once what is queued for them is written)."""
        if part == "ingest" and self.ingest is not None:
            self.ingest.stop(lambda query: stop_query(self.spark, query))
        if part == "egress" and self.egress is not None:
            self.egress.stop()

    def collect(self) -> Snapshot:
        deadline = self.t_prev + self.config.interval_s
        while (left := deadline - time.time()) > 0:
            if self.stop_requested.is_set() and self.stopping_since is None:
                break  # a stop requested: the sources stop at once (finished())
            time.sleep(min(left, HOST_POLL_S))
            if self.leases:
                self.leases.poll(self.now())  # a leased executor's boot ends when it registers
            self.replicas.measure_early(self.t_prev, time.time())
        self.check_health()
        t0, t1 = self.t_prev, time.time()
        self.t_prev = t1
        open_interval(self.store, t1, self.config.interval_s)  # before any read of [t0, t1)
        ops, sources = self.monitor.measure(t0, t1)
        n_sink, latency = self.store.sink_latency(t0, t1)
        recent = self.store.sink_latencies_ms_between(t0, t1)
        sinks = tuple(
            (sink, sum(self.store.arrivals(sink, t0, t1).values()))
            for sink in self.pipeline.sink_names
        )
        if self.config.spark.retention_s is not None:  # the store's audit records expire
            before = t1 - self.config.spark.retention_s
            held = self.egress.hold(self.store)  # a sink event stays until delivered
            self.monitor.expire(before if held is None else min(before, held))
        restarts = sum(self.queries.restarts.values())
        new_restarts, self.restarts_seen = restarts - self.restarts_seen, restarts
        return Snapshot(
            t=t1 - self.t0,
            interval_s=t1 - t0,
            query_restarts=new_restarts,
            sources=sources,
            operators=ops,
            completed=self.monitor.completed_since(),
            sink_events=n_sink,
            latency_ms_mean=latency,
            latency_ms_p99=float(np.percentile(recent, 99)) if recent else None,
            sinks=sinks,
            sink_latency_ms=latency_histogram(recent),
            source_backlog=tuple(
                (name, n) for name, n in self.ingest.backlog().items() if n is not None
            ),
            **(self.leases.clocks(t1 - self.t0) if self.leases is not None else {}),
        )

    def check_health(self) -> None:
        """Every query healthy (a failed one restarted from its checkpoint), the sources'
        readers and the sinks' writers too, the feeder alive; else RuntimeFailure."""
        self.queries.heal()
        if self.ingest is not None:  # a failed query heals; a redis source's reader cannot
            self.queries.heal_io(self.ingest, "source")
            self.ingest.check()
        if self.egress is not None:  # a sink's writer retries a failed write itself
            self.egress.check()
            for name, n in self.egress.restarts().items():
                if n:
                    self.queries.restarts[f"sink-{name}"] = n
        check_feeder(getattr(self, "feeder", None))

    # -- the LeasedHosts feature (spark.leasing) ---------------------------------------------
    def lease(self, leases: tuple[Lease, ...]) -> None:
        leased(self.leases).enact(leases, self.now())

    def place(self, placement: tuple[Placement, ...]) -> None:
        if placement:
            raise RuntimeFailure(
                "the Spark runtime cannot pin replicas to hosts: Spark runs a replica's task on "
                "any executor with a free slot (a plan with placement needs another engine)"
            )

    def hosts(self) -> tuple[Host, ...]:
        return leased(self.leases).hosts(self.now())

    def now(self) -> float:
        """The run's clock, s (snapshots' `t`)."""
        return time.time() - self.t0

    def enact(self, decision: Decision) -> None:
        self.replicas.enact(decision)

    def finished(self) -> bool:
        """The sources are done (the trace ended, or a stop was requested and they stopped
        reading) and the queues drained, or `drain_s` passed since then."""
        if self.stop_requested.is_set() and self.stopping_since is None:  # stop the sources
            self.feeder.stop()  # sources stop reading; what they appended stays queued
            self.stopping_since = time.time()
        if not self.feeder.done.is_set():
            return False
        check_feeder(self.feeder)  # a failed feeder ends the run with its error, not as finished
        self._stop_io("ingest")  # the run's time is up: the external sources stop reading
        done = True
        if any(map(self.pipeline.watermarked, self.pipeline.operator_names)):
            if not self.store.meta(END_OF_INPUT, False):  # the drain flushes every window
                declare_end_of_input(self.store)
            done = flushed(self.store, self.pipeline)  # before the count: outputs made by then
        pending = sum(self.store.pending(op) for op in self.pipeline.operator_names)
        if self.egress is not None:  # what the delivering sinks have not written out yet
            pending += self.egress.lag(self.store)
        if done and pending == 0:
            return True
        if time.time() - self.fed_until() <= self.config.drain_s:
            return False
        self.queries.stop_all(self.store)  # gave up draining: what is queued stays, counted
        return True

    def request_stop(self) -> None:
        """Stop gracefully (safe from a signal handler): at the next interval the sources stop
        reading, then the queues drain within `drain_s` and the run ends as a finished one."""
        self.stop_requested.set()

    def abort(self) -> None:
        """Stop at once (a second SIGINT or SIGTERM; safe from a signal handler): the driver JVM
        this run launched is killed with its Python workers (its session: they die with it);
        what they committed stays (the store's transactions, Spark's checkpoints), so `--resume`
        carries on. `stop` then ends the driver's own threads only. A caller's session is left
        running: its run stops as `stop` stops it."""
        if self.keep_session:
            return
        jvm = getattr(SparkContext._gateway, "proc", None)  # launched here (runtime/spark/session)
        if jvm is None or jvm.poll() is not None:
            return
        try:
            os.killpg(jvm.pid, signal.SIGKILL)  # the JVM leads a session of its own
        except ProcessLookupError:  # not a group of its own: leave it to `stop`
            return
        self.aborted = True

    def totals(self) -> RunTotals:
        hosts = self.leases.run_totals(self.now()) if self.leases is not None else {}
        return self.monitor.totals(sum(self.queries.restarts.values()), hosts)

    def stop(self) -> None:
        if self.aborted:  # the JVM is gone: end the driver's threads, ask nothing of Spark
            if self.ingest is not None:
                self.ingest.stop(lambda query: None)
            if self.egress is not None:  # the sinks' writers told to stop, not waited for
                self.egress.stop(timeout_s=0.0)
            if hasattr(self, "feeder"):
                self.feeder.stop()
            return
        self._stop_io("ingest")
        if hasattr(self, "feeder"):
            self.feeder.stop()
        if hasattr(self, "store"):
            self.queries.stop_all(self.store)
        self._stop_io("egress")
        if hasattr(self, "spark") and not self.keep_session:
            self.spark.stop()

    @property
    def checkpoints(self) -> Path:
        """Where the operator queries keep their checkpoints."""
        return self.config.spark.checkpoints or self.out / "checkpoints"

    def fed_until(self) -> float:
        """When the sources finished: the trace's end (never before this run's start: a resumed
        run that had fed its whole trace drains for the full `drain_s`), or the stop if earlier
        (an unbounded run's placeholder trace has no end that counts)."""
        fed = max(self.t0 + self.trace.duration_s, self.started_at)
        if self.stopping_since is None:
            return fed
        return self.stopping_since if self.config.unbounded else min(fed, self.stopping_since)
