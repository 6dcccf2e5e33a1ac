"""Every run metric, declared once: its name, label, unit, definition with the paper's section
and symbol, how it aggregates and which direction is better (summary.json, the bench tables,
the reports and the docs read it; model/metrics.py computes it)."""

from __future__ import annotations

from dataclasses import dataclass


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
        "host_re_leases",
        "Re-leases",
        "re-leases",
        "leases",
        "leases that began within one billing time unit after a released host's paid time "
        "ended: keeping that host would have cost no more and needed no boot (a defect of the "
        "release rule)",
        "exact end-of-run count",
        "lower",
        digits=0,
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
