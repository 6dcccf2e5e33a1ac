"""The CPU models on hand-worked numbers: V-E's ψ, the per-batch term (Eq. C1, B5), the
platform's CPU per event (Eq. C2) and the host's cap with it (Eq. C3)."""

from __future__ import annotations

import pytest

from elastream.prediction.batching import MicroBatch, saturated_batch_rate
from elastream.prediction.cpu import (
    BatchCpuModel,
    core_capped_rate,
    fit_batch_cpu,
    fit_psi,
    platform_psi,
)
from elastream.prediction.graph import Grouping, MeasuredPoint, ModelError
from reproductions.caladrius.validation import validate

B2 = MicroBatch(batch_s=2.0)


def point(
    input_rate: float, batch_rate: float | None, cpu: float, p: int = 1, j: int = 0, **over
) -> MeasuredPoint:
    source = over.pop("source_rate", input_rate)
    return MeasuredPoint(
        parallelism=p, source_rate=source, input_rate=input_rate, replica=j, cpu=cpu,
        batch_rate=batch_rate, **over,
    )  # fmt: skip


def test_eq_c1_on_hand_worked_numbers() -> None:
    # κ = 0.5 ms per batch, ψ = 0.06 ms per event: 3 batches/s and 10 events/s → 1.5 + 0.6 ms/s
    model = BatchCpuModel(kappa=5e-4, psi=6e-5)
    assert model.cpu(input_rate=10.0, batch_rate=3.0) == pytest.approx(2.1e-3)


def test_fit_batch_cpu_recovers_kappa_and_psi_where_psi_alone_cannot() -> None:
    # Below saturation many small batches, at saturation few large ones (the Gatsby splitter's
    # shape): CPU = 0.5 ms · batches/s + 0.06 ms · events/s exactly.
    truth = BatchCpuModel(kappa=5e-4, psi=6e-5)
    shape = [(4.0, 3.2), (8.0, 3.2), (16.0, 2.8), (24.0, 0.5), (24.5, 0.45), (12.0, 0.25)]
    points = [point(x, b, truth.cpu(x, b)) for x, b in shape]
    fitted = fit_batch_cpu(points)
    assert fitted is not None
    assert (fitted.kappa, fitted.psi) == (pytest.approx(5e-4), pytest.approx(6e-5))
    psi = fit_psi(points)  # V-E's proportional fit sees a slope that is not ψ
    assert psi is not None and psi > 1.2 * truth.psi


def test_fit_batch_cpu_never_returns_a_negative_cost() -> None:
    # CPU falls as batches rise: κ would come out negative, so it is 0 and ψ is refitted alone.
    points = [point(10.0, 5.0, 1e-3), point(20.0, 1.0, 2e-3), point(30.0, 0.5, 3e-3)]
    fitted = fit_batch_cpu(points)
    assert fitted is not None
    assert fitted.kappa == 0.0 and fitted.psi == pytest.approx(1e-4)


def test_fit_batch_cpu_needs_two_counted_points() -> None:
    assert fit_batch_cpu([point(10.0, 2.0, 1e-3), point(5.0, None, 1e-3)]) is None
    with pytest.raises(ModelError, match="zero input rate"):
        fit_batch_cpu([point(0.0, 2.0, 1e-3), point(0.0, 1.0, 1e-3)], what="splitter")


def test_eq_b5_batch_rate_of_a_saturated_replica() -> None:
    # p = 2, et = 40 ms, b = 2 s: cap = ⌊2·2/0.04⌋ = 100, c = 50 per replica; at 20 events/s
    # a replica runs 20/50 = 0.4 batches per second.
    assert saturated_batch_rate(20.0, 2, 0.04, B2) == pytest.approx(0.4)


def _run(p: int, sp: float, et: float, truth: BatchCpuModel) -> list[MeasuredPoint]:
    """Per-replica points of a micro-batch run: below saturation 3 batches/s, at saturation
    one batch per cycle (Eq. B5: SP_rep / c with c = b/et)."""
    points = []
    for j in range(p):
        for source, batches in ((sp / 2, 3.0), (2 * sp, sp * et / B2.batch_s)):
            admitted = min(source, sp)
            points.append(
                point(admitted, batches, truth.cpu(admitted, batches), p, j,
                      source_rate=source, busy=admitted * et, output_rates={"*": admitted})
            )  # fmt: skip
    return points


def test_validate_predicts_the_cpu_at_saturation_with_the_per_batch_term() -> None:
    # et = 40 ms, b = 2 s, no overhead: c = 50 events per replica and batch, SP_rep = 25/s,
    # 0.5 batches/s. At p = 4: SP_c = 100, CPU = 4·0.5·κ + 100·ψ = 1 ms + 6 ms = 7 ms/s.
    truth = BatchCpuModel(kappa=5e-4, psi=6e-5)
    fit, test = _run(3, 25.0, 0.04, truth), _run(4, 25.0, 0.04, truth)
    row = validate("splitter", Grouping.SHUFFLE, fit, test, batching=B2)
    assert row.predicted_cpu == pytest.approx(7e-3)
    assert row.cpu_error == pytest.approx(0.0, abs=1e-9)
    plain = validate("splitter", Grouping.SHUFFLE, fit, test)  # V-E: ψ alone through 0
    assert plain.cpu_error is not None and plain.cpu_error > 0.05


def test_eq_c2_platform_psi_and_eq_c3_host_cap() -> None:
    # The run's processes used 1.17 cores at 22.5 sentences/s, its operators 0.9 (0.04 s of
    # CPU per sentence): ψ_P = 0.27 / 22.5 = 12 ms per sentence. On 2 cores the source rate
    # then stops at 2 / (0.04 + 0.012) = 38.46 sentences/s, not 2 / 0.04 = 50.
    psi_p = platform_psi(run_cores=1.17, operator_cores=0.9, source_rate=22.5)
    assert psi_p == pytest.approx(0.012)
    assert core_capped_rate(60.0, 0.04 + psi_p, 2.0) == pytest.approx(2 / 0.052)
    assert core_capped_rate(30.0, 0.04 + psi_p, 2.0) == 30.0
    with pytest.raises(ModelError, match="source rate must be > 0"):
        platform_psi(1.0, 0.5, 0.0)
