"""A replica's capacity on the micro-batch runtime (beyond Caladrius): admission cap, overhead."""

from __future__ import annotations

import math
from dataclasses import dataclass

from elastream.prediction.graph import ModelError


@dataclass(frozen=True)
class MicroBatch:
    """The runtime's batching: `batch_s` replica-seconds of work admitted per micro-batch
    (spark.batch_s) and the processing-time trigger `trigger_s` (spark.trigger_s)."""

    batch_s: float
    trigger_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.batch_s > 0:
            raise ModelError(f"micro-batch: batch_s must be > 0, got {self.batch_s}")
        if not self.trigger_s >= 0:
            raise ModelError(f"micro-batch: trigger_s must be ≥ 0, got {self.trigger_s}")


def admission_cap(replicas: int, service_time_s: float, batch_s: float) -> int:
    """Eq. B1: events admitted per micro-batch, cap = max(p, ⌊p·b/et⌋): `batch_s` seconds of
    work for each of the p active replicas (at least one event each)."""
    return max(replicas, int(replicas * batch_s / max(service_time_s, 1e-6)))


def _check(p: int, service_time_s: float) -> None:
    if p < 1:
        raise ModelError(f"micro-batch: parallelism must be ≥ 1, got {p}")
    if not service_time_s > 0:
        raise ModelError(
            f"micro-batch: per-event service time et must be > 0, got {service_time_s}"
        )


def replica_saturation_point(
    p: int, service_time_s: float, batching: MicroBatch, overhead_s: float
) -> float:
    """Eq. B2: a backlogged replica gets c = cap/p events per batch, and a batch lasts its
    busiest replica's work plus the fixed overhead O (offsets, planning, scheduling, commits),
    at least one trigger: SP_rep = c / max(τ, c·et + O) events/s."""
    _check(p, service_time_s)
    if overhead_s < 0:
        raise ModelError(f"micro-batch: overhead must be ≥ 0, got {overhead_s}")
    c = admission_cap(p, service_time_s, batching.batch_s) / p
    return c / max(batching.trigger_s, c * service_time_s + overhead_s)


def batch_overhead(sp_rep: float, p: int, service_time_s: float, batching: MicroBatch) -> float:
    """Eq. B3, Eq. B2 inverted at a measured saturation point: O = c/SP_rep − c·et (≥ 0), the
    per-batch time a saturated replica spends not processing its own events."""
    _check(p, service_time_s)
    if not sp_rep > 0 or math.isinf(sp_rep):
        raise ModelError(f"micro-batch: the measured saturation point must be > 0, got {sp_rep}")
    c = admission_cap(p, service_time_s, batching.batch_s) / p
    return max(0.0, c / sp_rep - c * service_time_s)


def contended_service_time(
    p: int, service_time_s: float, psi: float | None, cores: float | None, fit_p: int
) -> float:
    """Eq. B4: on C cores the CPU part of a replica's work stretches once p replicas need more
    than C cores: et(p) = max(et_0, p·ψ/C), where et_0 is the uncontended service time (from a
    fit at fit_p replicas, et_fit = max(et_0, fit_p·ψ/C) gives et_0 back when fit_p·ψ/C ≤ et).
    Without ψ or C: et."""
    _check(p, service_time_s)
    if psi is None or cores is None or psi <= 0:
        return service_time_s
    if cores <= 0:
        raise ModelError(f"host cores must be > 0, got {cores}")
    if fit_p * psi / cores > service_time_s * (1 + 1e-9):
        raise ModelError(
            f"micro-batch: the fit at p={fit_p} was already core-bound (p·ψ/C = "
            f"{fit_p * psi / cores:.4g} s > et = {service_time_s:.4g} s): fit at p ≤ C·et/ψ"
        )
    return max(service_time_s, p * psi / cores)


def saturated_batch_rate(
    sp_rep: float, p: int, service_time_s: float, batching: MicroBatch
) -> float:
    """Eq. B5: a saturated replica runs SP_rep / c micro-batches per second (each holds its
    c = cap/p events of Eq. B1, one per cycle of Eq. B2): the batch rate of CPU's Eq. C1."""
    _check(p, service_time_s)
    return sp_rep / (admission_cap(p, service_time_s, batching.batch_s) / p)


def predicted_replica_sp(
    fit_sp: float,
    fit_p: int,
    p: int,
    service_time_s: float,
    batching: MicroBatch,
    psi: float | None = None,
    cores: float | None = None,
) -> float:
    """A replica's saturation point at parallelism p from a fit at fit_p: O from Eq. B3 at the
    fit, et(p) from Eq. B4, then Eq. B2 (the runtime's cap follows the measured et(p))."""
    overhead = batch_overhead(fit_sp, fit_p, service_time_s, batching)
    return replica_saturation_point(
        p, contended_service_time(p, service_time_s, psi, cores, fit_p), batching, overhead
    )
