"""The run's Prometheus metrics: a MAPE-loop observer that folds every interval's snapshot and
decision into counters, gauges and histograms, named as Prometheus' conventions ask (the unit
in the name, `_total` on counters, no `_created` series; docs/operations.md, Metrics)."""

from __future__ import annotations

import bisect
import threading
from collections import deque
from types import ModuleType
from typing import Any

from elastream.base.extras import require
from elastream.control.policy import Decision
from elastream.model.metrics import RunTotals, replica_changes
from elastream.model.objective import Objective, judge
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import OperatorStats, Snapshot
from elastream.report.liveview import Change, graph_of, live_state
from elastream.report.series import utilization

KEEP_POINTS = 300  # intervals the live view charts
KEEP_DECISIONS = 50  # replica changes its timeline lists
FOLD_INTERVALS = 256  # intervals taken in before they are folded into the metrics
OP = ("pipeline", "operator")
RUN = ("pipeline",)
SOURCE = ("pipeline", "source")
SINK = ("pipeline", "sink")
OP_REASON = (*OP, "reason")  # reason: timeout or overflow
RUN_STATISTIC = (*RUN, "statistic")  # statistic: p99 or mean
# service time of one event (s) and end-to-end latency (s): buckets from 1 ms to 1 min
SERVICE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# per-operator counters: metric name suffix -> OperatorStats field
OPERATOR_COUNTERS = {
    "events_received": ("received", "events that arrived in the operator's queue"),
    "events_processed": ("processed", "events taken from the queue and handled"),
    "events_emitted": ("emitted", "output events sent downstream"),
    "events_failed": ("failed", "events whose operator function raised (kept in the error log)"),
}

OPERATOR_FIELDS = (
    *(field for field, _ in OPERATOR_COUNTERS.values()),
    "dropped_timeout",
    "dropped_overflow",
)

# the other metrics, in the order they are registered: key -> (type, name, labels, help)
METRICS: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "dropped": ("counter", "elastream_operator_events_dropped", OP_REASON,
        "events dropped: reason=timeout (older than event_timeout_s) or overflow (queue full)"),
    "queue": ("gauge", "elastream_operator_queue_events", OP,
        "events waiting at the end of the interval"),
    "active": ("gauge", "elastream_operator_replicas_active", OP,
        "active replicas"),
    "pool": ("gauge", "elastream_operator_replicas_pool", OP,
        "replicas in the pool"),
    "target": ("gauge", "elastream_operator_replicas_target", OP,
        "the policy's decision: target replicas"),
    "busy": ("gauge", "elastream_operator_busy_ratio", OP,
        "mean replica utilization in the interval"),
    "service": ("histogram", "elastream_operator_service_time_seconds", OP,
        "mean service time of one event on one replica, one observation per interval"),
    "source_events": ("counter", "elastream_source_events", SOURCE,
        "events the source sent into the pipeline"),
    "source_rate": ("gauge", "elastream_source_rate_events_per_second", SOURCE,
        "events per second the source sent in the last interval"),
    "backlog": ("gauge", "elastream_source_backlog_events", SOURCE,
        "events an external source holds not yet read (files: rows of unread files; "
        "redis: entries not yet ingested; spark: offsets behind the latest)"),
    "completed": ("counter", "elastream_events_completed", RUN,
        "source events whose processing finished"),
    "sink": ("counter", "elastream_sink_events", SINK,
        "events that reached the sink"),
    "latency": ("histogram", "elastream_event_latency_seconds", RUN,
        "end-to-end latency of each event that reached a sink, from entering the pipeline"),
    "interval_p99": ("gauge", "elastream_interval_latency_p99_seconds", RUN,
        "99th percentile of the end-to-end latency of the last interval's sink events"),
    "objective_bound": ("gauge", "elastream_objective_latency_seconds", RUN_STATISTIC,
        "the run's latency objective: the bound on the statistic (p99 or mean)"),
    "objective_met": ("gauge", "elastream_objective_met", RUN,
        "1 when the last judged interval kept the latency objective, 0 when it missed it"),
    "intervals": ("counter", "elastream_intervals", RUN,
        "MAPE intervals"),
    "reconfigurations": ("counter", "elastream_reconfigurations", RUN,
        "(interval, operator) pairs whose active replica count changed"),
    "hosts_up": ("gauge", "elastream_hosts_up", RUN,
        "leased hosts up"),
    "host_cost": ("gauge", "elastream_host_cost_price_units", RUN,
        "cost of the leased hosts so far, in the units of spark.leasing.price"),
    "failed": ("counter", "elastream_events_failed", RUN,
        "events whose operator function raised"),
    "dropped_restart": ("counter", "elastream_events_dropped_restart", RUN,
        "queued events lost by restart reconfigurations (the simulator's restart model)"),
    "restarts": ("counter", "elastream_query_restarts", RUN,
        "failed queries (operators', sources', sinks') restarted from their checkpoints"),
    "hosts_leased": ("counter", "elastream_hosts_leased", RUN,
        "hosts leased over the run, the first ones included"),
    "re_leases": ("counter", "elastream_host_re_leases", RUN,
        "leases that began within one BTU after a released host's paid end (a defect of the "
        "release rule: keeping the host would have cost no more)"),
    "finished": ("gauge", "elastream_run_finished", RUN,
        "1 once the run has ended"),
}  # fmt: skip
BUCKETS = {"service": SERVICE_BUCKETS, "latency": LATENCY_BUCKETS}  # the histograms' buckets

# run-level counters fed per interval and completed at the end: RunTotals field -> METRICS key
RUN_COUNTERS = {
    "failed": "failed",
    "dropped_restart": "dropped_restart",
    "query_restarts": "restarts",
    "hosts_leased": "hosts_leased",
    "host_re_leases": "re_leases",
}


class _OperatorFold:
    """One operator's intervals since the last fold: its counts summed, its gauges' last
    values, its service times in order."""

    __slots__ = ("busy", "counts", "pool", "queue", "replicas", "service", "target")

    def __init__(self) -> None:
        self.counts = dict.fromkeys(OPERATOR_FIELDS, 0)
        self.service: list[float] = []
        self.queue = self.replicas = self.pool = 0
        self.target: int | None = None
        self.busy = 0.0

    def add(self, o: OperatorStats, td: float, target: int | None) -> None:
        counts = self.counts
        for field in OPERATOR_FIELDS:
            counts[field] += getattr(o, field)
        self.queue, self.replicas, self.pool = o.queue, o.replicas, o.max_replicas
        if target is not None:
            self.target = target
        self.busy = utilization(o, td)
        if o.service_time_s is not None:
            self.service.append(o.service_time_s)


def prometheus() -> ModuleType:
    """prometheus_client, with its `_created` series switched off (a run's counters start with
    the run, so those series carry nothing a scraper needs)."""
    prom = require("prometheus_client", extra="metrics", feature="the /metrics endpoint")
    prom.disable_created_metrics()
    return prom


class RunMetrics:
    """Observer `(snapshot, decision) -> None` publishing one run's metrics in its own registry.

    Counters add each interval's counts, so at the end they equal the sums of intervals.csv and
    summary.json's per-operator counts exactly. The run's failed events, query restarts, hosts
    leased and re-leases count live too; `finish(totals)` adds what the engine's end-of-run
    totals hold beyond what the intervals reported (e.g. a failure after the last interval)."""

    def __init__(self, pipeline: Pipeline, objective: Objective | None = None) -> None:
        prom = prometheus()
        self.pipeline = pipeline.name
        self.objective = objective
        self.registry = prom.CollectorRegistry(auto_describe=True)
        self._last: Snapshot | None = None
        self.host_ids: set[str] = set()  # every leased host seen so far
        self.counted = dict.fromkeys(RUN_COUNTERS, 0)  # the run-level counters' values
        self.last_decision: Decision | None = None
        self.decisions: deque[Change] = deque(maxlen=KEEP_DECISIONS)
        self.graph = graph_of(pipeline)
        # the intervals the live view charts (its points are built when it asks)
        self.recent: deque[tuple[Snapshot, Decision]] = deque(maxlen=KEEP_POINTS)
        self._pending: list[tuple[Snapshot, Decision]] = []  # taken in, not folded in yet
        self._lock = threading.Lock()
        self._children: dict[tuple[str, tuple[str, ...]], Any] = {}
        make = {"counter": prom.Counter, "gauge": prom.Gauge, "histogram": prom.Histogram}
        op_counters = {
            name: ("counter", f"elastream_operator_{name}", OP, help_text)
            for name, (_, help_text) in OPERATOR_COUNTERS.items()
        }
        self.metrics: dict[str, Any] = {}
        for key, (kind, name, labels, help_text) in {**op_counters, **METRICS}.items():
            extra = {"buckets": BUCKETS[key]} if key in BUCKETS else {}
            self.metrics[key] = make[kind](name, help_text, labels, registry=self.registry, **extra)
        if objective is not None:
            bound = self._child("objective_bound", self.pipeline, objective.statistic)
            bound.set(objective.bound_s)
        self._child("finished", self.pipeline).set(0)

    def _child(self, key: str, *labels: str) -> Any:
        """`metric.labels(*labels)` of the metric under `key` (METRICS, or an
        OPERATOR_COUNTERS name), looked up once per run (labels() costs more than inc())."""
        child = self._children.get((key, labels))
        if child is None:
            child = self._children[key, labels] = self.metrics[key].labels(*labels)
        return child

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        """Take in one interval; it is folded into the metrics with the next FOLD_INTERVALS
        (or at the next read: exposition, state, finish), so every read sees every interval."""
        with self._lock:
            self._pending.append((snapshot, decision))
            if len(self._pending) >= FOLD_INTERVALS:
                self._fold()

    def _fold(self) -> None:
        """Fold the pending intervals in (the caller holds the lock): counters by their sums,
        gauges by their last values, histograms one observation per interval, as one interval
        at a time would leave them."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        ops: dict[str, _OperatorFold] = {}
        failed = dropped_restart = restarts = completed = intervals = changes = 0
        latencies: list[tuple[tuple[float, int], ...]] = []  # each interval's (ms, events)
        sources: dict[str, int] = {}
        sinks: dict[str, int] = {}
        backlog: dict[str, int] = {}
        verdict: bool | None = None
        leased = 0
        compared = False  # a snapshot had one before it (the reconfigurations counter)
        for snapshot, decision in pending:
            targets = dict(decision.replicas)
            for o in snapshot.operators:
                fold = ops.get(o.name)
                if fold is None:
                    fold = ops[o.name] = _OperatorFold()
                target = targets.get(o.name)
                fold.add(o, snapshot.interval_s, target)
                failed += o.failed
                if target is not None and target != o.replicas:
                    why, detail = decision.reason(o.name), decision.detail(o.name)
                    self.decisions.append((snapshot.t, o.name, o.replicas, target, why, detail))
            dropped_restart += snapshot.dropped_restart
            restarts += snapshot.query_restarts
            backlog.update(snapshot.source_backlog)
            add_counts(sources, snapshot.sources)
            add_counts(sinks, snapshot.sinks)
            completed += snapshot.completed
            latencies.append(snapshot.sink_latency_ms)
            if self.objective is not None:
                met = judge(snapshot, self.objective).met
                verdict = verdict if met is None else met
            intervals += snapshot.intervals
            if self._last is not None:
                changes += replica_changes(self._last, snapshot)
                compared = True
            new_hosts = {h.host_id for h in snapshot.hosts} - self.host_ids
            self.host_ids |= new_hosts
            leased += len(new_hosts)
            self._last, self.last_decision = snapshot, decision
        self.recent.extend(pending)
        for name, fold in ops.items():
            self._operator(name, fold)
        last = pending[-1][0]
        run = (self.pipeline,)
        self._count("failed", failed)
        self._count("dropped_restart", dropped_restart)
        self._count("query_restarts", restarts)
        for source, n in backlog.items():
            self._child("backlog", *run, source).set(n)
        for source, n in sources.items():
            self._child("source_events", *run, source).inc(n)
        for source, n in last.sources:
            self._child("source_rate", *run, source).set(
                n / last.interval_s if last.interval_s else 0
            )
        self._child("completed", *run).inc(completed)
        for sink, n in sinks.items():
            self._child("sink", *run, sink).inc(n)
        for interval in latencies:
            self._observe_latencies(interval)
        if last.latency_ms_p99 is not None:
            self._child("interval_p99", *run).set(last.latency_ms_p99 / 1000)
        if verdict is not None:
            self._child("objective_met", *run).set(1 if verdict else 0)
        self._child("intervals", *run).inc(intervals)
        if compared:
            self._child("reconfigurations", *run).inc(changes)
        self._count("hosts_leased", leased)
        # the snapshot carries the run's re-leases so far: add what it holds beyond the count
        self._count("host_re_leases", max(0, last.host_re_leases - self.counted["host_re_leases"]))
        self._child("hosts_up", *run).set(last.hosts_up)
        self._child("host_cost", *run).set(last.host_cost)

    def _observe_latencies(self, latencies: tuple[tuple[float, int], ...]) -> None:
        """Every sink event's latency into the histogram, n events of one latency at once:
        what n observe() calls leave (the bucket's count and the sum), in one step per latency
        instead of one per event (prometheus_client's Histogram keeps a value per bucket)."""
        child = self._child("latency", self.pipeline)
        bounds = child._upper_bounds
        for ms, n in latencies:
            latency_s = ms / 1000
            child._sum.inc(latency_s * n)
            child._buckets[bisect.bisect_left(bounds, latency_s)].inc(n)

    def flush(self) -> None:
        """Fold in the intervals taken in since the last fold."""
        with self._lock:
            self._fold()

    def _count(self, field: str, n: int) -> None:
        """Add `n` to the run-level counter of RunTotals' `field` (RUN_COUNTERS)."""
        self.counted[field] += n
        self._child(RUN_COUNTERS[field], self.pipeline).inc(n)

    def _operator(self, name: str, fold: _OperatorFold) -> None:
        key = (self.pipeline, name)
        for counter, (field, _) in OPERATOR_COUNTERS.items():
            self._child(counter, *key).inc(fold.counts[field])
        self._child("dropped", *key, "timeout").inc(fold.counts["dropped_timeout"])
        self._child("dropped", *key, "overflow").inc(fold.counts["dropped_overflow"])
        self._child("queue", *key).set(fold.queue)
        self._child("active", *key).set(fold.replicas)
        self._child("pool", *key).set(fold.pool)
        if fold.target is not None:
            self._child("target", *key).set(fold.target)
        self._child("busy", *key).set(fold.busy)
        for service_time_s in fold.service:
            self._child("service", *key).observe(service_time_s)

    def finish(self, totals: RunTotals) -> None:
        """The end-of-run counts the engine reads from its queues: each run-level counter is
        brought up to its total (what no interval reported: a failure, a restart or a host
        between the last interval and the end)."""
        self.flush()
        run = (self.pipeline,)
        for field in self.counted:
            self._count(field, max(0, getattr(totals, field) - self.counted[field]))
        self._child("host_cost", *run).set(totals.host_cost)
        self._child("finished", *run).set(1)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        self.flush()
        return prometheus().generate_latest(self.registry)

    @staticmethod
    def content_type() -> str:
        return str(prometheus().CONTENT_TYPE_LATEST)

    def state(self) -> dict[str, Any]:
        """The live view's JSON (report/liveview.py): the graph, the latest interval, the
        recent ones and the recent decisions that changed a replica count."""
        self.flush()
        with self._lock:
            recent, changes = list(self.recent), list(self.decisions)
        return live_state(self.pipeline, self.graph, self.objective, recent, changes)


def add_counts(total: dict[str, int], counts: tuple[tuple[str, int], ...]) -> None:
    """Add (name, n) pairs into `total`."""
    for name, n in counts:
        total[name] = total.get(name, 0) + n
