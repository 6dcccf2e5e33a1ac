"""Paper ILP, compact ILP and brute force agree on the optimal F of 50+ random small instances."""

from __future__ import annotations

import itertools

import pytest

from elastream.placement.brute import BruteForce
from elastream.placement.compact_ilp import CompactIlp
from elastream.placement.compact_model import build_compact
from elastream.placement.evaluator import evaluate
from elastream.placement.generator import random_instance
from elastream.placement.instance import build_instance
from elastream.placement.model import InfeasibleError, PlanRequest, Weights
from elastream.placement.paper_ilp import PaperIlp

WEIGHTS = (
    Weights(r=1.0),
    Weights(c=1.0),
    Weights(a=1.0),
    Weights(z=1.0),
    Weights(r=0.25, a=0.25, c=0.25, z=0.25),
    Weights(r=0.6, c=0.4),
)
METRICS = ("T", "N", "EE")
TOL = 1e-6


def small_instances(count: int):
    """Seeded instances of 2-3 nodes and 3-4 operators; infeasible draws are skipped."""
    found, skipped = [], 0
    for seed in itertools.count():
        nodes, ops = 2 + seed % 2, 3 + (seed // 2) % 2
        app, infra = random_instance(nodes, ops, seed=seed, kmax=2, resources=4)
        request = PlanRequest(
            application=app,
            infrastructure=infra,
            weights=WEIGHTS[seed % len(WEIGHTS)],
            metric=METRICS[seed % len(METRICS)],
        )
        try:
            found.append((seed, build_instance(request)))
        except InfeasibleError:
            skipped += 1
        if len(found) == count:
            return found, skipped
    raise AssertionError("unreachable")


INSTANCES, SKIPPED = small_instances(54)


def test_most_draws_are_feasible() -> None:
    assert len(INSTANCES) > SKIPPED


@pytest.mark.parametrize(("seed", "inst"), INSTANCES, ids=[f"seed{s}" for s, _ in INSTANCES])
def test_three_solvers_agree_and_evaluator_reproduces_them(seed: int, inst) -> None:
    brute = BruteForce().solve(inst, 30.0, 0.0)
    paper = PaperIlp(warm_start=seed % 2 == 1).solve(inst, 30.0, 1e-9)
    compact = CompactIlp(warm_start=seed % 2 == 0).solve(inst, 30.0, 1e-9)
    assert paper.optimal and compact.optimal
    assert paper.objective == pytest.approx(brute.objective, abs=TOL)
    assert compact.objective == pytest.approx(brute.objective, abs=TOL)
    for sol in (brute, paper, compact):
        assert evaluate(inst, sol.plan).utility == pytest.approx(sol.objective, abs=TOL)
    assert compact.n_vars <= paper.n_vars


@pytest.mark.parametrize("seed", range(6))
def test_colocation_form_has_the_transport_forms_lp_bound_and_optimum(seed: int) -> None:
    """Uniform link weights (T, no cost weight): the co-location form of the stream terms has
    the same LP relaxation and the same optimum as the full p_{U,v} form, with fewer columns."""
    app, infra = random_instance(3, 4, seed=seed, kmax=3, resources=6)
    weights = Weights(z=1.0) if seed % 2 else Weights(r=0.5, a=0.25, z=0.25)
    try:
        inst = build_instance(
            PlanRequest(application=app, infrastructure=infra, weights=weights, metric="T")
        )
    except InfeasibleError:
        pytest.skip("infeasible draw")
    short, full = build_compact(inst), build_compact(inst, colocation=False)
    assert short.m.n_vars < full.m.n_vars
    lp_short = short.m.solve(30.0, 0.0, relax=True).objective
    lp_full = full.m.solve(30.0, 0.0, relax=True).objective
    assert lp_short == pytest.approx(lp_full, abs=1e-9)
    best = short.m.solve(30.0, 1e-9).objective
    assert best == pytest.approx(full.m.solve(30.0, 1e-9).objective, abs=TOL)
    assert best == pytest.approx(BruteForce().solve(inst, 30.0, 0.0).objective, abs=TOL)
