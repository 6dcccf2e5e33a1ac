"""S-ODRP (Alg. 1): the early plan minimizes cost, the re-plan uses the measured rates."""

from __future__ import annotations

import pytest

from elastream.placement.model import PlacementError, PlanRequest, Weights
from elastream.placement.sodrp import Measurements, early_plan, replan, with_measurements
from reproductions.odrp.debs import STREAMS, TABLE2_BOUNDS, debs_application, debs_infrastructure


def request(rate: float) -> PlanRequest:
    return PlanRequest(
        application=debs_application(rate),
        infrastructure=debs_infrastructure(0),
        weights=Weights(r=1.0),
        bounds=TABLE2_BOUNDS,
    )


def measured_at(rate: float) -> Measurements:
    """What a runtime would report when the source emits `rate` tuples/s."""
    streams = {f"{a}->{b}": k * rate for a, b, k in STREAMS}
    return Measurements(stream_rates=streams, source_rates={"source": rate})


def test_the_early_plan_minimizes_cost_and_the_replan_follows_the_measurements() -> None:
    early = early_plan(request(20.0))
    assert early["weights"]["c"] == 1.0
    assert sum(early["replicas"].values()) == 8  # cost-optimal at 20 tuples/s: no replica
    final = replan(request(20.0), measured_at(100.0))
    assert final["weights"]["r"] == 1.0
    assert final["replicas"]["partialRank"] >= 2  # 3125 tuples/s measured
    assert sum(final["replicas"].values()) > sum(early["replicas"].values())


def test_replan_rejects_unknown_names() -> None:
    with pytest.raises(PlacementError, match=r"unknown stream 'a->b'"):
        replan(request(20.0), Measurements(stream_rates={"a->b": 1.0}))
    with pytest.raises(PlacementError, match=r"unknown operator 'ghost'"):
        with_measurements(request(20.0), Measurements(service_rates={"ghost": 1.0}))


def test_measured_service_rate_changes_the_plan() -> None:
    overloaded = Measurements(service_rates={"parser": 8.0})  # 20 tuples/s needs 3 replicas
    cheapest = request(20.0).model_copy(update={"weights": Weights(c=1.0)})
    assert replan(cheapest, Measurements())["replicas"]["parser"] == 1
    assert replan(cheapest, overloaded)["replicas"]["parser"] == 3
