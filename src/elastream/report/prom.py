"""The run's Prometheus metrics: a MAPE-loop observer that folds every interval's snapshot and
decision into counters, gauges and histograms (names and units: docs/deploy.md §Metrics)."""

from __future__ import annotations

from collections import deque
from types import ModuleType
from typing import Any

from elastream.base.extras import require
from elastream.control.policy import Decision
from elastream.model.metrics import RunTotals, replica_changes
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import OperatorStats, Snapshot
from elastream.report.series import utilization

KEEP_POINTS = 300  # intervals the live view charts
KEEP_DECISIONS = 50  # replica changes its timeline lists
OP = ("pipeline", "operator")
RUN = ("pipeline",)
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

# run-level counters fed per interval and completed at the end: RunTotals field -> attribute
RUN_COUNTERS = {
    "failed": "failed",
    "dropped_restart": "dropped_restart",
    "query_restarts": "restarts",
    "hosts_leased": "hosts_leased",
}


def prometheus() -> ModuleType:
    return require("prometheus_client", extra="metrics", feature="the /metrics endpoint")


class RunMetrics:
    """Observer `(snapshot, decision) -> None` publishing one run's metrics in its own registry.

    Counters add each interval's counts, so at the end they equal the sums of intervals.csv and
    summary.json's per-operator counts exactly. The run's failed events, query restarts and
    hosts leased count live too; `finish(totals)` adds what the engine's end-of-run totals hold
    beyond what the intervals reported (e.g. a failure after the last interval)."""

    def __init__(self, pipeline: Pipeline) -> None:
        prom = prometheus()
        self.pipeline = pipeline.name
        self.registry = prom.CollectorRegistry(auto_describe=True)
        self._last: Snapshot | None = None
        self.host_ids: set[str] = set()  # every leased host seen so far
        self.counted = dict.fromkeys(RUN_COUNTERS, 0)  # the run-level counters' values
        self.last_decision: Decision | None = None
        self.decisions: deque[tuple[float, str, int, int, str]] = deque(maxlen=KEEP_DECISIONS)
        self.series: deque[dict[str, Any]] = deque(maxlen=KEEP_POINTS)  # the live view's charts
        reg = {"registry": self.registry}
        counter, gauge, histogram = prom.Counter, prom.Gauge, prom.Histogram
        self.op_counters = {
            field: counter(f"elastream_operator_{name}", help_text, OP, **reg)
            for name, (field, help_text) in OPERATOR_COUNTERS.items()
        }
        self.dropped = counter(
            "elastream_operator_events_dropped",
            "events dropped: reason=timeout (older than t_out) or overflow (queue full)",
            (*OP, "reason"),
            **reg,
        )
        self.queue = gauge(
            "elastream_operator_queue_events",
            "events waiting at the end of the interval",
            OP,
            **reg,
        )
        self.active = gauge("elastream_operator_replicas_active", "active replicas", OP, **reg)
        self.pool = gauge("elastream_operator_replicas_pool", "replicas in the pool", OP, **reg)
        self.target = gauge(
            "elastream_operator_replicas_target",
            "the policy's decision: target replicas",
            OP,
            **reg,
        )
        self.busy = gauge(
            "elastream_operator_busy_ratio", "mean replica utilization in the interval", OP, **reg
        )
        self.service = histogram(
            "elastream_operator_service_time_seconds",
            "mean service time of one event on one replica, one observation per interval",
            OP,
            buckets=SERVICE_BUCKETS,
            **reg,
        )
        self.source_events = counter("elastream_source_events", "source events", RUN, **reg)
        self.source_rate = gauge(
            "elastream_source_rate_events_per_second", "source events per second", RUN, **reg
        )
        self.backlog = gauge(
            "elastream_source_backlog_events",
            "events an external source holds not yet read (files: rows of unread files; "
            "redis: entries not yet ingested)",
            (*RUN, "source"),
            **reg,
        )
        self.completed = counter(
            "elastream_events_completed", "source events whose processing finished", RUN, **reg
        )
        self.sink = counter("elastream_sink_events", "events that reached a sink", RUN, **reg)
        self.latency = histogram(
            "elastream_latency_seconds",
            "mean end-to-end latency of the interval's sink events, one observation per interval",
            RUN,
            buckets=LATENCY_BUCKETS,
            **reg,
        )
        self.intervals = counter("elastream_intervals", "MAPE intervals", RUN, **reg)
        self.reconfigurations = counter(
            "elastream_reconfigurations",
            "(interval, operator) pairs whose active replica count changed",
            RUN,
            **reg,
        )
        self.hosts_up = gauge("elastream_hosts_up", "leased hosts up", RUN, **reg)
        self.host_cost = gauge("elastream_host_cost", "cost of the leased hosts so far", RUN, **reg)
        self.failed = counter(
            "elastream_events_failed", "events whose operator function raised", RUN, **reg
        )
        self.dropped_restart = counter(
            "elastream_events_dropped_restart",
            "queued events lost by restart reconfigurations (the simulator's restart model)",
            RUN,
            **reg,
        )
        self.restarts = counter(
            "elastream_query_restarts",
            "failed queries (operators', sources', sinks') restarted from their checkpoints",
            RUN,
            **reg,
        )
        self.hosts_leased = counter(
            "elastream_hosts_leased",
            "hosts leased over the run, the first ones included",
            RUN,
            **reg,
        )
        self.finished = gauge("elastream_run_finished", "1 once the run has ended", RUN, **reg)
        self.finished.labels(self.pipeline).set(0)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once per run (labels() costs more than inc())."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        run = (self.pipeline,)
        targets = decision.as_dict()
        for o in snapshot.operators:
            self._operator(o, snapshot.td, targets.get(o.name))
            target = targets.get(o.name)
            if target is not None and target != o.replicas:
                self.decisions.append(
                    (snapshot.t, o.name, o.replicas, target, decision.reason(o.name))
                )
        self._count("failed", sum(o.failed for o in snapshot.operators))
        self._count("dropped_restart", snapshot.dropped_restart)
        self._count("query_restarts", snapshot.query_restarts)
        for source, n in snapshot.source_backlog:
            self._child(self.backlog, *run, source).set(n)
        self._child(self.source_events, *run).inc(snapshot.lambda_g)
        self._child(self.source_rate, *run).set(
            snapshot.lambda_g / snapshot.td if snapshot.td else 0
        )
        self._child(self.completed, *run).inc(snapshot.completed)
        self._child(self.sink, *run).inc(snapshot.sink_events)
        if snapshot.latency_ms_mean is not None:
            self._child(self.latency, *run).observe(snapshot.latency_ms_mean / 1000)
        self._child(self.intervals, *run).inc(snapshot.intervals)
        if self._last is not None:
            self._child(self.reconfigurations, *run).inc(replica_changes(self._last, snapshot))
        new_hosts = {h.host_id for h in snapshot.hosts} - self.host_ids
        self.host_ids |= new_hosts
        self._count("hosts_leased", len(new_hosts))
        self._child(self.hosts_up, *run).set(snapshot.hosts_up)
        self._child(self.host_cost, *run).set(snapshot.host_cost)
        self._last, self.last_decision = snapshot, decision
        self.series.append(self._point(snapshot, decision))

    def _count(self, field: str, n: int) -> None:
        """Add `n` to the run-level counter of RunTotals' `field` (RUN_COUNTERS)."""
        self.counted[field] += n
        getattr(self, RUN_COUNTERS[field]).labels(self.pipeline).inc(n)

    def _operator(self, o: OperatorStats, td: float, target: int | None) -> None:
        key = (self.pipeline, o.name)
        for field, metric in self.op_counters.items():
            self._child(metric, *key).inc(getattr(o, field))
        self._child(self.dropped, *key, "timeout").inc(o.dropped_timeout)
        self._child(self.dropped, *key, "overflow").inc(o.dropped_overflow)
        self._child(self.queue, *key).set(o.queue)
        self._child(self.active, *key).set(o.replicas)
        self._child(self.pool, *key).set(o.max_replicas)
        if target is not None:
            self._child(self.target, *key).set(target)
        self._child(self.busy, *key).set(utilization(o, td))
        if o.et_s is not None:
            self._child(self.service, *key).observe(o.et_s)

    def finish(self, totals: RunTotals) -> None:
        """The end-of-run counts the engine reads from its queues: each run-level counter is
        brought up to its total (what no interval reported: a failure, a restart or a host
        between the last interval and the end)."""
        run = (self.pipeline,)
        for field in self.counted:
            self._count(field, max(0, getattr(totals, field) - self.counted[field]))
        self.host_cost.labels(*run).set(totals.host_cost)
        self.finished.labels(*run).set(1)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return prometheus().generate_latest(self.registry)

    @staticmethod
    def content_type() -> str:
        return str(prometheus().CONTENT_TYPE_LATEST)

    @staticmethod
    def _point(snap: Snapshot, decision: Decision) -> dict[str, Any]:
        """One interval as the live view shows it."""
        targets = decision.as_dict()
        return {
            "t": snap.t,
            "input_rate": snap.lambda_g / snap.td if snap.td else 0.0,
            "latency_ms_mean": snap.latency_ms_mean,
            "hosts": [
                {"id": h.host_id, "up": h.up, "btus": h.btus, "btu_left_s": h.btu_left_s}
                for h in snap.hosts
            ],
            "host_cost": snap.host_cost,
            "operators": [
                {
                    "name": o.name,
                    "rate": o.processed / snap.td if snap.td else 0.0,
                    "queue": o.queue,
                    "replicas": o.replicas,
                    "pool": o.max_replicas,
                    "target": targets.get(o.name),
                    "service_ms": None if o.et_s is None else o.et_s * 1000,
                    "busy": utilization(o, snap.td),
                    "reason": decision.reason(o.name),
                }
                for o in snap.operators
            ],
        }

    def state(self) -> dict[str, Any]:
        """The live view's JSON: the latest interval, the recent ones (`series`, oldest first)
        and the recent decisions that changed a replica count."""
        latest = self.series[-1] if self.series else {"t": None, "operators": [], "hosts": []}
        return {
            "pipeline": self.pipeline,
            **latest,
            "series": [
                {"t": p["t"], "operators": {o["name"]: o for o in p["operators"]}}
                for p in self.series
            ],
            "decisions": [
                {"t": t, "operator": op, "from": a, "to": b, "reason": why}
                for t, op, a, b, why in self.decisions
            ],
        }
