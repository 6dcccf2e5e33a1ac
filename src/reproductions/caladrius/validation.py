"""Caladrius Section V as a function: fit at one parallelism, predict another, compare."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from elastream.prediction.batching import (
    MicroBatch,
    contended_service_time,
    predicted_replica_sp,
    saturated_batch_rate,
)
from elastream.prediction.cpu import core_capped_rate
from elastream.prediction.graph import Grouping, MeasuredPoint, ModelError
from elastream.prediction.performance import (
    ComponentModel,
    component_saturation_point,
    fit_component,
)
from elastream.prediction.throughput import SATURATION_TOLERANCE, fit_instance, is_saturated


def relative_error(predicted: float, observed: float) -> float:
    """|predicted − observed| / observed, the paper's error (V-C, V-D, V-E)."""
    if observed == 0:
        raise ModelError("relative error: the observed value is 0")
    return abs(predicted - observed) / abs(observed)


@dataclass(frozen=True)
class ValidationRow:
    """One predicted parallelism against its measured run (Fig. 8 and Fig. 12)."""

    parallelism: int
    predicted_st: float
    observed_st: float
    st_error: float
    predicted_cpu: float | None
    observed_cpu: float | None
    cpu_error: float | None
    alpha_fit: float
    alpha_observed: float


def _observed_saturated_cpu(
    points: Sequence[MeasuredPoint], p: int, tolerance: float
) -> float | None:
    """Mean CPU of a saturated replica times p: the component's CPU at saturation."""
    cpus = [pt.cpu for pt in points if pt.cpu is not None and is_saturated(pt, tolerance)]
    return float(np.mean(cpus)) * p if cpus else None


def validate(
    name: str,
    grouping: Grouping,
    fit_points: Sequence[MeasuredPoint],
    test_points: Sequence[MeasuredPoint],
    cores: float | None = None,
    batching: MicroBatch | None = None,
    tolerance: float = SATURATION_TOLERANCE,
) -> ValidationRow:
    """Fit `name` on `fit_points`, predict its ST and CPU at the test run's parallelism, and
    compare with the curve fitted on `test_points` (which must cross saturation too).

    With `batching`, a replica's saturation point at the new parallelism comes from the
    micro-batch capacity (Eq. B2–B4) instead of staying the fitted one (Eq. 9), and the CPU
    from Eq. C1 at its batch rate (Eq. B5) when the history counted batches. `tolerance`:
    how far below its source rate a replica's input must be to count as saturated (both fits)."""
    ps = {pt.parallelism for pt in test_points}
    if len(ps) != 1:
        raise ModelError(f"{name}: test points must share one parallelism, got {sorted(ps)}")
    p = ps.pop()
    model = fit_component(name, grouping, fit_points, tolerance)
    observed = fit_instance(test_points, what=f"{name} at p={p}", tolerance=tolerance)
    if batching is None:
        sp = component_saturation_point(model, p, cores)
        predicted_cpu = None if model.psi is None else model.psi * sp
    else:
        at = micro_batch_saturation(model, fit_points, p, batching, cores)
        sp, predicted_cpu = at.sp, at.cpu
    predicted_st = model.instance.alpha * sp
    observed_st = observed.st * p
    observed_cpu = _observed_saturated_cpu(test_points, p, tolerance)
    cpu_error = (
        relative_error(predicted_cpu, observed_cpu)
        if predicted_cpu is not None and observed_cpu
        else None
    )
    return ValidationRow(
        parallelism=p,
        predicted_st=predicted_st,
        observed_st=observed_st,
        st_error=relative_error(predicted_st, observed_st),
        predicted_cpu=predicted_cpu,
        observed_cpu=observed_cpu,
        cpu_error=cpu_error,
        alpha_fit=model.instance.alpha,
        alpha_observed=observed.alpha,
    )


@dataclass(frozen=True)
class MicroBatchSaturation:
    """A component at its predicted saturation point on the micro-batch runtime."""

    sp: float  # SP_c, events/s offered to the component
    cpu: float | None  # its CPU there, cores (Eq. C1 with Eq. B5, or V-E's ψ · SP_c)


def micro_batch_saturation(
    model: ComponentModel,
    fit_points: Sequence[MeasuredPoint],
    p: int,
    batching: MicroBatch,
    cores: float | None = None,
) -> MicroBatchSaturation:
    """SP_c(p) on the micro-batch runtime from a fit at one parallelism: the most loaded replica
    saturates first, SP_c = SP_rep(p) / max_i w_i (Eq. 8 or 10 with Eq. B2–B4); the host's C/ψ
    applies on top (with B4's stretch it does not bind). CPU there (Eq. C1): ψ · SP_c plus κ
    per batch of each of the p replicas — one batch plan feeds them all, at the saturated
    replica's batch rate (Eq. B5); ψ · SP_c alone without a per-batch fit (V-E)."""
    fit_ps = {pt.parallelism for pt in fit_points}
    if len(fit_ps) != 1:
        raise ModelError(
            f"{model.name}: fit points must share one parallelism, got {sorted(fit_ps)}"
        )
    et = model.service_time
    if et is None:
        raise ModelError(f"{model.name}: no busy time measured, so et (Eq. B2) is unknown")
    fit_p = fit_ps.pop()
    sp_rep = predicted_replica_sp(model.instance.sp, fit_p, p, et, batching, model.psi, cores)
    shares, _ = model.shares(p)
    sp = core_capped_rate(sp_rep / max(shares), model.psi, cores)
    if model.batch_cpu is not None:
        et_p = contended_service_time(p, et, model.psi, cores, fit_p)  # Eq. B4, as in SP_rep
        batches = saturated_batch_rate(sp_rep, p, et_p, batching)
        return MicroBatchSaturation(sp, model.batch_cpu.cpu(sp, p * batches))
    return MicroBatchSaturation(sp, None if model.psi is None else model.psi * sp)
