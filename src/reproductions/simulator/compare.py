"""How far two runs of the same workload agree: the four PSPS metrics, p99 latency and the replica
series."""

from __future__ import annotations

from dataclasses import dataclass

from elastream.control.mape import RunResult
from elastream.model.metric_catalog import PAPER_METRICS

COMPARED = (*PAPER_METRICS, "latency_ms_p99")  # the Summary fields `compare` reports


@dataclass(frozen=True)
class Agreement:
    metrics: dict[str, tuple[float, float, float]]  # metric -> (reference, other, relative diff)
    replicas_reference: list[int]
    replicas_other: list[int]
    replicas_mean_abs_diff: float  # total active replicas per interval, aligned by interval

    @property
    def replicas_rel_diff(self) -> float:
        """The replica series' mean absolute difference over the reference's mean total."""
        mean = sum(self.replicas_reference) / max(len(self.replicas_reference), 1)
        return self.replicas_mean_abs_diff / mean if mean else self.replicas_mean_abs_diff

    def relative(self) -> dict[str, float]:
        """Every compared figure's relative difference, the replica series included."""
        return {name: rel for name, (_, _, rel) in self.metrics.items()} | {
            "replicas": self.replicas_rel_diff
        }


def total_replicas(result: RunResult) -> list[int]:
    """Σ active replicas per interval; the run must have kept its snapshots."""
    if not result.snapshots_kept:
        raise ValueError("compare: a run kept no snapshots (longer than keep_snapshots)")
    return [sum(o.replicas for o in s.operators) for s in result.snapshots]


def relative_diff(reference: float, other: float) -> float:
    return abs(reference - other) / abs(reference) if reference else abs(other)


def compare(reference: RunResult, other: RunResult) -> Agreement:
    """`other` (e.g. the simulator) against `reference` (e.g. the Spark runtime)."""
    metrics = {}
    for name in COMPARED:
        a, b = getattr(reference.summary, name), getattr(other.summary, name)
        if a is None or b is None:
            raise ValueError(f"compare: {name} is missing from a run (no event reached a sink?)")
        metrics[name] = (a, b, relative_diff(a, b))
    ours, theirs = total_replicas(reference), total_replicas(other)
    n = min(len(ours), len(theirs))
    mae = sum(abs(x - y) for x, y in zip(ours[:n], theirs[:n], strict=True)) / max(n, 1)
    return Agreement(metrics, ours, theirs, mae)
