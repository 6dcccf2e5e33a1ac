"""Caladrius Section V as a function: fit at one parallelism, predict another, compare."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from elastream.modeling.batching import MicroBatch, predicted_replica_sp
from elastream.modeling.cpu import core_capped_rate
from elastream.modeling.graph import Grouping, MeasuredPoint, ModelError
from elastream.modeling.performance import (
    ComponentModel,
    component_saturation_point,
    fit_component,
)
from elastream.modeling.throughput import SATURATION_TOLERANCE, fit_instance, is_saturated


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
    micro-batch capacity (Eq. B2–B4) instead of staying the fitted one (Eq. 9). `tolerance`:
    how far below its source rate a replica's input must be to count as saturated (both fits)."""
    ps = {pt.parallelism for pt in test_points}
    if len(ps) != 1:
        raise ModelError(f"{name}: test points must share one parallelism, got {sorted(ps)}")
    p = ps.pop()
    model = fit_component(name, grouping, fit_points, tolerance)
    observed = fit_instance(test_points, what=f"{name} at p={p}", tolerance=tolerance)
    if batching is None:
        sp = component_saturation_point(model, p, cores)
    else:
        sp = micro_batch_saturation_point(model, fit_points, p, batching, cores)
    predicted_st = model.instance.alpha * sp
    observed_st = observed.st * p
    predicted_cpu = None if model.psi is None else model.psi * sp
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


def micro_batch_saturation_point(
    model: ComponentModel,
    fit_points: Sequence[MeasuredPoint],
    p: int,
    batching: MicroBatch,
    cores: float | None = None,
) -> float:
    """SP_c(p) on the micro-batch runtime from a fit at one parallelism: the most loaded replica
    saturates first, SP_c = SP_rep(p) / max_i w_i (Eq. 8 or 10 with Eq. B2–B4); the host's C/ψ
    applies on top (with B4's stretch it does not bind)."""
    fit_ps = {pt.parallelism for pt in fit_points}
    if len(fit_ps) != 1:
        raise ModelError(
            f"{model.name}: fit points must share one parallelism, got {sorted(fit_ps)}"
        )
    if model.service_time is None:
        raise ModelError(f"{model.name}: no busy time measured, so et (Eq. B2) is unknown")
    sp_rep = predicted_replica_sp(
        model.instance.sp, fit_ps.pop(), p, model.service_time, batching, model.psi, cores
    )
    shares, _ = model.shares(p)
    return core_capped_rate(sp_rep / max(shares), model.psi, cores)
