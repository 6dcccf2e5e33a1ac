"""The fixed cost of a micro-batch beyond its work, as a function of its tasks and of the other
queries running at the same time, fitted to a Spark run's batches (docs/simulator.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

MIN_OVERHEAD_S = 1e-3  # a fitted cost is never below this (the simulator needs a positive one)


@dataclass(frozen=True)
class BatchRecord:
    """One non-empty micro-batch of an operator's query, as the runtime measured it."""

    op: str
    start_s: float  # when the batch started (any common clock)
    wall_s: float  # how long it took (Spark's triggerExecution)
    work_s: float  # its busiest replica's events times et_i: the work the simulator counts
    replicas: int  # tasks of the batch (the replicas its plan divided it among)
    commit_s: float = 0.0  # of its wall time, spent after its outputs had left (offset commit)

    @property
    def overhead_s(self) -> float:
        """What the batch cost beyond the work the simulator models: wall time minus the
        busiest replica's events times et_i (per-task costs inside the tasks count as overhead)."""
        return self.wall_s - self.work_s


@dataclass(frozen=True)
class OverheadModel:
    """o_i(r, c) = a_i + b·(r − 1) + c·n: operator i's cost of a batch of r tasks started while
    n other queries had a batch running (Eq. O1 of docs/simulator.md)."""

    base_s: Mapping[str, float]  # a_i: a one-task batch with no other query busy
    per_replica_s: float  # b: each task beyond the first
    per_busy_query_s: float  # c: each other query with a batch running at the start
    cv: float = 0.0  # Eq. O2: spread of a batch's cost around Eq. O1, as a CV of its ratio
    commit_share: float = 0.0  # of the fixed cost, the part after the outputs have left

    def overhead_s(self, op: str, replicas: int, busy_queries: int) -> float:
        """Eq. O1 for one batch."""
        if op not in self.base_s:
            raise KeyError(f"batch overhead model: no base cost for operator {op!r}")
        extra = self.per_replica_s * max(0, replicas - 1) + self.per_busy_query_s * busy_queries
        return self.base_s[op] + extra


def busy_queries(records: Sequence[BatchRecord]) -> list[int]:
    """For each batch, how many other operators' queries had a batch running when it started."""
    counts = []
    for rec in records:
        ops = {
            other.op
            for other in records
            if other.op != rec.op and other.start_s <= rec.start_s < other.start_s + other.wall_s
        }
        counts.append(len(ops))
    return counts


def fit_overhead(records: Sequence[BatchRecord]) -> OverheadModel:
    """Least squares of Eq. O1 over every batch (one intercept per operator); a slope that comes
    out negative is dropped (set to 0) and the rest refitted, so the model never predicts less
    cost for more tasks or more contention."""
    if not records:
        raise ValueError("batch overhead fit: no batches (did the Spark run process anything?)")
    ops = sorted({rec.op for rec in records})
    y = np.array([rec.overhead_s for rec in records])
    one_hot = np.array([[1.0 if rec.op == op else 0.0 for op in ops] for rec in records])
    slopes = np.array(
        [
            [max(0, rec.replicas - 1), n]
            for rec, n in zip(records, busy_queries(records), strict=True)
        ],
        dtype=float,
    )
    keep = [0, 1]
    while True:
        coef, *_ = np.linalg.lstsq(np.hstack([one_hot, slopes[:, keep]]), y, rcond=None)
        fitted = dict(zip(keep, coef[len(ops) :], strict=True))
        negative = [k for k, v in fitted.items() if v < 0]
        if not negative:
            break
        keep = [k for k in keep if k not in negative]
    base = {op: max(MIN_OVERHEAD_S, float(a)) for op, a in zip(ops, coef, strict=False)}
    model = OverheadModel(base, float(fitted.get(0, 0.0)), float(fitted.get(1, 0.0)))
    return replace(model, cv=_ratio_cv(model, records), commit_share=_commit_share(records))


def _commit_share(records: Sequence[BatchRecord]) -> float:
    """Σ commit time / Σ fixed cost over the batches, within [0, 1]."""
    total = sum(max(0.0, rec.overhead_s) for rec in records)
    commit = sum(rec.commit_s for rec in records)
    return min(1.0, commit / total) if total > 0 else 0.0


def _ratio_cv(model: OverheadModel, records: Sequence[BatchRecord]) -> float:
    """Eq. O2: the CV of observed / predicted cost over the batches (0 for fewer than two)."""
    counts = busy_queries(records)
    ratios = np.array(
        [
            rec.overhead_s / model.overhead_s(rec.op, rec.replicas, n)
            for rec, n in zip(records, counts, strict=True)
        ]
    )
    if ratios.size < 2:
        return 0.0
    return float(ratios.std() / ratios.mean()) if ratios.mean() > 0 else 0.0
