"""The paper's DEBS 2015 instance (Sec. 6): sizes, and the replicas of Table 3 at 20 and 80."""

from __future__ import annotations

import pytest

from elastream.placement.compact_ilp import CompactIlp
from elastream.placement.evaluator import evaluate
from elastream.placement.instance import build_instance
from elastream.placement.model import InfeasibleError, PlanRequest, Weights
from elastream.placement.paper_ilp import paper_variable_count
from reproductions.odrp.debs import (
    PAPER_TABLE3,
    SERVICE_RATES,
    STREAMS,
    TABLE2_BOUNDS,
    debs_application,
    debs_infrastructure,
)


def request(rate: float, **extra) -> PlanRequest:
    return PlanRequest(
        application=debs_application(rate),
        infrastructure=debs_infrastructure(0),
        weights=Weights(r=1.0),
        bounds=TABLE2_BOUNDS,
        **extra,
    )


def test_unreduced_paper_model_has_about_55_8k_variables() -> None:
    index = {name: i for i, name in enumerate(SERVICE_RATES)}
    pairs = [(index[a], index[b]) for a, b, _ in STREAMS]
    pairs.append((index["metronome"], index["countByWindow"]))
    assert paper_variable_count(6, [3] * 8, pairs) == 55_813


def test_low_rate_keeps_one_replica_each_on_one_node() -> None:
    inst = build_instance(request(20))
    sol = CompactIlp().solve(inst, 60, 1e-6)
    assert sol.optimal
    assert all(len(dep) == 1 and dep[0][1] == 1 for dep in sol.plan.deployments)
    assert len({dep[0][0] for dep in sol.plan.deployments}) == 1
    assert {n: 1 for n in SERVICE_RATES} == PAPER_TABLE3[20]


def test_80_tuples_replicates_partial_rank_and_route_id_only() -> None:
    inst = build_instance(request(80))
    sol = CompactIlp().solve(inst, 60, 1e-6)
    replicas = dict(zip(inst.op_names, map(sol.plan.replicas, range(inst.n_ops)), strict=True))
    assert replicas["partialRank"] == 2 == PAPER_TABLE3[80]["partialRank"]
    assert replicas["computeRouteID"] >= 2
    others = set(replicas) - {"partialRank", "computeRouteID"}
    assert all(replicas[n] == 1 for n in others)
    # the paper: only computeRouteID's replicas sit on a second node
    nodes = {n: {u for u, _ in sol.plan.deployments[i]} for i, n in enumerate(inst.op_names)}
    assert nodes["computeRouteID"].isdisjoint(nodes["source"])
    assert abs(evaluate(inst, sol.plan).utility - sol.objective) < 1e-6


def test_placement_only_s_odp_needs_replication_at_80() -> None:
    ones = dict.fromkeys(SERVICE_RATES, 1)
    with pytest.raises(InfeasibleError, match=r"'partialRank': 1 replica\(s\) cannot serve 2500"):
        build_instance(request(80, fixed_replicas=ones))


def test_time_limit_returns_the_incumbent_with_its_bound() -> None:
    from elastream.placement.service import plan

    result = plan(request(80, solver="exact", time_limit_s=1.0))
    assert not result["optimal"]
    assert result["status"] == "Time limit reached"
    assert result["bound"] >= result["objective"] - 1e-9
    assert result["replicas"]["partialRank"] >= 2
