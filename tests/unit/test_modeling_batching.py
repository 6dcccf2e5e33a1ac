"""The micro-batch capacity terms (Eq. B1–B4, docs/modeling.md §3) on hand-worked numbers."""

import pytest

from elastream.prediction.batching import (
    MicroBatch,
    admission_cap,
    batch_overhead,
    contended_service_time,
    predicted_replica_sp,
    replica_saturation_point,
)
from elastream.prediction.graph import Grouping, MeasuredPoint, ModelError
from reproductions.caladrius.validation import validate

B2 = MicroBatch(batch_s=2.0)


def test_admission_cap_gives_each_replica_batch_s_of_work() -> None:
    assert admission_cap(2, 0.05, 2.0) == 80  # ⌊2·2/0.05⌋
    assert admission_cap(3, 5.0, 1.0) == 3  # at least one event per replica


def test_replica_saturation_point_is_events_per_batch_over_the_cycle() -> None:
    # c = 40 events, cycle = 40·0.05 + 0.5 = 2.5 s → 16 events/s
    assert replica_saturation_point(2, 0.05, B2, 0.5) == pytest.approx(16.0)
    # a short batch waits for the trigger: c = 10, c·et + O = 0.15 s < τ = 0.2 s → 50/s
    assert replica_saturation_point(1, 0.01, MicroBatch(0.1, 0.2), 0.05) == pytest.approx(50.0)


def test_overhead_inverts_the_saturation_point() -> None:
    assert batch_overhead(16.0, 2, 0.05, B2) == pytest.approx(0.5)
    assert batch_overhead(25.0, 2, 0.05, B2) == 0.0  # faster than the work alone: clipped


def test_cpu_part_stretches_beyond_the_cores() -> None:
    assert contended_service_time(2, 0.04, 0.04, 2, fit_p=1) == pytest.approx(0.04)
    assert contended_service_time(4, 0.04, 0.04, 2, fit_p=1) == pytest.approx(0.08)
    assert contended_service_time(4, 0.04, None, 2, fit_p=1) == 0.04  # ψ unknown: no stretch
    with pytest.raises(ModelError, match="already core-bound"):
        contended_service_time(4, 0.04, 0.04, 2, fit_p=4)


def test_predicted_replica_sp_keeps_the_overhead_and_adds_the_cores() -> None:
    # O = 0.5 s from the fit at p = 2; a sleep keeps SP_rep; CPU-bound on 2 cores halves it at 4
    assert predicted_replica_sp(16.0, 2, 4, 0.05, B2) == pytest.approx(16.0)
    # et(4) = 4·0.05/2 = 0.1 → c = 20, cycle = 2 + 0.5 → 8/s; 4 replicas: C/ψ·b/(b+O) = 32
    assert predicted_replica_sp(16.0, 2, 4, 0.05, B2, psi=0.05, cores=2) == pytest.approx(8.0)


def test_bad_input_names_the_field() -> None:
    with pytest.raises(ModelError, match="batch_s"):
        MicroBatch(0.0)
    with pytest.raises(ModelError, match="et must be > 0"):
        replica_saturation_point(2, 0.0, B2, 0.1)
    with pytest.raises(ModelError, match="saturation point"):
        batch_overhead(0.0, 2, 0.05, B2)


def _points(p: int, sp: float, et: float, alpha: float = 3.0) -> list[MeasuredPoint]:
    """Per-replica points below (source sp/2) and above (2·sp) saturation, busy = input·et."""
    points = []
    for j in range(p):
        for source in (sp / 2, 2 * sp):
            admitted = min(source, sp)
            points.append(
                MeasuredPoint(
                    parallelism=p,
                    source_rate=source,
                    input_rate=admitted,
                    output_rates={"*": alpha * admitted},
                    replica=j,
                    busy=admitted * et,
                    cpu=admitted * et / 2,
                )
            )
    return points


def test_validate_with_batching_predicts_the_core_bound_component() -> None:
    # fit at p = 1: SP_rep = 8 with et = 1/16 s, ψ = 1/32 → c = 32, O = 32/8 − 2 = 2 s.
    # At p = 4 on 1 core: et(4) = 4·(1/32)/1 = 1/8 s → c = 16, SP_rep = 16/(2 + 2) = 4, SP_c = 16.
    fit = _points(1, 8.0, 0.0625)
    test = _points(4, 4.0, 0.125)
    row = validate("splitter", Grouping.SHUFFLE, fit, test, cores=1.0, batching=B2)
    assert row.predicted_st == pytest.approx(3.0 * 16.0)
    assert row.st_error == pytest.approx(0.0, abs=1e-9)
    plain = validate("splitter", Grouping.SHUFFLE, fit, test, cores=None)
    assert plain.predicted_st == pytest.approx(3.0 * 32.0)  # Eq. 9 alone: 4·8
