"""The one metrics table: every run metric and per-interval series column, declared once with its
unit, definition (the paper's section) and aggregation, and computed the same way for every
engine. summary.json, timeseries.csv, intervals.csv, the bench tables and the reports read it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise

from elastream.model.objective import Objective, judge
from elastream.model.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric: its name (a Summary field, a results or a series column), how it reads in a
    table, its unit, its definition and how it aggregates over a run or an interval."""

    name: str
    label: str  # long label (the run report)
    short: str  # short column heading (bench tables and plots)
    unit: str  # ratio, ms, events, replicas, replica-s, changes, intervals, events/s
    definition: str  # one line in plain words (the report's "meaning")
    aggregate: str  # how it is obtained from the intervals or the exact counts
    better: str = ""  # "higher", "lower" or "" (a count, no direction)
    paper: bool = False  # one of PSPS V-A.3's four
    digits: int = 4  # digits in a paper table
    # A series column over several intervals (series_resolution_s): "sum", "last", "mean"
    # (weighted by each interval's length) or the name of the column that weights the mean.
    resample: str = "last"
    symbol: str = ""  # the paper's symbol or name and where it is defined (docs/glossary.md)


RUN_METRICS: tuple[Metric, ...] = (
    Metric(
        "replica_seconds_saved_ratio",
        "Replica-seconds saved",
        "saved",
        "ratio",
        "share of the over-provisioned replicas' time not used: 1 − mean active replicas / "
        "over-provisioned replicas",
        "mean over intervals of the active replicas of all operators",
        "higher",
        paper=True,
        symbol="saved resources, 1 − mean Σ_i r_i(t) / r_over (PSPS V-A.3)",
    ),
    Metric(
        "throughput_degradation",
        "Throughput degradation",
        "thr. degr.",
        "ratio",
        "mean over the intervals with input of |input − output| / input",
        "mean over the intervals with input",
        "lower",
        paper=True,
        symbol="throughput degradation, |λ_G(t) − output(t)| / λ_G(t) (PSPS V-A.3)",
    ),
    Metric(
        "processed_ratio",
        "Processed ratio",
        "processed",
        "ratio",
        "source events whose processing completed / source events offered",
        "exact end-of-run counts",
        "higher",
        paper=True,
        symbol="processed events (PSPS V-A.3)",
    ),
    Metric(
        "latency_ms_mean",
        "Latency (mean)",
        "latency ms",
        "ms",
        "mean end-to-end latency of the events that reached a sink",
        "exact, over every sink event",
        "lower",
        paper=True,
        digits=2,
        symbol="latency (PSPS V-A.3)",
    ),
    Metric(
        "latency_ms_p99",
        "Latency (p99)",
        "p99 (ms)",
        "ms",
        "99th percentile of end-to-end latency at the sinks",
        "exact, over every sink event",
        "lower",
        digits=0,
    ),
    Metric(
        "events_in",
        "Events in",
        "in",
        "events",
        "source events offered to the pipeline",
        "exact end-of-run count",
    ),
    Metric(
        "events_out",
        "Events out",
        "out",
        "events",
        "events that reached a sink",
        "exact end-of-run count",
    ),
    Metric(
        "events_completed",
        "Events completed",
        "completed",
        "events",
        "source events whose processing finished (reached a sink or filtered by design)",
        "exact end-of-run count",
    ),
    Metric(
        "events_filtered",
        "Events filtered",
        "filtered",
        "events",
        "events consumed without output, by design",
        "exact end-of-run count",
    ),
    Metric(
        "events_dropped_timeout",
        "Dropped (timeout)",
        "timeout",
        "events",
        "events older than the event timeout (event_timeout_s) when their turn came",
        "exact end-of-run count",
        "lower",
        symbol="t_out expirations (PSPS V-B)",
    ),
    Metric(
        "events_dropped_overflow",
        "Dropped (overflow)",
        "overflow",
        "events",
        "events refused by a full queue (queue_capacity)",
        "exact end-of-run count",
        "lower",
        symbol="q_size overflow (PSPS V-B)",
    ),
    Metric(
        "events_dropped_restart",
        "Dropped (restart)",
        "restart",
        "events",
        "queued events lost by restart reconfigurations (simulator's restart model)",
        "exact end-of-run count",
        "lower",
    ),
    Metric(
        "events_failed",
        "Failed",
        "failed",
        "events",
        "events whose operator function raised an error",
        "exact end-of-run count",
        "lower",
    ),
    Metric(
        "events_queued",
        "Still queued",
        "queued",
        "events",
        "events still in an operator queue when the run ended (a stopped run; --resume delivers "
        "them)",
        "exact end-of-run count",
    ),
    Metric(
        "query_restarts",
        "Query restarts",
        "restarts",
        "restarts",
        "failed queries (operators', sources', sinks') restarted from their checkpoints (Spark)",
        "exact end-of-run count",
        "lower",
        digits=0,
    ),
    Metric(
        "replicas_mean",
        "Replicas (mean)",
        "replicas",
        "replicas",
        "mean over intervals of the active replicas of all operators",
        "mean over intervals",
        "lower",
    ),
    Metric(
        "replicas_max",
        "Replicas (max)",
        "max repl.",
        "replicas",
        "largest number of active replicas of all operators in one interval",
        "max over intervals",
    ),
    Metric(
        "overprovisioned_replicas",
        "Over-provisioned replicas",
        "provisioned",
        "replicas",
        "the replicas a fixed over-provisioned deployment would run: the pipeline's "
        "overprovisioned_replicas, else the sum of the pool sizes",
        "from the pipeline",
        symbol="r_over (PSPS V-A.3)",
    ),
    Metric(
        "reconfigurations",
        "Reconfigurations",
        "reconf.",
        "changes",
        "(interval, operator) pairs whose active replica count changed",
        "sum over intervals",
        "lower",
        digits=0,
    ),
    Metric(
        "replica_seconds",
        "Replica-seconds",
        "replica-s",
        "replica-s",
        "the sum over intervals of active replicas × interval length: the resources used",
        "sum over intervals",
        "lower",
        digits=0,
    ),
    Metric(
        "messages",
        "Messages",
        "messages",
        "messages",
        "control messages the scaling agents sent (decentralized policy); 0 for a central policy",
        "sum over intervals",
        "lower",
        digits=0,
        symbol="messages (Belkhiria-Tedeschi Section 5.4)",
    ),
    Metric(
        "hosts_leased",
        "Hosts leased",
        "hosts",
        "hosts",
        "hosts (executors) leased over the run, the first ones included (spark.leasing)",
        "exact end-of-run count",
        digits=0,
    ),
    Metric(
        "host_btus",
        "Billing units paid",
        "billing units",
        "billing units",
        "billing time units started by the leased hosts (a started unit is paid in full)",
        "exact end-of-run count",
        "lower",
        digits=0,
        symbol="BTU, billing time unit (VISP, Hochreiner et al.)",
    ),
    Metric(
        "host_cost",
        "Host cost",
        "cost",
        "price units",
        "billing time units paid × the price of one",
        "exact end-of-run count",
        "lower",
        digits=2,
        symbol="resource cost (VISP, Hochreiner et al.)",
    ),
    Metric(
        "host_boot_s",
        "Host boot (mean)",
        "boot s",
        "s",
        "mean time from leasing an executor to its registration with the driver",
        "mean over leases",
        "lower",
        digits=1,
    ),
    Metric(
        "intervals",
        "Intervals",
        "intervals",
        "intervals",
        "control intervals (measure, decide, act) in the run",
        "count",
    ),
)
SLA_FACTORS = (1, 2, 5)  # seed 004 "Metrics": real-time, near real-time, relaxed
SLA_METRICS: tuple[Metric, ...] = tuple(
    Metric(
        f"sla_{f}x",
        f"SLA compliance {f}×",
        f"SLA {f}×",
        "ratio",
        f"share of events within {f}× the processing-time objective",
        "exact, from the latency histogram; lost events count as late",
        "higher",
        digits=3,
    )
    for f in SLA_FACTORS
)

# Per interval × operator: timeseries.csv (what the Monitor step saw, and the decision).
OPERATOR_SERIES: tuple[Metric, ...] = (
    Metric("t", "time", "t", "s", "end of the interval, seconds since the run started", "-"),
    Metric("operator", "operator", "operator", "", "the operator's name", "-"),
    Metric(
        "received",
        "received",
        "received",
        "events",
        "events that arrived in the operator's queue",
        "sum in t",
        resample="sum",
        symbol="λ^r_i(t) (PSPS Table I)",
    ),
    Metric(
        "processed",
        "processed",
        "processed",
        "events",
        "events taken from the queue and handled, filtered ones included",
        "sum in t",
        resample="sum",
        symbol="μ_i(t) (PSPS Table I)",
    ),
    Metric(
        "queue",
        "queue",
        "queue",
        "events",
        "events waiting at the end of the interval",
        "at the end of t",
        symbol="|q_i(t)| (PSPS Table I)",
    ),
    Metric(
        "replicas",
        "replicas",
        "replicas",
        "replicas",
        "active replicas during the interval",
        "during t",
        resample="mean",
        symbol="r_i(t) (PSPS Table I)",
    ),
    Metric(
        "service_ms",
        "service time",
        "service ms",
        "ms",
        "mean time one replica takes to process one event",
        "mean in t (empty: nothing processed)",
        resample="processed",
        symbol="et_i, execution time (PSPS Table I)",
    ),
    Metric(
        "utilization",
        "utilization",
        "util.",
        "ratio",
        "mean busy share of the active replicas: events served × service time / interval",
        "mean in t",
        resample="mean",
        symbol="U_ij(t) = μ_ij(t)·et_i / td (PSPS Eq. 5)",
    ),
    Metric(
        "target",
        "target",
        "target",
        "replicas",
        "replicas decided at the end of the interval, for the next one",
        "the guarded decision",
        symbol="r_i(t+1) (PSPS Eq. 1)",
    ),
    Metric(
        "dropped_timeout",
        "dropped timeout",
        "timeout",
        "events",
        "events older than the event timeout (event_timeout_s) when their turn came",
        "sum in t",
        resample="sum",
        symbol="t_out expirations (PSPS V-B)",
    ),
    Metric(
        "dropped_overflow",
        "dropped overflow",
        "overflow",
        "events",
        "events refused by the full queue (queue_capacity)",
        "sum in t",
        resample="sum",
        symbol="q_size overflow (PSPS V-B)",
    ),
    Metric(
        "emitted",
        "emitted",
        "emitted",
        "events",
        "output events sent downstream",
        "sum in t",
        resample="sum",
    ),
    Metric(
        "failed",
        "failed",
        "failed",
        "events",
        "events on which the operator's function raised (each kept in the error log)",
        "sum in t",
        resample="sum",
    ),
    Metric("min_replicas", "pool min", "min", "replicas", "the pool's lower bound", "-"),
    Metric("max_replicas", "pool max", "max", "replicas", "the pool's size", "-"),
    Metric("reason", "reason", "reason", "", "the policy's reason, as a sentence", "-"),
    Metric(
        "reason_detail",
        "reason detail",
        "detail",
        "",
        "the figures behind the reason, in the policy's own symbols (docs/glossary.md)",
        "-",
    ),
)
# Per interval: intervals.csv of a run, and of every run of a benchmark (with its run_id).
INTERVAL_SERIES: tuple[Metric, ...] = (
    Metric("t", "time", "t", "s", "end of the interval, seconds since the run started", "-"),
    Metric(
        "interval_s",
        "interval",
        "interval s",
        "s",
        "the interval's length",
        "-",
        resample="sum",
        symbol="td (PSPS Table I)",
    ),
    Metric(
        "input",
        "input",
        "input",
        "events",
        "events the sources sent",
        "sum in t",
        resample="sum",
        symbol="λ_G(t) (PSPS Table I)",
    ),
    Metric(
        "completed",
        "completed",
        "completed",
        "events",
        "source events whose processing completed in t",
        "sum in t",
        resample="sum",
    ),
    Metric(
        "sink_events",
        "sink events",
        "sink",
        "events",
        "events that reached a sink",
        "sum in t",
        resample="sum",
    ),
    Metric(
        "input_rate",
        "input rate",
        "in/s",
        "events/s",
        "input / interval length",
        "rate in t",
        resample="mean",
    ),
    Metric(
        "output_rate",
        "output rate",
        "out/s",
        "events/s",
        "completed / interval length",
        "rate in t",
        resample="mean",
    ),
    Metric(
        "latency_ms_mean",
        "latency",
        "latency ms",
        "ms",
        "mean end-to-end latency of the events reaching sinks in t",
        "mean in t",
        resample="sink_events",
    ),
    Metric(
        "latency_ms_p99",
        "latency p99",
        "p99 ms",
        "ms",
        "99th percentile of end-to-end latency of the events reaching sinks in t",
        "nearest rank in t (aggregated rows: weighted by sink events, an approximation)",
        resample="sink_events",
    ),
    Metric(
        "objective_met",
        "objective met",
        "obj. met",
        "ratio",
        "1 when the interval kept the run's latency objective, 0 when it missed it, empty "
        "when not judged or without an objective (docs/policies.md, objective)",
        "verdict of t (aggregated rows: share of the intervals judged)",
        resample="mean",
    ),
    Metric(
        "replicas_total",
        "replicas",
        "replicas",
        "replicas",
        "active replicas of all operators",
        "during t",
        resample="mean",
        symbol="Σ_i r_i(t)",
    ),
    Metric(
        "queue_total",
        "queued",
        "queued",
        "events",
        "events waiting in all operators' queues at the end of the interval",
        "at the end of t",
        symbol="Σ_i |q_i(t)|",
    ),
    Metric(
        "source_backlog",
        "external backlog",
        "backlog",
        "events",
        "events the external sources hold and the pipeline has not ingested yet (files not yet "
        "read, Redis lag, a Spark source's offsets behind the latest; 0 for generator "
        "sources): counted as input by the policies",
        "at the end of t",
    ),
    Metric(
        "hosts_up",
        "hosts up",
        "hosts",
        "hosts",
        "leased hosts up at the end of t (spark.leasing; 0 without)",
        "at the end of t",
    ),
    Metric(
        "host_cost",
        "host cost",
        "cost",
        "price units",
        "cost of the leased hosts so far: billing time units started × price",
        "at the end of t",
    ),
)
OBJECTIVE_METRICS: tuple[Metric, ...] = (
    Metric(
        "objective_met_share",
        "Objective met",
        "obj. met",
        "ratio",
        "share of the intervals judged whose end-to-end latency kept the run's objective "
        "(docs/policies.md, objective)",
        "intervals met / intervals judged",
        "higher",
        digits=3,
    ),
)
METRICS: dict[str, Metric] = {m.name: m for m in (*RUN_METRICS, *SLA_METRICS, *OBJECTIVE_METRICS)}
# The four metrics of PSPS Section V-A.3, as Summary fields.
PAPER_METRICS = tuple(m.name for m in RUN_METRICS if m.paper)


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
    # (latency ms, events) pairs of the sink events: SLA compliance at any SLO, for any engine
    latency_histogram_ms: tuple[tuple[float, int], ...] = ()


def latency_histogram(
    latencies_ms: Sequence[float], resolution_ms: float = 1.0
) -> tuple[tuple[float, int], ...]:
    """Exact latencies folded into `resolution_ms` bins (bin upper edge, count)."""
    counts: dict[float, int] = {}
    for value in latencies_ms:
        edge = math.ceil(value / resolution_ms) * resolution_ms
        counts[edge] = counts.get(edge, 0) + 1
    return tuple(sorted(counts.items()))


def latency_histogram_of(
    counts_s: dict[float, int], resolution_ms: float = 1.0
) -> tuple[tuple[float, int], ...]:
    """Latencies in seconds with their counts, folded in `resolution_ms` bins (bin upper edge
    in ms, count), as latency_histogram does for single latencies in ms."""
    bins: dict[float, int] = {}
    for latency_s, n in counts_s.items():
        edge = math.ceil(latency_s * 1000.0 / resolution_ms) * resolution_ms
        bins[edge] = bins.get(edge, 0) + n
    return tuple(sorted(bins.items()))


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
            "interval_s": s.td,
            "input": s.source_events,
            "completed": s.completed,
            "sink_events": s.sink_events,
            "input_rate": s.source_events / s.td if s.td > 0 else 0.0,
            "output_rate": s.completed / s.td if s.td > 0 else 0.0,
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
        replica_seconds=sum(total_replicas(s) * s.td for s in snapshots),
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
        self.replica_seconds += replicas * snapshot.td
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
