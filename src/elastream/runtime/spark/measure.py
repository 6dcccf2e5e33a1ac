"""The Spark runtime's Monitor step: each interval's figures read from the queue store (the
replicas' shares, outcomes and arrivals), and the run's totals at its end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from elastream.model.events import OutcomeKind
from elastream.model.metrics import LatencyTally, RunTotals, latency_histogram
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import OperatorStats
from elastream.prediction.service_time import ShareSums, service_time_variance
from elastream.runtime.queues import Metrics, QueueStore, ReplicaWork
from elastream.runtime.queues.records import per_event_s
from elastream.runtime.spark.replicas import Replicas
from elastream.runtime.spark.source import cap_hit_key


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


def _service_time_var(work: ReplicaWork | None) -> float | None:
    """A replica's per-event service-time variance from its shares in the interval (Eq. V2)."""
    if work is None:
        return None
    sums = ShareSums(work.shares, work.events, work.busy_s, work.busy_sq_per_event)
    return service_time_variance(sums)


class Monitor:
    """Per interval: every operator's stats and every source's events; at the end, the totals."""

    def __init__(self, pipeline: Pipeline, store: QueueStore, replicas: Replicas) -> None:
        self.pipeline = pipeline
        self.store = store
        self.replicas = replicas
        self.completed_before = 0  # source events completed by the previous interval's end
        self.forgotten = LatencyTally()  # sink latencies the store's retention has expired

    def measure(
        self, t0: float, t1: float
    ) -> tuple[tuple[OperatorStats, ...], tuple[tuple[str, int], ...]]:
        """Every operator's stats and every source's events in [t0, t1), each queue's arrivals
        read once (an operator's own, its stream targets' and a source's first target's)."""
        arrivals = IntervalArrivals(self.store, t0, t1)
        stats_list = []
        for name in self.pipeline.topological_order:
            tasks = self.store.task_stats(name, t0, t1)
            stats = self.operator_stats(name, t0, t1, tasks, arrivals)
            self.replicas.remember(stats, tasks)
            stats_list.append(stats)
        sources = tuple((s, self.source_count(s, arrivals)) for s in self.pipeline.source_names)
        return tuple(stats_list), sources

    def completed_since(self) -> int:
        """Source events whose whole lineage completed since the last call (outputs of any
        generation and filtered events do not count on their own: docs/outputs.md)."""
        now = self.store.lineage(self.pipeline.topological_order).completed
        completed, self.completed_before = now - self.completed_before, now
        return completed

    def expire(self, before: float) -> None:
        """Retention: the store's audit records before `before` go, their latencies kept."""
        self.forgotten.add(self.store.expire(before).sink_latencies_ms)

    def operator_stats(
        self,
        name: str,
        t0: float,
        t1: float,
        tasks: dict[int, ReplicaWork],
        reads: IntervalArrivals,
    ) -> OperatorStats:
        spec = self.pipeline.operator(name)
        st = self.replicas[name]
        arrivals = reads(name)
        kinds, emitted = self.store.outcome_counts(name, t0, t1)
        busy = sum(w.busy_s for w in tasks.values())
        et = per_event_s(tasks.values())
        served_by = range(max(st.replicas, max(tasks, default=-1) + 1))  # retired ones after
        per_replica = [tasks[j].events if j in tasks else 0 for j in served_by]
        td = t1 - t0
        # Eq. 5: U_ij = μ_ij · et_i / td
        util = [n * (et or st.service_time_s) / td for n in per_replica]
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
            service_time_s=et,
            busy_s=busy,
            dropped_timeout=kinds.get(OutcomeKind.TIMEOUT, 0),
            dropped_overflow=self.store.overflow_count(name, t0, t1),
            failed=kinds.get(OutcomeKind.ERROR, 0),
            replica_processed=tuple(per_replica),
            utilization=tuple(util),
            stateful=not spec.stateless,
            cpu_s=sum(w.cpu_s for w in tasks.values()),
            admission_capped=float(self.store.meta(cap_hit_key(name), -1.0)) >= t0,
            emitted_streams=self.emitted_streams(name, reads),
            service_time_var=tuple(_service_time_var(tasks.get(j)) for j in served_by),
            replica_batches=tuple(tasks[j].shares if j in tasks else 0 for j in served_by),
        )

    def emitted_streams(self, name: str, reads: IntervalArrivals) -> tuple[tuple[str, int], ...]:
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

    def source_count(self, source: str, reads: IntervalArrivals) -> int:
        """λ_G share of one source: events it offered in the interval to its first target."""
        first = self.pipeline.successors(source)[0]
        return reads(first).get(source, 0)

    def totals(self, query_restarts: int, hosts: dict[str, Any]) -> RunTotals:
        """The run's totals from the store's audit (`hosts`: the leases' figures, if any)."""
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
            query_restarts=query_restarts,
            latency_histogram_ms=histogram,
            **hosts,
        )
