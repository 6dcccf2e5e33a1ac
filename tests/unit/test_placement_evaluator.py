"""The QoS evaluator against values worked out by hand from Eq. 1-21."""

from __future__ import annotations

import math

import pytest

from elastream.placement.evaluator import evaluate, plan_from_names, plan_to_names
from elastream.placement.instance import build_instance
from elastream.placement.model import (
    Application,
    Bounds,
    Infrastructure,
    LinkOverride,
    LinkSpec,
    NodeSpec,
    OperatorSpec,
    PlacementError,
    PlanRequest,
    StreamSpec,
    Weights,
)

BOUNDS = Bounds(r_min_ms=0, r_max_ms=100, a_min=0.9, c_min=0, c_max=10, z_min=0, z_max=100)


def two_node_instance(metric: str = "T"):
    infra = Infrastructure(
        nodes=(
            NodeSpec(name="n0", resources=4, speedup=1.0, availability=1.0),
            NodeSpec(name="n1", resources=4, speedup=2.0, availability=0.99),
        ),
        default_link=LinkSpec(delay_ms=99),
        links=(LinkOverride(src="n0", dst="n1", delay_ms=10, availability=0.98, cost=0.5),),
    )
    app = Application(
        operators=(
            OperatorSpec(name="src", service_rate=100, source_rate=20, candidates=("n0",)),
            OperatorSpec(name="op", service_rate=30, max_replicas=2),
        ),
        streams=(StreamSpec(src="src", dst="op", bytes_per_tuple=3),),
    )
    weights = Weights(r=0.25, a=0.25, c=0.25, z=0.25)
    req = PlanRequest(
        application=app, infrastructure=infra, weights=weights, metric=metric, bounds=BOUNDS
    )
    return build_instance(req)


def test_every_metric_matches_the_hand_computation() -> None:
    inst = two_node_instance()
    q = evaluate(inst, plan_from_names(inst, {"src": ["n0"], "op": ["n0", "n1"]}))
    # Eq. 1: 1000/(100-20) = 12.5 ms; op: 1000/(30-20/2) = 50 ms / min(S_n0, S_n1) = 1
    # Eq. 4: max(d(n0,n0), d(n0,n1)) = 10 ms
    assert q.response_ms == pytest.approx(12.5 + 10 + 50)
    # Eq. 2 + 5: 1 + 2 replicas, and 20/2 tuples/s cross n0->n1 at 0.5
    assert q.cost == pytest.approx(3 + 10 * 0.5)
    assert q.availability == pytest.approx(1.0 * 0.99 * 0.98)  # Eq. 15
    assert q.traffic == pytest.approx(10 * 3)  # Eq. 18
    assert q.usage == pytest.approx(10 * 3 * 10)  # Eq. 19
    assert q.energy == pytest.approx(10 * 3 * 100)  # Eq. 20
    expected = 0.25 * (
        (100 - 72.5) / 100
        + (math.log(0.99 * 0.98) - math.log(0.9)) / -math.log(0.9)
        + (10 - 8) / 10
        + (100 - 30) / 100
    )
    assert q.utility == pytest.approx(expected)  # Eq. 21


def test_speedup_divides_latency_and_colocation_removes_delay() -> None:
    inst = two_node_instance("EE")
    q = evaluate(inst, plan_from_names(inst, {"src": ["n0"], "op": ["n1"]}))
    assert q.response_ms == pytest.approx(12.5 + 10 + 1000 / (30 - 20) / 2)
    assert q.network == q.energy == pytest.approx(20 * 3 * 100)
    local = evaluate(inst, plan_from_names(inst, {"src": ["n0"], "op": ["n0"]}))
    assert local.traffic == 0 and local.availability == 1.0
    assert local.response_ms == pytest.approx(12.5 + 100)


def test_invalid_plans_are_rejected() -> None:
    inst = two_node_instance()
    with pytest.raises(PlacementError, match=r"'op': 3 replicas outside \[1, 2\]"):
        evaluate(inst, plan_from_names(inst, {"src": ["n0"], "op": ["n0"] * 3}))
    with pytest.raises(PlacementError, match=r"'src': node 'n1' not allowed"):
        evaluate(inst, plan_from_names(inst, {"src": ["n1"], "op": ["n0"]}))
    with pytest.raises(PlacementError, match=r"no replica for op"):
        plan_from_names(inst, {"src": ["n0"]})


def test_names_round_trip() -> None:
    inst = two_node_instance()
    names = {"src": ["n0"], "op": ["n0", "n1"]}
    assert plan_to_names(inst, plan_from_names(inst, names)) == names
