"""What the Monitor step sees at the end of one interval: per-operator and system metrics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OperatorStats:
    """Counts for operator O_i over the interval t (PSPS Table I notation in the comments)."""

    name: str
    replicas: int  # r_i(t): active replicas during t
    min_replicas: int
    max_replicas: int  # pool size
    received: int  # λ^r_i(t): events that arrived in O_i's queue during t
    received_from: tuple[tuple[str, int], ...]  # λ^p_i(t) for every predecessor p (0 included)
    processed: int  # μ_i(t): events taken from the queue and handled (incl. filtered)
    emitted: int  # output events sent downstream during t
    queue: int  # |q_i(t)|: events waiting at the end of t
    # et_i: mean execution time of one event on one replica (None: unknown)
    service_time_s: float | None
    busy_s: float = 0.0  # total replica busy time during t (for true processing rates)
    dropped_timeout: int = 0  # events older than t_out when their turn came
    dropped_overflow: int = 0  # events refused by a full queue (q_size)
    # μ_ij(t) and U_ij(t) (PSPS Eq. 5) per replica j: the r_i active ones first, then any replica
    # retired during t that still served events in it (its last micro-batch)
    replica_processed: tuple[int, ...] = ()
    utilization: tuple[float, ...] = ()
    cpu_s: float | None = None  # CPU seconds of all replicas during t (None: not measured)
    stateful: bool = False  # keyed state (stateless: false): its rescales may be rate-limited
    admission_capped: bool = False  # a micro-batch admitted less than was queued (its cap hit)
    emitted_streams: tuple[tuple[str, int], ...] = ()  # outputs per output stream (() unknown)
    # per replica, as `utilization`: variance of one event's service time, s² (None: not estimable)
    service_time_var: tuple[float | None, ...] = ()
    # per replica, as `utilization`: micro-batches it processed events in during t (() not counted)
    replica_batches: tuple[int, ...] = ()
    failed: int = 0  # events whose operator function raised during t (kept in the error log)

    @property
    def mean_utilization(self) -> float:
        """The work every replica did during t over the r_i active replicas: Σ_j U_ij / r_i."""
        return sum(self.utilization) / self.replicas if self.utilization and self.replicas else 0.0


@dataclass(frozen=True, slots=True)
class HostClock:
    """A leased host at the end of an interval: up or booting, and its BTU clock."""

    host_id: str
    up: bool
    btus: int  # BTUs started (paid) so far
    btu_left_s: float  # paid time left in the current BTU


@dataclass(frozen=True, slots=True)
class Snapshot:
    """All metrics of one interval. `operators` is in topological order; time is in the snapshot,
    never read from a clock by a policy."""

    t: float  # end of the interval, seconds since the start of the run
    interval_s: float  # the interval's length, seconds (td, PSPS Table I)
    sources: tuple[tuple[str, int], ...]  # events each source emitted during t
    operators: tuple[OperatorStats, ...]
    completed: int = 0  # source events whose processing finished during t (sink or filtered)
    sink_events: int = 0  # events that reached a sink during t
    latency_ms_mean: float | None = None  # end-to-end latency of events reaching sinks during t
    dropped_restart: int = 0  # events lost by a restart reconfiguration during t (simulator)
    # A simulator fast-forward reports a steady stretch of several intervals as one snapshot:
    # `interval_s` is then the stretch's length, `intervals` how many MAPE intervals it stands
    # for and `idle_intervals` how many of those had no source input. Every other snapshot: 1, 0.
    intervals: int = 1
    idle_intervals: int = 0
    # Leased hosts (Spark executors with `spark.leasing`) and what they cost so far; () without.
    hosts: tuple[HostClock, ...] = ()
    host_cost: float = 0.0
    # leases so far that began within one BTU after a released host's paid end (a defect of the
    # release rule: keeping the host would have cost no more)
    host_re_leases: int = 0
    # 99th percentile of the end-to-end latency of the events reaching sinks during t (None:
    # none reached one, or the engine does not measure it); judged against a run's objective
    latency_ms_p99: float | None = None
    # What an external source can tell of its backlog at the end of t, in events (a files
    # source: files not yet read times the mean events per file read so far; a redis source:
    # entries not yet ingested); () for generator sources and sources that cannot tell.
    source_backlog: tuple[tuple[str, int], ...] = ()
    query_restarts: int = 0  # failed queries restarted during t (Spark runtime)
    # Events each sink received during t, and the end-to-end latencies of the events reaching
    # sinks during t as (latency ms, events) in 1-ms bins; () when the engine does not tell.
    sinks: tuple[tuple[str, int], ...] = ()
    sink_latency_ms: tuple[tuple[float, int], ...] = ()

    @property
    def source_events(self) -> int:
        """λ_G(t): events sent by the input data during t (what was ingested)."""
        return sum(n for _, n in self.sources)

    @property
    def external_backlog(self) -> int:
        """Events the external sources hold that the pipeline has not ingested yet."""
        return sum(n for _, n in self.source_backlog)

    def source_demand(self) -> dict[str, int]:
        """Each source's arrival pressure: what it sent during t plus its external backlog."""
        backlog = dict(self.source_backlog)
        return {name: n + backlog.get(name, 0) for name, n in self.sources}

    @property
    def demand_events(self) -> int:
        """λ_G(t) as the controller sees it (issue 24): ingested plus the external backlog
        where the source can tell it, so that a held-back source still asks for replicas."""
        return self.source_events + self.external_backlog

    def op(self, name: str) -> OperatorStats:
        for stats in self.operators:
            if stats.name == name:
                return stats
        raise KeyError(name)

    @property
    def hosts_up(self) -> int:
        return sum(1 for h in self.hosts if h.up)

    def replicas(self) -> dict[str, int]:
        return {o.name: o.replicas for o in self.operators}
