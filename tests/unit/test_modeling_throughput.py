"""Caladrius Eq. 1–14 on hand-worked numbers, and the piecewise-linear fit on known truths."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.prediction.graph import MeasuredPoint, ModelError
from elastream.prediction.throughput import (
    backpressure_risk,
    chain_output,
    chain_saturation_point,
    component_output,
    component_output_even,
    component_output_keyed,
    component_source_rate,
    even_shares,
    fit_instance,
    instance_output,
    instance_output_multi_input,
    instance_output_multi_output,
    keyed_source_rates,
)


def test_eq1_2_instance_is_linear_then_flat():
    # α = 7.6, ST = 76 → SP = 10: below it 7.6·t, above it 76
    assert instance_output(5, 7.6, 76) == pytest.approx(38.0)
    assert instance_output(10, 7.6, 76) == pytest.approx(76.0)
    assert instance_output(30, 7.6, 76) == pytest.approx(76.0)
    with pytest.raises(ModelError, match="negative source rate"):
        instance_output(-1, 1, 1)


def test_eq3_multiple_inputs_saturate_each_stream_separately():
    # min(2·3, 10) + min(2·8, 10) = 6 + 10
    assert instance_output_multi_input([3, 8], 2.0, 10.0) == pytest.approx(16.0)
    # one input: Eq. 3 reduces to Eq. 2
    assert instance_output_multi_input([4], 2.0, 10.0) == instance_output(4, 2.0, 10.0)


def test_eq4_5_multiple_outputs_per_stream():
    out = instance_output_multi_output([3, 8], {"a": (2.0, 10.0), "b": (0.5, 3.0)})
    # a: 6 + 10; b: min(1.5, 3) + min(4, 3) = 1.5 + 3
    assert out == pytest.approx({"a": 16.0, "b": 4.5})
    assert sum(out.values()) == pytest.approx(20.5)  # Eq. 4


def test_eq6_to_9_even_groupings():
    assert component_source_rate([1.5, 2.5, 6.0]) == pytest.approx(10.0)  # Eq. 6
    assert component_output([1, 2, 30], 2.0, 10.0) == pytest.approx(2 + 4 + 10)  # Eq. 7
    assert even_shares(4) == (0.25, 0.25, 0.25, 0.25)  # Eq. 8
    # Eq. 9: p = 3, t = 45: each replica gets 15 > SP = 10 → 3·ST = 3·20
    assert component_output_even(45, 3, 2.0, 20.0) == pytest.approx(60.0)
    assert component_output_even(12, 3, 2.0, 20.0) == pytest.approx(24.0)
    assert component_output_even(7, 1, 2.0, 20.0) == instance_output(7, 2.0, 20.0)


def test_eq10_11_key_bias_is_kept_when_the_rate_scales():
    shares = (0.5, 0.3, 0.2)
    assert keyed_source_rates(100, shares) == pytest.approx((50, 30, 20))  # Eq. 10
    # α = 1, ST = 40: min(50, 40) + 30 + 20 = 90 — the hot replica saturates first (Eq. 11)
    assert component_output_keyed(100, shares, 1.0, 40.0) == pytest.approx(90.0)
    # β = 0.5: every replica linear → 50
    assert component_output_keyed(50, shares, 1.0, 40.0) == pytest.approx(50.0)
    with pytest.raises(ModelError, match="key shares"):
        keyed_source_rates(10, (0.5, -0.1))


def test_eq12_13_chain_and_its_inverse():
    # spout (1, ∞) → splitter (α 7.6, ST 760) → counter (α 1, ST 5000)
    stages = [(1.0, float("inf")), (7.6, 760.0), (1.0, 5000.0)]
    assert chain_output(50, stages) == pytest.approx(380.0)  # all linear: 7.6·50
    assert chain_output(200, stages) == pytest.approx(760.0)  # splitter caps at ST
    # splitter saturates at t_0 = 760/7.6 = 100; the counter at 5000/7.6 ≈ 657.9
    t0, where = chain_saturation_point(stages)
    assert t0 == pytest.approx(100.0)
    assert where == 1
    with pytest.raises(ModelError):
        chain_saturation_point([])


def test_eq14_risk_with_headroom():
    assert backpressure_risk(50, 100) == "low"
    assert backpressure_risk(95, 100) == "high"  # t'_0 ~ t_0 (within the 10 % headroom)
    assert backpressure_risk(150, 100) == "high"
    assert backpressure_risk(95, 100, headroom=0.0) == "low"


def _points(alpha: float, sp: float, rates: np.ndarray, p: int, noise: float, seed: int):
    rng = np.random.default_rng(seed)
    points = []
    for t in rates:
        for r in range(p):
            inp = t if t < sp else sp * (1 + noise * rng.standard_normal())
            inp = min(inp, t)
            out = alpha * inp * (1 + noise * rng.standard_normal())
            points.append(MeasuredPoint(p, float(t), float(inp), {"w": float(out)}, replica=r))
    return points


@pytest.mark.parametrize(("alpha", "sp"), [(7.638, 11.0), (0.5, 300.0), (1.0, 42.0)])
def test_fit_recovers_known_alpha_sp_st(alpha, sp):
    points = _points(alpha, sp, np.linspace(0.1 * sp, 2.5 * sp, 40), p=3, noise=0.01, seed=7)
    fit = fit_instance(points)
    assert fit.alpha == pytest.approx(alpha, rel=0.01)
    assert fit.sp == pytest.approx(sp, rel=0.01)
    assert fit.st == pytest.approx(alpha * sp, rel=0.02)
    assert fit.points_below > 0
    assert fit.points_above > 0
    assert fit.output_fit_error < 0.05
    assert fit.output(0.5 * sp) == pytest.approx(0.5 * sp * fit.alpha)


def test_fit_error_grows_with_noise():
    rates = np.linspace(1, 25, 40)
    clean = fit_instance(_points(2.0, 10.0, rates, 2, 0.001, 1))
    noisy = fit_instance(_points(2.0, 10.0, rates, 2, 0.10, 1))
    assert noisy.output_fit_error > 5 * clean.output_fit_error


def test_fit_needs_points_on_both_sides():
    below = _points(2.0, 100.0, np.linspace(1, 50, 10), 1, 0.0, 0)
    with pytest.raises(ModelError, match="no measured point above saturation"):
        fit_instance(below, what="component 'splitter'")
    above = _points(2.0, 1.0, np.linspace(5, 50, 10), 1, 0.0, 0)
    with pytest.raises(ModelError, match="no measured point below saturation"):
        fit_instance(above)
    with pytest.raises(ModelError, match="no measured points"):
        fit_instance([])


def test_fit_can_keep_only_the_linear_part():
    below = _points(3.0, 100.0, np.linspace(1, 50, 10), 1, 0.0, 0)
    fit = fit_instance(below, require_saturation=False)
    assert fit.alpha == pytest.approx(3.0)
    assert not fit.saturation_seen
    assert fit.sp == float("inf")
    assert fit.max_source == pytest.approx(50.0)


def test_backpressure_flag_marks_saturation():
    pts = [
        MeasuredPoint(1, 10, 10, {"o": 10}),
        MeasuredPoint(1, 10, 10, {"o": 10}, backpressure=True),
    ]
    fit = fit_instance(pts)
    assert (fit.points_below, fit.points_above) == (1, 1)


def test_measured_point_rejects_bad_values():
    with pytest.raises(ModelError, match="source_rate must be ≥ 0"):
        MeasuredPoint(1, -1.0, 0.0)
    with pytest.raises(ModelError, match="replica 3 outside"):
        MeasuredPoint(2, 1.0, 1.0, replica=3)
    with pytest.raises(ModelError, match="cpu must be ≥ 0"):
        MeasuredPoint(1, 1.0, 1.0, cpu=float("nan"))
