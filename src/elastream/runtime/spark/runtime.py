"""The Spark runtime engine: one streaming query per operator (or one for the whole pipeline,
`spark.layout`), live replica changes, no restart."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from py4j.protocol import Py4JJavaError
from pyspark import SparkContext

from elastream.base.auth import is_loopback
from elastream.config import RunConfig
from elastream.config.files import app_folders
from elastream.config.run import LeasingSettings
from elastream.control.features import (
    GracefulStop,
    Hosts,
    LeasedHosts,
    MessageTransport,
    Preflight,
)
from elastream.control.plan import Lease, Placement
from elastream.control.policy import Decision
from elastream.leasing.hosts import Host, HostType
from elastream.model.events import OutcomeKind
from elastream.model.metrics import LatencyTally, RunTotals, latency_histogram
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import HostClock, OperatorStats, Snapshot
from elastream.prediction.batching import admission_cap  # Eq. B1, docs/modeling.md
from elastream.prediction.service_time import ShareSums, service_time_variance
from elastream.runtime.queues import (
    Metrics,
    QueueStore,
    ReplicaWork,
    backend_name,
    open_store,
    reset_store,
    store_exists,
    with_prefix,
)
from elastream.runtime.spark.cluster import DEFAULT_STATE, ClusterError, ClusterState
from elastream.runtime.spark.egress import Egress, check_sinks
from elastream.runtime.spark.executors import Executors
from elastream.runtime.spark.feeder import Feeder
from elastream.runtime.spark.hosts import ExecutorHosts
from elastream.runtime.spark.ingest import Ingest, check_sources
from elastream.runtime.spark.java import check_java
from elastream.runtime.spark.logs import (
    LOG_FILE,
    jvm_log_conf,
    redirect_jvm_logs,
    send_jvm_stderr,
)
from elastream.runtime.spark.pipeline_source import PIPELINE_SOURCE_NAME
from elastream.runtime.spark.pyfiles import app_archive
from elastream.runtime.spark.session import (
    EXECUTORS_PROMETHEUS_PATH,
    PROMETHEUS_PATH,
    adopt_session,
    launched_by_spark_submit,
    spark_session,
    stop_query,
    ui_conf,
    warm_python_workers,
)
from elastream.runtime.spark.source import SOURCE_NAME, cap_hit_key, open_interval
from elastream.runtime.spark.watermark import (
    END_OF_INPUT,
    declare_end_of_input,
    flushed,
    reopen_after_flush,
)
from elastream.runtime.tcp import transport as tcp_transport
from elastream.workloads.trace import Trace

DB_NAME = "queues.db"
HOST_POLL_S = 0.25  # how often a leased executor's registration is looked for, s
PIPELINE_QUERY = "_pipeline"  # the query (and checkpoint folder) of the `pipeline` layout
log = logging.getLogger(__name__)


def store_address(config: RunConfig) -> str:
    """Where the run's queues are: `config.queues` (a Redis URL gets a key prefix of its own per
    output directory unless it names one), by default queues.db in the output directory."""
    out = Path(config.out).resolve()
    if config.queues is None:
        return str(out / DB_NAME)
    if backend_name(config.queues) == "redis":
        return with_prefix(config.queues, f"elastream:{out}")
    return str(Path(config.queues).resolve())


# what SparkSession's constructor raises when its SparkContext was stopped while starting (a
# standalone master that gave the driver up)
STOPPED_CONTEXT = "Cannot call methods on a stopped SparkContext"


class RuntimeFailure(RuntimeError):
    """A query died or the feeder failed; the message names the operator and the cause."""


@dataclass
class IntervalArrivals:
    """The events offered to each queue in [t0, t1) per producer (`QueueStore.arrivals`), read
    from the store once per queue however many of the Monitor step's figures need them."""

    store: Metrics
    t0: float
    t1: float
    read: dict[str, dict[str, int]] = field(default_factory=dict)

    def __call__(self, queue: str) -> dict[str, int]:
        if queue not in self.read:
            self.read[queue] = self.store.arrivals(queue, self.t0, self.t1)
        return self.read[queue]


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


@dataclass
class Failing:
    """A query that failed: how many times in a row, and its last batch before the failure."""

    in_a_row: int
    last_batch: int


@dataclass
class OperatorState:
    """What the driver remembers of one operator between intervals."""

    replicas: int
    et_s: float
    replica_et: list[float] = field(default_factory=list)


def _service_time_var(work: ReplicaWork | None) -> float | None:
    """A replica's per-event service-time variance from its shares in the interval (Eq. V2)."""
    if work is None:
        return None
    sums = ShareSums(work.shares, work.events, work.busy_s, work.busy_sq_per_event)
    return service_time_variance(sums)


def _last_batch(query: Any) -> int:
    """The id of the query's latest reported micro-batch (-1 before the first)."""
    progress = query.lastProgress
    return int(progress["batchId"]) if progress else -1


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
        self.queries: dict[str, Any] = {}
        self.queries_stopped = False  # every query stopped for good (_stop_queries)
        self.run_ids: dict[str, set[str]] = {}
        self.ops: dict[str, OperatorState] = {}
        self.restarts: dict[str, int] = {}  # per operator (source-NAME, sink-NAME), over the run
        self.restarts_seen = 0  # of them, reported in a snapshot already
        self.forgotten = LatencyTally()  # sink latencies the store's retention has expired
        self.failing: dict[str, Failing] = {}  # operators whose query failed and has not recovered
        self.leases: ExecutorHosts | None = None  # executors leased as hosts (spark.leasing)
        self.ingest: Ingest | None = None  # external sources' reading (started by start())
        self.egress: Egress | None = None  # delivering sinks' writers (started by start())
        self.to_create: list[Path] | None = None  # folders the checks found missing (check())
        self.t0 = time.time()  # the run's clock starts when the feeder does (start())
        self.completed_before = 0  # source events completed by the previous interval's end

    # -- Engine protocol ---------------------------------------------------------------------
    def check(self) -> list[str]:
        """Preflight: what can be checked before Spark starts — Java (unless a JVM runs
        already), the sources, the sinks, the functions, the store a resumed run needs — one
        line naming the first problem; nothing is created. Returns what it checked."""
        jvm = self._jvm_running() or launched_by_spark_submit()
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

    def _jvm_running(self) -> bool:
        return self.given_session is not None or SparkContext._active_spark_context is not None

    def start(self) -> None:
        phases = Phases()
        if self.to_create is None:  # not checked yet (the run session checks first)
            self.check()
        for folder in self.to_create or []:
            folder.mkdir(parents=True, exist_ok=True)
        self._prepare_store()
        phases.end("checks and store")
        # local[n, 4]: up to 4 attempts per task, as on a cluster (plain local[n] never retries).
        spark = self.config.spark
        conf = {**ui_conf(spark.ui, spark.ui_port), **spark.conf}  # the user's settings win
        if spark.leasing is not None:
            if not spark.standalone:
                raise RuntimeFailure(
                    "spark.leasing leases executors of a standalone cluster: give "
                    "--spark-master spark://HOST:PORT (elastream cluster up starts one)"
                )
            conf.setdefault("spark.decommission.enabled", "true")  # graceful release
        conf = jvm_log_conf(self.out, conf)  # Spark's log lines to spark.log in the run directory
        self.spark = self._session(self._master(), conf)
        if launched_by_spark_submit():  # its JVM started with Spark's own logging: ours now
            redirect_jvm_logs(self.spark, self.out)
        send_jvm_stderr(self.spark, self.out)  # uncaught JVM stacks to spark.log, not the console
        self._log_ui()
        phases.end("Spark session")
        if spark.leasing is not None:
            self.leases = self._adopt_hosts(spark.leasing)
        warm_python_workers(self.spark, self._slots())
        phases.end("Python workers")
        for name in self._query_names():
            # One at a time: each query forks a Python helper that must connect back to the JVM
            # within 10 s (fixed in Spark); forked together on a loaded machine they missed it.
            self._start_query(name)
            self._await_first_batches()
        phases.end("operator queries")
        self._start_io()
        phases.end("sources and sinks")
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
        self.t_prev = self.started_at = time.time()
        open_interval(self.store, self.t_prev, self.config.interval_s)
        self.feeder.start()

    def _start_io(self) -> None:
        """The delivering sinks' writers, then the external sources (runtime/spark/egress.py,
        ingest.py)."""
        bound = min(
            self.config.queue_capacity or self.config.ingest_bound, self.config.ingest_bound
        )
        spark = self.config.spark
        self.egress = Egress(
            self.pipeline, self.queues, spark.max_restarts, spark.restart_backoff_s
        )
        self.egress.start(self.spark, self.resume)
        self.ingest = Ingest(self.pipeline, self.queues, bound, self.checkpoints, self.out)
        self.ingest.start(self.spark, self.store)

    def _stop_io(self, part: str) -> None:
        """Stop the external sources' reading (`part` ingest) or the sinks' delivery (egress:
        once what is queued for them is written)."""
        if part == "ingest" and self.ingest is not None:
            self.ingest.stop(lambda query: stop_query(self.spark, query))
        if part == "egress" and self.egress is not None:
            self.egress.stop()

    def collect(self) -> Snapshot:
        deadline = self.t_prev + self.config.interval_s
        while (left := deadline - time.time()) > 0 and not self._stop_pending():
            time.sleep(min(left, HOST_POLL_S))
            if self.leases:
                self.leases.poll(self.now())  # a leased executor's boot ends when it registers
        self._check_health()
        t0, t1 = self.t_prev, time.time()
        self.t_prev = t1
        open_interval(self.store, t1, self.config.interval_s)  # before any read of [t0, t1)
        ops, sources = self._measure(t0, t1)
        n_sink, latency = self.store.sink_latency(t0, t1)
        recent = self.store.sink_latencies_ms_between(t0, t1)
        sinks = tuple(
            (sink, sum(self.store.arrivals(sink, t0, t1).values()))
            for sink in self.pipeline.sink_names
        )
        self._expire(t1)
        restarts = sum(self.restarts.values())
        new_restarts, self.restarts_seen = restarts - self.restarts_seen, restarts
        return Snapshot(
            t=t1 - self.t0,
            td=t1 - t0,
            query_restarts=new_restarts,
            sources=sources,
            operators=ops,
            completed=self._completed_since(),
            sink_events=n_sink,
            latency_ms_mean=latency,
            latency_ms_p99=float(np.percentile(recent, 99)) if recent else None,
            sinks=sinks,
            sink_latency_ms=latency_histogram(recent),
            source_backlog=tuple(
                (name, n) for name, n in self.ingest.backlog().items() if n is not None
            ),
            **self._host_clocks(t1 - self.t0),
        )

    def _completed_since(self) -> int:
        """Source events whose whole lineage completed since the last collect (outputs of any
        generation and filtered events do not count on their own: docs/outputs.md)."""
        now = self.store.lineage(self.pipeline.topological_order).completed
        completed, self.completed_before = now - self.completed_before, now
        return completed

    def _measure(
        self, t0: float, t1: float
    ) -> tuple[tuple[OperatorStats, ...], tuple[tuple[str, int], ...]]:
        """Every operator's stats and every source's events in [t0, t1), each queue's arrivals
        read once (an operator's own, its stream targets' and a source's first target's)."""
        arrivals = IntervalArrivals(self.store, t0, t1)
        stats_list = []
        for name in self.pipeline.topological_order:
            tasks = self.store.task_stats(name, t0, t1)
            stats = self._operator_stats(name, t0, t1, tasks, arrivals)
            self._remember(stats, tasks)
            stats_list.append(stats)
        sources = tuple((s, self._source_count(s, arrivals)) for s in self.pipeline.source_names)
        return tuple(stats_list), sources

    def _expire(self, now: float) -> None:
        """Retention of the store's audit records (spark.retention_s), their latencies kept."""
        if self.config.spark.retention_s is not None:
            before = now - self.config.spark.retention_s
            held = self.egress.hold(self.store)  # a sink event stays until delivered
            expired = self.store.expire(before if held is None else min(before, held))
            self.forgotten.add(expired.sink_latencies_ms)

    def _host_clocks(self, now: float) -> dict[str, Any]:
        if self.leases is None:
            return {}
        clocks = tuple(
            HostClock(h.host_id, h.ready_at <= now, h.btus_started(now), h.remaining_btu(now))
            for h in self.leases.hosts(now)
        )
        return {"hosts": clocks, "host_cost": self.leases.totals(now).cost}

    # -- the LeasedHosts feature (spark.leasing) ---------------------------------------------
    def lease(self, leases: tuple[Lease, ...]) -> None:
        provider = self._leasing()
        now = self.now()
        for lease in leases:
            if lease.count > 0:
                for _ in range(lease.count):
                    provider.lease_new(now)
            for host_id in lease.hosts:
                provider.release(host_id, now)

    def place(self, placement: tuple[Placement, ...]) -> None:
        if placement:
            raise RuntimeFailure(
                "the Spark runtime cannot pin replicas to hosts: Spark runs a replica's task on "
                "any executor with a free slot (a plan with placement needs another engine)"
            )

    def hosts(self) -> tuple[Host, ...]:
        return self._leasing().hosts(self.now())

    def now(self) -> float:
        """The run's clock, s (snapshots' `t`)."""
        return time.time() - self.t0

    def enact(self, decision: Decision) -> None:
        for name, replicas in decision.replicas:
            self.ops[name].replicas = replicas
            self._publish(name)

    def finished(self) -> bool:
        """The sources are done (the trace ended, or a stop was requested and they stopped
        reading) and the queues drained, or `drain_s` passed since then."""
        if self._stop_pending():
            self.feeder.stop()  # sources stop reading; what they appended stays queued
            self.stopping_since = time.time()
        if not self.feeder.done.is_set():
            return False
        self._check_feeder()  # a failed feeder ends the run with its error, not as a finished one
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
        if time.time() - self._fed_until() <= self.config.drain_s:
            return False
        self._stop_queries()  # gave up draining: what is queued stays, counted exactly
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

    def _stop_pending(self) -> bool:
        """A stop was requested and the sources have not been stopped yet."""
        return self.stop_requested.is_set() and self.stopping_since is None

    def totals(self) -> RunTotals:
        audit = self.store.audit()
        latencies = np.array(self.store.sink_latencies_ms())
        mean = float(latencies.mean()) if latencies.size else None
        p99 = float(np.percentile(latencies, 99)) if latencies.size else None
        histogram = latency_histogram(latencies)
        if self.forgotten.n:  # some were expired: the tally's totals (p99 to the 1-ms bin)
            mean, p99, histogram = self.forgotten.with_kept(latencies.tolist())
        return RunTotals(
            events_in=audit.events_in,
            events_out=audit.sink_events,
            completed=self.store.lineage(self.pipeline.topological_order).completed,
            filtered=audit.filtered,
            dropped_timeout=audit.timeout,
            dropped_overflow=audit.overflow,
            failed=audit.failed,
            queued=audit.pending,
            latency_ms_mean=mean,
            latency_ms_p99=p99,
            duplicates=audit.duplicate_sink_roots,
            query_restarts=sum(self.restarts.values()),
            latency_histogram_ms=histogram,
            **self._lease_totals(),
        )

    def _lease_totals(self) -> dict[str, Any]:
        if self.leases is None:
            return {}
        leased = self.leases.totals(self.now())
        return {
            "hosts_leased": leased.hosts_leased,
            "host_btus": leased.btus_paid,
            "host_cost": leased.cost,
            "host_boot_s": leased.boot_s_mean,
        }

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
        self._stop_queries()
        self._stop_io("egress")
        if hasattr(self, "spark") and not self.keep_session:
            self.spark.stop()

    def _stop_queries(self) -> None:
        """Stop every operator query: no batch commits after this, so the totals read next
        are the final ones (a batch cut short leaves its events queued for --resume)."""
        if not self.queries or self.queries_stopped:
            return
        # In-flight empty batches interrupted by stop() log aborted commits: not errors.
        self.spark.sparkContext.setLogLevel("FATAL")
        for query in self.queries.values():
            stop_query(self.spark, query)
        self.queries_stopped = True  # kept in `queries`: their progress is read after the run
        self._await_quiet()
        self.spark.sparkContext.setLogLevel("ERROR")

    def _await_quiet(self, timeout_s: float = 30.0, still_s: float = 1.0) -> None:
        """After the queries stopped: wait until Spark runs no task and the queues have not
        changed for `still_s` (a replica's task cut short may still commit its share)."""
        tracker = self.spark.sparkContext.statusTracker()
        deadline = time.time() + timeout_s
        while tracker.getActiveStageIds() and time.time() < deadline:
            time.sleep(0.1)
        last, still_since = None, time.time()
        while time.time() < deadline:
            now = [self.store.pending(op) for op in self.pipeline.operator_names]
            if now != last:
                last, still_since = now, time.time()
            elif time.time() - still_since >= still_s:
                return
            time.sleep(0.2)

    # -- helpers -----------------------------------------------------------------------------
    def _adopt_hosts(self, leasing: LeasingSettings) -> ExecutorHosts:
        kind = HostType(cores=leasing.slots, btu_s=leasing.btu_s, price=leasing.price)
        hosts = ExecutorHosts(Executors(self.spark), kind)
        hosts.adopt(leasing.min_hosts)
        return hosts

    def _leasing(self) -> ExecutorHosts:
        if self.leases is None:
            raise RuntimeFailure("this run leases no hosts: set spark.leasing in the run settings")
        return self.leases

    @property
    def checkpoints(self) -> Path:
        """Where the operator queries keep their checkpoints."""
        return self.config.spark.checkpoints or self.out / "checkpoints"

    def _slots(self) -> int:
        """One task slot per pre-allocated replica, so every active replica really runs."""
        return max(2, self.pipeline.r_over)

    def _prepare_store(self) -> None:
        if not self.resume:
            shutil.rmtree(self.checkpoints, ignore_errors=True)
            reset_store(self.queues)
        self.out.mkdir(parents=True, exist_ok=True)
        self.store: QueueStore = open_store(self.queues)
        self._check_layout()
        self.store.set_meta("out_dir", str(self.out.resolve()))
        self.store.set_meta("pipeline", self.pipeline.model_dump(mode="json", by_alias=True))
        self.store.set_meta("t_out", self.config.event_timeout_s)
        self.store.set_meta("td", self.config.interval_s)
        reopen_after_flush(self.store, self.pipeline)  # a resumed run after its final flush
        self.store.set_meta(END_OF_INPUT, False)
        for op in self.pipeline.operators:
            self.store.create_queue(op.name, self.config.queue_capacity)
        for sink in self.pipeline.sinks:
            self.store.create_queue(sink.name, None, sink=True)
        for op in self.pipeline.operators:
            replicas = op.replicas.start
            if self.resume:
                replicas = self.store.control(op.name).replicas
            self.ops[op.name] = OperatorState(replicas, op.et_seed_s)
            self._publish(op.name)

    def _check_layout(self) -> None:
        """Record the run's layout; a resumed run must keep it (the checkpoints are per query)."""
        layout = self.config.spark.layout
        if self.resume and self.store.meta("layout", "operator") != layout:
            raise RuntimeFailure(
                f"cannot resume with spark.layout {layout!r}: the run was started with "
                f"{self.store.meta('layout', 'operator')!r} and its checkpoints are of that layout"
            )
        self.store.set_meta("layout", layout)

    def _publish(self, name: str) -> None:
        """Execute: publish r_i, the batch cap, et_i and et_ij where plan-time code reads them."""
        st = self.ops[name]
        cap = admission_cap(st.replicas, st.et_s, self.config.spark.batch_s)
        self.store.set_control(name, st.replicas, cap, st.et_s, st.replica_et)

    def _query_names(self) -> list[str]:
        """The run's queries: one per operator, or the one PIPELINE_QUERY (`spark.layout`)."""
        if self.config.spark.layout == "pipeline":
            return [PIPELINE_QUERY]
        return list(self.pipeline.topological_order)

    @staticmethod
    def _query_label(name: str) -> str:
        """How messages name a query."""
        if name == PIPELINE_QUERY:
            return "the pipeline's query"
        return f"the query of operator {name!r}"

    def _start_query(self, name: str, new_run: bool = True) -> None:
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
        self.queries[name] = query
        if new_run:
            self.run_ids[name] = set()
        self.run_ids[name].add(str(query.runId))

    def _await_first_batches(self, timeout_s: float = 120.0) -> None:
        """Wait until every query has planned and run its first (empty) micro-batch, so the
        feeder does not start the clock during Spark's cold start."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            self._check_health()
            if all(q.lastProgress is not None for q in self.queries.values()):
                return
            time.sleep(0.2)
        raise RuntimeFailure(f"the operator queries did not start within {timeout_s:.0f} s")

    def _check_health(self) -> None:
        for name, query in list(self.queries.items()):
            error = query.exception()
            if error is not None or not query.isActive:
                self._heal(name, error)
            else:
                self._note_recovery(name, query)
            self.run_ids[name].add(str(self.queries[name].runId))
        if self.ingest is not None:  # a failed query heals; a redis source's reader cannot
            self._heal_io(self.ingest, "source")
            self.ingest.check()
        if self.egress is not None:  # a sink's writer retries a failed write itself
            self.egress.check()
            for name, n in self.egress.restarts().items():
                if n:
                    self.restarts[f"sink-{name}"] = n
        self._check_feeder()

    def _check_feeder(self) -> None:
        feeder = getattr(self, "feeder", None)
        if feeder is not None and feeder.error is not None:
            raise RuntimeFailure(f"the source feeder failed: {feeder.error}")

    def _heal(self, name: str, error: Any) -> None:
        """Restart a failed operator query from its checkpoint (the store's bookkeeping keeps
        it exactly-once)."""
        restart = partial(self._start_query, name, new_run=False)
        self._restart(name, self._query_label(name), self.queries[name], error, restart)

    def _heal_io(self, io: Ingest, kind: str) -> None:
        """Restart the failed query of an external source or a delivering sink (`kind`) as an
        operator's: from its checkpoint, the same backoff, limit and count (key `kind-NAME`)."""
        for name, error in io.failed():
            label = f"the query of {kind} {name!r}"
            restart = partial(io.restart, self.spark, name)
            self._restart(f"{kind}-{name}", label, io.queries[name], error, restart)
        for name, query in io.queries.items():
            self._note_recovery(f"{kind}-{name}", query)

    def _restart(
        self, key: str, label: str, query: Any, error: Any, start: Callable[[], Any]
    ) -> None:
        """Stop `query` and `start()` it again from its checkpoint, after a backoff that
        doubles with each failure in a row; a query that fails `max_restarts` times in a row
        without completing a batch ends the run."""
        spark = self.config.spark
        failing = self.failing.get(key) or Failing(0, _last_batch(query))
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

    def _note_recovery(self, name: str, query: Any) -> None:
        """A restarted query that has completed a batch since its failure is healthy again."""
        failing = self.failing.get(name)
        if failing is not None and _last_batch(query) > failing.last_batch:
            del self.failing[name]

    def _operator_stats(
        self,
        name: str,
        t0: float,
        t1: float,
        tasks: dict[int, ReplicaWork],
        reads: IntervalArrivals,
    ) -> OperatorStats:
        spec = self.pipeline.operator(name)
        st = self.ops[name]
        arrivals = reads(name)
        kinds, emitted = self.store.outcome_counts(name, t0, t1)
        handled = sum(w.events for w in tasks.values())
        busy = sum(w.busy_s for w in tasks.values())
        et = busy / handled if handled else None
        per_replica = [tasks[j].events if j in tasks else 0 for j in range(st.replicas)]
        td = t1 - t0
        # Eq. 5: U_ij = μ_ij · et_i / td
        util = [n * (et or st.et_s) / td for n in per_replica]
        return OperatorStats(
            name=name,
            replicas=st.replicas,
            min_replicas=spec.replicas.min,
            max_replicas=spec.replicas.max,
            received=sum(arrivals.values()),
            received_from=tuple((p, arrivals.get(p, 0)) for p in self.pipeline.predecessors(name)),
            processed=kinds.get(OutcomeKind.PROCESSED, 0) + kinds.get(OutcomeKind.FILTERED, 0),
            emitted=emitted,
            queue=self.store.pending(name),
            et_s=et,
            busy_s=busy,
            dropped_timeout=kinds.get(OutcomeKind.TIMEOUT, 0),
            dropped_overflow=self.store.overflow_count(name, t0, t1),
            failed=kinds.get(OutcomeKind.ERROR, 0),
            replica_processed=tuple(per_replica),
            utilization=tuple(util),
            stateful=not spec.stateless,
            cpu_s=sum(w.cpu_s for w in tasks.values()),
            admission_capped=float(self.store.meta(cap_hit_key(name), -1.0)) >= t0,
            emitted_streams=self._emitted_streams(name, reads),
            service_time_var=tuple(_service_time_var(tasks.get(j)) for j in range(st.replicas)),
            replica_batches=tuple(tasks[j].shares if j in tasks else 0 for j in range(st.replicas)),
        )

    def _emitted_streams(self, name: str, reads: IntervalArrivals) -> tuple[tuple[str, int], ...]:
        """Outputs per output stream in the interval: what the stream's first target received
        from `name` (a stream feeding several targets sends each a copy). () when two streams
        of `name` feed the same node, since a queue does not tell them apart."""
        routes = self.pipeline.routes(name)
        firsts = [targets[0] for targets in routes.values()]
        if len(set(firsts)) < len(firsts):
            return ()
        return tuple(
            (stream, reads(target).get(name, 0))
            for stream, target in zip(routes, firsts, strict=True)
        )

    def _remember(self, stats: OperatorStats, tasks: dict[int, ReplicaWork]) -> None:
        """Keep the latest measured et_i and et_ij for the next plans (unchanged if idle)."""
        st = self.ops[stats.name]
        if stats.et_s is not None:
            st.et_s = stats.et_s
        known = dict(enumerate(st.replica_et))
        known.update({j: w.busy_s / w.events for j, w in tasks.items() if w.events > 0})
        st.replica_et = [known.get(j, st.et_s) for j in range(stats.max_replicas)]
        self._publish(stats.name)

    def _source_count(self, source: str, reads: IntervalArrivals) -> int:
        """λ_G share of one source: events it offered in the interval to its first target."""
        first = self.pipeline.successors(source)[0]
        return reads(first).get(source, 0)

    def _fed_until(self) -> float:
        """When the sources finished: the trace's end (never before this run's start: a resumed
        run that had fed its whole trace drains for the full `drain_s`), or the stop if earlier
        (an unbounded run's placeholder trace has no end that counts)."""
        fed = max(self.t0 + self.trace.duration_s, self.started_at)
        if self.stopping_since is None:
            return fed
        return self.stopping_since if self.config.unbounded else min(fed, self.stopping_since)

    def _session(self, master: str | None, conf: dict[str, str]) -> Any:
        """The caller's SparkSession (kept running at the end), else the one `spark_session`
        makes or reuses: a session that was already running is the caller's too. A JVM launched
        here writes its standard error to spark.log (a failed start is raised with its lines).
        The pipeline's own modules (its folder's and the working directory's) are shipped to
        the Python workers (runtime/spark/pyfiles.py)."""
        archive = app_archive(app_folders(self.pipeline))
        py_files = [] if archive is None else [archive]
        if self.given_session is not None:
            return adopt_session(self.given_session, py_files)
        if SparkContext._active_spark_context is not None:
            self.keep_session = True
        auth_file = self._auth_file()
        try:
            return spark_session(
                master,
                conf=conf,
                auth_file=auth_file,
                ui_host=self.config.spark.ui_host,
                jvm_stderr=self.out / LOG_FILE,  # the JVM's start-up lines to spark.log
                py_files=py_files,
            )
        except Py4JJavaError as exc:
            if not (self.config.spark.standalone and STOPPED_CONTEXT in str(exc)):
                raise
            raise RuntimeFailure(self._unregistered(auth_file)) from None

    def _unregistered(self, auth_file: Path | None) -> str:
        """Why a driver's SparkContext stopped before it started: its standalone master gave it
        up (Spark tries for about a minute), unreachable or refusing an unauthenticated driver."""
        secret = (
            f"with the secret in {auth_file}"
            if auth_file is not None
            else "without a secret (a cluster with RPC authentication needs its shared secret: "
            "spark.auth_file, or the cluster `elastream cluster up` started with its default "
            "state file)"
        )
        return (
            f"the driver could not register with the Spark master {self.config.spark.master} "
            f"{secret}: the master did not answer or refused it (Spark's reason is in "
            f"{self.out / LOG_FILE})"
        )

    def _master(self) -> str | None:
        """The master given, else spark-submit's (None), else local mode sized to the pools
        (local[n, 4]: up to 4 attempts per task, as on a cluster; plain local[n] never retries)."""
        if self.config.spark.master is not None or launched_by_spark_submit():
            return self.config.spark.master
        return f"local[{self._slots()},4]"

    def _auth_file(self) -> Path | None:
        """The file with the cluster's shared secret: spark.auth_file, else the one of the
        cluster `elastream cluster up` started with its default state file, if `master` is it."""
        spark = self.config.spark
        if spark.auth_file is not None or not spark.standalone:
            return spark.auth_file
        try:
            state = ClusterState.load(DEFAULT_STATE)
        except (ClusterError, ValueError, TypeError):
            return None  # no such cluster (or an unreadable state file): no secret to give
        if state.master_url != spark.master or state.auth_file is None:
            return None
        return Path(state.auth_file)

    def _log_ui(self) -> None:
        """Say where the Spark UI and its Prometheus metrics are (when it is on), and warn when
        it listens beyond loopback without having been asked to (a JVM spark-submit started
        without SPARK_LOCAL_IP: the UI then binds every address)."""
        sc = self.spark.sparkContext
        if not sc.uiWebUrl:
            return
        bound = sc._jvm.java.lang.System.getenv("SPARK_LOCAL_IP") or "0.0.0.0"
        # the address the UI listens on (its URL names the host by its public name)
        url = f"http://{bound}:{urlsplit(sc.uiWebUrl).port}"
        if not is_loopback(bound) and is_loopback(self.config.spark.ui_host):
            log.warning(
                "the Spark UI listens on %s (the driver JVM's SPARK_LOCAL_IP), not on %s: "
                "export SPARK_LOCAL_IP=%s before spark-submit, or set spark.ui: false",
                bound,
                self.config.spark.ui_host,
                self.config.spark.ui_host,
            )
        log.info(
            "Spark UI: %s (Prometheus: %s%s, %s%s)",
            url,
            url,
            PROMETHEUS_PATH,
            url,
            EXECUTORS_PROMETHEUS_PATH,
        )
