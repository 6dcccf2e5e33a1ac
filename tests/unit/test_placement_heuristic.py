"""The heuristic: valid plans, never above the optimum, close to it on the paper's instance."""

from __future__ import annotations

import pytest

from elastream.placement.compact_ilp import CompactIlp
from elastream.placement.evaluator import check_plan, evaluate
from elastream.placement.generator import random_instance
from elastream.placement.heuristic import Heuristic
from elastream.placement.instance import build_instance
from elastream.placement.model import PlanRequest, Weights
from reproductions.odrp.debs import TABLE2_BOUNDS, debs_application, debs_infrastructure

WEIGHTS = {
    "R": Weights(r=1),
    "C": Weights(c=1),
    "A": Weights(a=1),
    "T": Weights(z=1),
    "all": Weights(r=0.25, a=0.25, c=0.25, z=0.25),
}


@pytest.mark.parametrize("objective", list(WEIGHTS))
def test_within_five_percent_on_the_paper_instance(objective: str) -> None:
    req = PlanRequest(
        application=debs_application(100),
        infrastructure=debs_infrastructure(1, half_available=True),
        weights=WEIGHTS[objective],
        bounds=TABLE2_BOUNDS,
    )
    inst = build_instance(req)
    heur = Heuristic().solve(inst, 10, 0)
    exact = CompactIlp().solve(inst, 60, 1e-6)
    check_plan(inst, heur.plan)
    assert evaluate(inst, heur.plan).utility == pytest.approx(heur.objective, abs=1e-9)
    assert heur.objective <= exact.objective + 1e-6
    assert heur.objective >= exact.objective * 0.95


def test_random_instances_give_valid_plans_below_the_optimum() -> None:
    for seed in range(4):
        app, infra = random_instance(6, 6, seed=seed, candidates=3)
        inst = build_instance(
            PlanRequest(application=app, infrastructure=infra, weights=Weights(r=0.5, z=0.5))
        )
        heur = Heuristic(seed=seed).solve(inst, 10, 0)
        exact = CompactIlp(warm_start=False).solve(inst, 60, 1e-6)
        check_plan(inst, heur.plan)
        assert heur.objective <= exact.objective + 1e-6
