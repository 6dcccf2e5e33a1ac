"""A run's latency objective (p99 or mean end-to-end latency, optionally per operator) and the
per-interval verdict: met, missed, or not judged (docs/policies.md, "objective")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from elastream.base.settings import Settings
from elastream.model.snapshot import OperatorStats, Snapshot

Statistic = Literal["p99", "mean"]


class LatencyTarget(Settings):
    """One latency bound: the p99 or the mean, in seconds (exactly one of the two)."""

    latency_p99_s: float | None = Field(
        None, gt=0, description="99th percentile of end-to-end latency to stay under, s"
    )
    latency_mean_s: float | None = Field(
        None, gt=0, description="mean end-to-end latency to stay under, s"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> LatencyTarget:
        if (self.latency_p99_s is None) == (self.latency_mean_s is None):
            raise ValueError("give exactly one of latency_p99_s and latency_mean_s")
        return self

    @property
    def statistic(self) -> Statistic:
        return "p99" if self.latency_p99_s is not None else "mean"

    @property
    def bound_s(self) -> float:
        value = self.latency_p99_s if self.latency_p99_s is not None else self.latency_mean_s
        assert value is not None  # the validator guarantees one
        return value


class Objective(LatencyTarget):
    """The run's latency objective: end to end for the pipeline, and optionally a bound on one
    operator's own latency (its queueing plus service time)."""

    operators: dict[str, LatencyTarget] = Field(
        default_factory=dict,
        description="operator name -> its own latency bound (queueing + service), s",
    )


def operator_latency_s(stats: OperatorStats, td: float) -> float | None:
    """An operator's latency in one interval by Little's law (Eq. O9 of docs/policies.md):
    the queue it ended with over its throughput, plus one event's execution time. None when it
    neither processed nor held anything."""
    service = stats.service_time_s or 0.0
    if stats.queue == 0:
        return service if stats.processed else None
    if stats.processed == 0:
        return float("inf")
    return stats.queue / (stats.processed / td) + service


@dataclass(frozen=True, slots=True)
class Verdict:
    """One interval against the objective: met (True), missed (False) or not judged (None:
    no event reached a sink and nothing waited), and the measured figure in ms."""

    met: bool | None
    latency_ms: float | None


def interval_latency_ms(snapshot: Snapshot, statistic: Statistic) -> float | None:
    """The interval's measured end-to-end figure for `statistic` (None: not measured)."""
    return snapshot.latency_ms_p99 if statistic == "p99" else snapshot.latency_ms_mean


def judge(snapshot: Snapshot, objective: Objective) -> Verdict:
    """Met when the interval's end-to-end p99 (or mean) is within the bound and every operator
    with its own bound kept it; an interval where nothing reached a sink is missed when events
    were waiting (a stalled pipeline) and not judged otherwise (no load)."""
    measured = interval_latency_ms(snapshot, objective.statistic)
    if measured is None:
        waiting = any(o.queue for o in snapshot.operators)
        return Verdict(False if waiting else None, None)
    met = measured <= objective.bound_s * 1000.0
    for name, target in objective.operators.items():
        own = (
            operator_latency_s(snapshot.op(name), snapshot.interval_s)
            if _has(snapshot, name)
            else None
        )
        if own is not None and own > target.bound_s:
            met = False
    return Verdict(met, measured)


def _has(snapshot: Snapshot, name: str) -> bool:
    return any(o.name == name for o in snapshot.operators)


class ObjectiveTally:
    """A MAPE-loop observer counting intervals met, missed and not judged (a fast-forwarded
    stretch counts once per interval it stands for)."""

    def __init__(self, objective: Objective) -> None:
        self.objective = objective
        self.met = 0
        self.missed = 0
        self.unjudged = 0

    def __call__(self, snapshot: Snapshot, decision: object = None) -> None:
        verdict = judge(snapshot, self.objective)
        if verdict.met is None:
            self.unjudged += snapshot.intervals
        elif verdict.met:
            self.met += snapshot.intervals
        else:
            self.missed += snapshot.intervals

    @property
    def met_share(self) -> float | None:
        """Intervals met / intervals judged (None: none judged)."""
        judged = self.met + self.missed
        return self.met / judged if judged else None

    def as_dict(self) -> dict[str, object]:
        """summary.json's `objective` block and the bench's objective columns."""
        return {
            "statistic": self.objective.statistic,
            "bound_s": self.objective.bound_s,
            "intervals_met": self.met,
            "intervals_missed": self.missed,
            "intervals_unjudged": self.unjudged,
            "met_share": self.met_share,
        }
