"""Run-level metrics of PSPS Section V-A.3, computed the same way for every engine."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise

from elastream.model.snapshot import Snapshot

# The four metrics of PSPS Section V-A.3, as Summary fields.
PAPER_METRICS = ("saved_resources", "throughput_degradation", "processed_ratio", "latency_ms_mean")


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


@dataclass(frozen=True, slots=True)
class Summary:
    saved_resources: float
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
    events_failed: int
    replicas_mean: float
    replicas_max: int
    r_over: int
    reconfigurations: int
    replica_seconds: float
    intervals: int

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def total_replicas(snapshot: Snapshot) -> int:
    return sum(o.replicas for o in snapshot.operators)


def throughput_degradation(snapshots: Sequence[Snapshot]) -> float:
    """Mean over intervals with input of |input_rate - output_rate| / input_rate (PSPS V-A.3).

    Input is λ_G(t); output is the number of source events whose processing completed in t, so a
    filter does not count as degradation and a pipeline keeping pace scores 0."""
    ratios = [abs(s.lambda_g - s.completed) / s.lambda_g for s in snapshots if s.lambda_g > 0]
    return sum(ratios) / len(ratios) if ratios else 0.0


def reconfigurations(snapshots: Sequence[Snapshot]) -> int:
    """How many (interval, operator) pairs changed their active replica count."""
    changes = 0
    for prev, cur in pairwise(snapshots):
        before = prev.replicas()
        changes += sum(1 for o in cur.operators if before.get(o.name) != o.replicas)
    return changes


def summarize(snapshots: Sequence[Snapshot], totals: RunTotals, r_over: int) -> Summary:
    """Saved resources = 1 - mean(Σ r_i) / r_over; processed ratio = completed / events in."""
    if r_over < 1:
        raise ValueError(f"r_over must be >= 1, got {r_over}")
    sums = [total_replicas(s) for s in snapshots] or [0]
    mean = sum(sums) / len(sums)
    return Summary(
        saved_resources=1.0 - mean / r_over,
        throughput_degradation=throughput_degradation(snapshots),
        processed_ratio=totals.completed / totals.events_in if totals.events_in else 1.0,
        latency_ms_mean=totals.latency_ms_mean,
        latency_ms_p99=totals.latency_ms_p99,
        events_in=totals.events_in,
        events_out=totals.events_out,
        events_completed=totals.completed,
        events_filtered=totals.filtered,
        events_dropped_timeout=totals.dropped_timeout,
        events_dropped_overflow=totals.dropped_overflow,
        events_failed=totals.failed,
        replicas_mean=mean,
        replicas_max=max(sums),
        r_over=r_over,
        reconfigurations=reconfigurations(snapshots),
        replica_seconds=sum(total_replicas(s) * s.td for s in snapshots),
        intervals=len(snapshots),
    )
