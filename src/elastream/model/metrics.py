"""The run metrics computed the same way for every engine: the end-of-run totals, the latency
histogram, the summary and the per-interval rows (declared in metric_catalog.py and
series_columns.py; summary.json, timeseries.csv, intervals.csv and the reports read them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise

import numpy as np

from elastream.base.arrays import distinct_counts
from elastream.model.objective import Objective, judge
from elastream.model.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class RunTotals:
    """Exact end-of-run counts an engine reads from its queues (not from the sampled snapshots)."""

    events_in: int  # source events offered to the pipeline
    events_out: int  # events that reached a sink
    completed: int  # source events whose processing finished (reached a sink or filtered by design)
    filtered: int  # events an operator consumed without output, by design
    dropped_timeout: int  # t_out expirations, all operators
    dropped_overflow: int  # q_size refusals, all queues
    latency_ms_mean: float | None
    latency_ms_p99: float | None
    failed: int = 0  # events whose operator function raised (isolated, kept in the error log)
    duplicates: int = 0  # events delivered twice to the same queue (must stay 0)
    dropped_restart: int = 0  # queued events lost by restart reconfigurations (simulator)
    queued: int = 0  # events still in an operator queue when the run stopped (Spark; --resume)
    query_restarts: int = 0  # failed queries restarted from their checkpoints (Spark)
    hosts_leased: int = 0  # hosts (executors) leased, the first ones included (spark.leasing)
    host_btus: int = 0  # BTUs started by the leased hosts
    host_cost: float = 0.0  # BTUs x price
    host_boot_s: float | None = None  # mean lease-to-registration time of leased executors
    host_re_leases: int = 0  # leases within one BTU after a released host's paid end (a defect)
    # (latency ms, events) pairs of the sink events: SLA compliance at any SLO, for any engine
    latency_histogram_ms: tuple[tuple[float, int], ...] = ()


def latency_histogram(
    latencies_ms: Sequence[float] | np.ndarray,
    resolution_ms: float = 1.0,
    counts: Sequence[int] | np.ndarray | None = None,
) -> tuple[tuple[float, int], ...]:
    """Exact latencies folded into `resolution_ms` bins (bin upper edge, count), each latency
    counted once, or `counts[i]` times."""
    edges = np.ceil(np.asarray(latencies_ms, float) / resolution_ms) * resolution_ms
    weights = None if counts is None else np.asarray(counts, np.int64)
    values, tallies = distinct_counts(edges, weights)
    return tuple(zip(values.tolist(), tallies.tolist(), strict=True))


def latency_histogram_of(
    counts_s: dict[float, int], resolution_ms: float = 1.0
) -> tuple[tuple[float, int], ...]:
    """Latencies in seconds with their counts, folded in `resolution_ms` bins (bin upper edge
    in ms, count), as latency_histogram does for single latencies in ms."""
    seconds = np.fromiter(counts_s.keys(), float, len(counts_s))
    counts = np.fromiter(counts_s.values(), np.int64, len(counts_s))
    return latency_histogram(seconds * 1000.0, resolution_ms, counts)


def histogram_quantile(histogram: Sequence[tuple[float, int]], q: float) -> float | None:
    """The nearest-rank q-quantile of (value, count) pairs sorted by value (None if empty)."""
    total = sum(n for _, n in histogram)
    seen = 0
    for value, n in histogram:
        seen += n
        if seen >= q * total:
            return value
    return None


@dataclass
class LatencyTally:
    """Sink latencies folded in as the store's retention forgets them (`QueueStore.expire`):
    count and sum exact, the histogram in 1-ms bins, so memory does not grow with the run."""

    n: int = 0
    sum_ms: float = 0.0
    bins: dict[float, int] = field(default_factory=dict)

    def add(self, latencies_ms: Sequence[float]) -> None:
        for edge, count in latency_histogram(latencies_ms):
            self.bins[edge] = self.bins.get(edge, 0) + count
        self.n += len(latencies_ms)
        self.sum_ms += sum(latencies_ms)

    def with_kept(
        self, kept_ms: Sequence[float]
    ) -> tuple[float | None, float | None, tuple[tuple[float, int], ...]]:
        """Mean, nearest-rank p99 (to the 1-ms bin) and histogram of the forgotten latencies
        and `kept_ms` together."""
        merged = LatencyTally(self.n, self.sum_ms, dict(self.bins))
        merged.add(kept_ms)
        histogram = tuple(sorted(merged.bins.items()))
        mean = merged.sum_ms / merged.n if merged.n else None
        return mean, histogram_quantile(histogram, 0.99), histogram


@dataclass(frozen=True, slots=True)
class Summary:
    """The run's figures, as summary.json writes them (their meaning: RUN_METRICS)."""

    replica_seconds_saved_ratio: float
    throughput_degradation: float
    processed_ratio: float
    latency_ms_mean: float | None
    latency_ms_p99: float | None
    events_in: int
    events_out: int
    events_completed: int
    events_filtered: int
    events_dropped_timeout: int
    events_dropped_overflow: int
    events_dropped_restart: int
    events_failed: int
    query_restarts: int
    replicas_mean: float
    replicas_max: int
    overprovisioned_replicas: int
    reconfigurations: int
    replica_seconds: float
    intervals: int
    messages: int = 0
    hosts_leased: int = 0
    host_btus: int = 0
    host_cost: float = 0.0
    host_boot_s: float | None = None
    host_re_leases: int = 0
    events_queued: int = 0  # still in an operator queue at the end (a stopped run; --resume)

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def total_replicas(snapshot: Snapshot) -> int:
    return sum(o.replicas for o in snapshot.operators)


def intervals_with_input(snapshot: Snapshot) -> int:
    """How many of the intervals a snapshot stands for had source input (λ_G(t) > 0)."""
    return snapshot.intervals - snapshot.idle_intervals if snapshot.source_events > 0 else 0


def degradation(snapshot: Snapshot) -> float:
    """|input − completed| / input of one snapshot (0 without input)."""
    lam = snapshot.source_events
    return abs(lam - snapshot.completed) / lam if lam > 0 else 0.0


def throughput_degradation(snapshots: Sequence[Snapshot]) -> float:
    """Mean over intervals with input of |input_rate - output_rate| / input_rate (PSPS V-A.3).

    Input is λ_G(t); output is the number of source events whose processing completed in t, so a
    filter does not count as degradation and a pipeline keeping pace scores 0. A fast-forwarded
    stretch counts once per interval of it that had input."""
    weights = [intervals_with_input(s) for s in snapshots]
    total = sum(weights)
    ratios = [degradation(s) * w for s, w in zip(snapshots, weights, strict=True) if w]
    return sum(ratios) / total if total else 0.0


def objective_column(snapshot: Snapshot, objective: Objective | None) -> float | None:
    """intervals.csv's objective_met: 1.0 met, 0.0 missed, None not judged or no objective."""
    if objective is None:
        return None
    met = judge(snapshot, objective).met
    return None if met is None else float(met)


def interval_rows(
    snapshots: Sequence[Snapshot], objective: Objective | None = None
) -> list[dict[str, float | int | None]]:
    """One row per interval with the system-level figures (columns: INTERVAL_SERIES); each
    interval judged against `objective` when the run has one."""
    return [
        {
            "t": s.t,
            "interval_s": s.interval_s,
            "input": s.source_events,
            "completed": s.completed,
            "sink_events": s.sink_events,
            "input_rate": s.source_events / s.interval_s if s.interval_s > 0 else 0.0,
            "output_rate": s.completed / s.interval_s if s.interval_s > 0 else 0.0,
            "latency_ms_mean": s.latency_ms_mean,
            "latency_ms_p99": s.latency_ms_p99,
            "objective_met": objective_column(s, objective),
            "replicas_total": total_replicas(s),
            "queue_total": sum(o.queue for o in s.operators),
            "source_backlog": s.external_backlog,
            "hosts_up": s.hosts_up,
            "host_cost": s.host_cost,
        }
        for s in snapshots
    ]


def replica_changes(before: Snapshot, after: Snapshot) -> int:
    """Operators whose active replica count differs between two consecutive snapshots."""
    previous = before.replicas()
    return sum(1 for o in after.operators if previous.get(o.name) != o.replicas)


def reconfigurations(snapshots: Sequence[Snapshot]) -> int:
    """How many (interval, operator) pairs changed their active replica count."""
    return sum(replica_changes(prev, cur) for prev, cur in pairwise(snapshots))


def summarize(
    snapshots: Sequence[Snapshot],
    totals: RunTotals,
    overprovisioned_replicas: int,
    *,
    messages: int = 0,
) -> Summary:
    """Replica-seconds saved = 1 - mean(Σ r_i) / r_over (PSPS' saved resources); processed
    ratio = completed / events in; `messages`: what the policy's agents sent over the run (0
    for a central policy). Computed from every snapshot of the run (RunningSummary gives the
    same in constant memory)."""
    sums = [total_replicas(s) * s.intervals for s in snapshots]
    return build_summary(
        totals,
        overprovisioned_replicas,
        replica_intervals=sum(sums),
        intervals=sum(s.intervals for s in snapshots),
        replicas_max=max((total_replicas(s) for s in snapshots), default=0),
        throughput_degradation=throughput_degradation(snapshots),
        reconfigurations=reconfigurations(snapshots),
        replica_seconds=sum(total_replicas(s) * s.interval_s for s in snapshots),
        messages=messages,
    )


def build_summary(
    totals: RunTotals,
    overprovisioned_replicas: int,
    *,
    replica_intervals: int,
    intervals: int,
    replicas_max: int,
    throughput_degradation: float,
    reconfigurations: int,
    replica_seconds: float,
    messages: int = 0,
) -> Summary:
    """The Summary from the exact end-of-run counts and the per-interval aggregates."""
    if overprovisioned_replicas < 1:
        raise ValueError(
            f"the over-provisioned replica count must be >= 1, got {overprovisioned_replicas}"
        )
    mean = replica_intervals / max(intervals, 1)
    return Summary(
        replica_seconds_saved_ratio=1.0 - mean / overprovisioned_replicas,
        throughput_degradation=throughput_degradation,
        processed_ratio=totals.completed / totals.events_in if totals.events_in else 1.0,
        latency_ms_mean=totals.latency_ms_mean,
        latency_ms_p99=totals.latency_ms_p99,
        events_in=totals.events_in,
        events_out=totals.events_out,
        events_completed=totals.completed,
        events_filtered=totals.filtered,
        events_dropped_timeout=totals.dropped_timeout,
        events_dropped_overflow=totals.dropped_overflow,
        events_dropped_restart=totals.dropped_restart,
        events_failed=totals.failed,
        query_restarts=totals.query_restarts,
        replicas_mean=mean,
        replicas_max=replicas_max,
        overprovisioned_replicas=overprovisioned_replicas,
        reconfigurations=reconfigurations,
        replica_seconds=replica_seconds,
        intervals=intervals,
        messages=messages,
        hosts_leased=totals.hosts_leased,
        host_btus=totals.host_btus,
        host_cost=totals.host_cost,
        host_boot_s=totals.host_boot_s,
        host_re_leases=totals.host_re_leases,
        events_queued=totals.queued,
    )


class RunningSummary:
    """The per-interval aggregates of the Summary, kept as the run goes: the same numbers as
    summarize() over every snapshot, in memory that does not grow with the run's length."""

    def __init__(self) -> None:
        self.intervals = 0
        self.replica_intervals = 0
        self.replicas_max = 0
        self.degradation_sum = 0.0
        self.degradation_intervals = 0
        self.reconfigurations = 0
        self.replica_seconds: float = 0
        self.last: Snapshot | None = None

    def add(self, snapshot: Snapshot) -> None:
        """Fold in one snapshot (one interval, or a fast-forwarded stretch)."""
        replicas = total_replicas(snapshot)
        self.intervals += snapshot.intervals
        self.replica_intervals += replicas * snapshot.intervals
        self.replicas_max = max(self.replicas_max, replicas)
        weight = intervals_with_input(snapshot)
        if weight:
            self.degradation_sum += degradation(snapshot) * weight
            self.degradation_intervals += weight
        if self.last is not None:
            self.reconfigurations += replica_changes(self.last, snapshot)
        self.replica_seconds += replicas * snapshot.interval_s
        self.last = snapshot

    def summary(
        self, totals: RunTotals, overprovisioned_replicas: int, *, messages: int = 0
    ) -> Summary:
        """The run's Summary, given its exact end-of-run counts and the agents' messages."""
        mean_degradation = (
            self.degradation_sum / self.degradation_intervals if self.degradation_intervals else 0.0
        )
        return build_summary(
            totals,
            overprovisioned_replicas,
            replica_intervals=self.replica_intervals,
            intervals=self.intervals,
            replicas_max=self.replicas_max,
            throughput_degradation=mean_degradation,
            reconfigurations=self.reconfigurations,
            replica_seconds=self.replica_seconds,
            messages=messages,
        )
