"""Caladrius throughput models, Eq. 1–14 (IV-B), and the piecewise-linear instance fit."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from elastream.prediction.graph import MeasuredPoint, ModelError

SATURATION_TOLERANCE = 0.02  # a replica whose input is 2 % below its source rate is saturated


# ---- instance level (IV-B1) -------------------------------------------------------------------


def instance_output(source_rate: float, alpha: float, st: float) -> float:
    """Eq. 1–2: T_i(t) = α·t below the saturation point, ST above it: min(α·t, ST)."""
    if source_rate < 0:
        raise ModelError(f"instance output: negative source rate {source_rate}")
    return min(alpha * source_rate, st)


def instance_output_multi_input(source_rates: Sequence[float], alpha: float, st: float) -> float:
    """Eq. 3: m input streams, T_i = Σ_λ min(α·t_λ, ST)."""
    return float(sum(instance_output(t, alpha, st) for t in source_rates))


def instance_output_multi_output(
    source_rates: Sequence[float], streams: Mapping[str, tuple[float, float]]
) -> dict[str, float]:
    """Eq. 4–5: per output stream j, T_j = Σ_λ min(α_j·t_λ, ST_j); T_i = Σ_j T_j (Eq. 4).

    `streams` maps each stream to its (α_j, ST_j).
    """
    return {
        name: instance_output_multi_input(source_rates, alpha, st)
        for name, (alpha, st) in streams.items()
    }


# ---- component level (IV-B2) -------------------------------------------------------------------


def component_source_rate(instance_source_rates: Sequence[float]) -> float:
    """Eq. 6: t_λ = Σ_i t_λ(i)."""
    return float(sum(instance_source_rates))


def component_output(instance_source_rates: Sequence[float], alpha: float, st: float) -> float:
    """Eq. 7: T_c(p, t_λ) = Σ_i T_i(t_λ(i))."""
    return float(sum(instance_output(t, alpha, st) for t in instance_source_rates))


def even_shares(parallelism: int) -> tuple[float, ...]:
    """Eq. 8: shuffle, round-robin and load balancing give each replica t_λ/p."""
    if parallelism < 1:
        raise ModelError(f"parallelism must be ≥ 1, got {parallelism}")
    return (1.0 / parallelism,) * parallelism


def component_output_even(source_rate: float, parallelism: int, alpha: float, st: float) -> float:
    """Eq. 9: T_c(p, t_λ) = p·T_i(t_λ/p)."""
    return parallelism * instance_output(source_rate / max(parallelism, 1), alpha, st)


def keyed_source_rates(source_rate: float, shares: Sequence[float]) -> tuple[float, ...]:
    """Eq. 10: with a steady key bias w_i (Σ w_i = 1), t'_λ(i) = β·t_λ(i) = w_i·t'_λ."""
    total = float(sum(shares))
    if total <= 0 or any(w < 0 for w in shares):
        raise ModelError(f"key shares must be ≥ 0 and sum to > 0, got {list(shares)}")
    return tuple(source_rate * w / total for w in shares)


def component_output_keyed(
    source_rate: float, shares: Sequence[float], alpha: float, st: float
) -> float:
    """Eq. 11: T_c(p, β·t_λ) = Σ_i min(β·T_i(t_λ(i)), ST_i) with the measured shares."""
    return component_output(keyed_source_rates(source_rate, shares), alpha, st)


# ---- topology level (IV-B3) ---------------------------------------------------------------------


def chain_output(source_rate: float, stages: Sequence[tuple[float, float]]) -> float:
    """Eq. 12: t_cp = T_c(N)(… T_c(1)(t_0)); each stage is a component's (gain α_c, ST_c)."""
    rate = source_rate
    for alpha, st in stages:
        rate = min(alpha * rate, st)
    return rate


def chain_saturation_point(stages: Sequence[tuple[float, float]]) -> tuple[float, int]:
    """Eq. 13: invert the chain from each stage's ST back to t_0; the smallest is t'_0.

    Returns (t'_0, index of the stage that saturates first). T_c⁻¹(y) = y/α_c on the linear
    part, so stage k saturates at t_0 = ST_k / Π_{j≤k} α_j.
    """
    if not stages:
        raise ModelError("a critical path needs at least one component")
    best, where, gain = float("inf"), -1, 1.0
    for k, (alpha, st) in enumerate(stages):
        gain *= alpha
        at = st / gain if gain > 0 else float("inf")
        if at < best:
            best, where = at, k
    return best, where


def backpressure_risk(source_rate: float, saturation_point: float, headroom: float = 0.1) -> str:
    """Eq. 14: "high" when t'_0 ~ t_0 or below it (t_0 > (1 − headroom)·t'_0), else "low"."""
    if not 0 <= headroom < 1:
        raise ModelError(f"headroom must be in [0, 1), got {headroom}")
    return "high" if source_rate > (1.0 - headroom) * saturation_point else "low"


# ---- fit from measurements (IV-B1, V-B) ---------------------------------------------------------


@dataclass(frozen=True)
class InstanceFit:
    """A replica's fitted curve: T(t) = min(α·t, ST), saturation at SP = ST/α (input units).

    `alpha_streams` holds α_j per output stream (Eq. 5); errors are relative RMSEs.
    """

    alpha: float
    sp: float
    st: float
    alpha_streams: Mapping[str, float]
    points_below: int
    points_above: int
    saturation_seen: bool
    max_source: float
    input_fit_error: float
    output_fit_error: float

    def output(self, source_rate: float) -> float:
        return instance_output(source_rate, self.alpha, self.st)


def is_saturated(point: MeasuredPoint, tolerance: float = SATURATION_TOLERANCE) -> bool:
    """Backpressure flagged, or the replica admitted less than was offered (beyond tolerance)."""
    return point.backpressure or point.input_rate < point.source_rate * (1.0 - tolerance)


def _slope_through_origin(x: np.ndarray, y: np.ndarray) -> float:
    denom = float(np.dot(x, x))
    return float(np.dot(x, y) / denom) if denom > 0 else 0.0


def _relative_rmse(predicted: np.ndarray, observed: np.ndarray) -> float:
    scale = float(np.mean(np.abs(observed)))
    rmse = float(np.sqrt(np.mean((predicted - observed) ** 2)))
    return rmse / scale if scale > 0 else rmse


def _stream_alphas(points: Sequence[MeasuredPoint], inp: np.ndarray) -> dict[str, float]:
    """Eq. 5: α_j per output stream, the slope of T_j over the input rate."""
    streams = sorted({s for p in points for s in p.output_rates})
    return {
        s: _slope_through_origin(inp, np.array([p.output_rates.get(s, 0.0) for p in points]))
        for s in streams
    }


def fit_instance(
    points: Sequence[MeasuredPoint],
    what: str = "component",
    tolerance: float = SATURATION_TOLERANCE,
    require_saturation: bool = True,
) -> InstanceFit:
    """Fit Eq. 1 to per-replica points: needs ≥ 1 point below and ≥ 1 above saturation.

    With `require_saturation=False` a component never seen saturated gets SP = ST = inf
    (`saturation_seen` False): only its linear part is known.

    α is the least-squares slope of output over input through all points (the I/O ratio holds on
    both sides, Fig. 5); SP the mean admitted rate of the saturated points (below SP input equals
    source); ST = α·SP.
    """
    if not points:
        raise ModelError(f"{what}: no measured points to fit")
    above = [p for p in points if is_saturated(p, tolerance)]
    below = [p for p in points if not is_saturated(p, tolerance)]
    if not below:
        raise ModelError(
            f"{what}: no measured point below saturation (all {len(points)} replica-intervals "
            "saturated); measure at a lower source rate"
        )
    if not above and not require_saturation:
        return _linear_only(points, below)
    if not above:
        top = max(p.source_rate for p in points)
        raise ModelError(
            f"{what}: no measured point above saturation (highest source rate {top:g}/s per "
            "replica never saturated); measure at a higher source rate"
        )
    src = np.array([p.source_rate for p in points])
    inp = np.array([p.input_rate for p in points])
    out = np.array([p.output_rate for p in points])
    alpha = _slope_through_origin(inp, out)
    sp = float(np.mean([p.input_rate for p in above]))
    alpha_streams = _stream_alphas(points, inp)
    model_in = np.minimum(src, sp)
    return InstanceFit(
        alpha=alpha,
        sp=sp,
        st=alpha * sp,
        alpha_streams=alpha_streams,
        points_below=len(below),
        points_above=len(above),
        saturation_seen=True,
        max_source=float(src.max()),
        input_fit_error=_relative_rmse(model_in, inp),
        output_fit_error=_relative_rmse(alpha * model_in, out),
    )


def _linear_only(points: Sequence[MeasuredPoint], below: Sequence[MeasuredPoint]) -> InstanceFit:
    """The linear part alone (α), for a component never measured in saturation."""
    inp = np.array([p.input_rate for p in points])
    out = np.array([p.output_rate for p in points])
    alpha = _slope_through_origin(inp, out)
    alpha_streams = _stream_alphas(points, inp)
    src = np.array([p.source_rate for p in points])
    return InstanceFit(
        alpha=alpha,
        sp=math.inf,
        st=math.inf,
        alpha_streams=alpha_streams,
        points_below=len(below),
        points_above=0,
        saturation_seen=False,
        max_source=float(src.max()),
        input_fit_error=_relative_rmse(src, inp),
        output_fit_error=_relative_rmse(alpha * src, out),
    )
