"""Exact solvers without a heuristic start, infeasibility reasons, and `plan --json` on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from elastream.placement.diagnosis import conflict, packs
from elastream.placement.heuristic import Heuristic, NoStartError
from elastream.placement.instance import build_instance
from elastream.placement.model import (
    Application,
    InfeasibleError,
    Infrastructure,
    LinkSpec,
    NodeSpec,
    OperatorSpec,
    PlacementError,
    PlanRequest,
    StreamSpec,
    Weights,
)
from elastream.placement.service import plan

EXACT = ("compact", "exact")
WEIGHTS = (Weights(r=1), Weights(c=1), Weights(r=0.25, a=0.25, c=0.25, z=0.25))

# Two nodes of 4 and 3 units; src pinned on n0 and sink on n1 (1 unit each). b (2 units) and
# a (3 units) fit only as a on n0, b on n1. First fit puts b beside its upstream src on n0,
# after which a fits nowhere; the rounded LP relaxation fails the same way.
ONE_WAY = """\
nodes:
  - {name: n0, resources: 4}
  - {name: n1, resources: 3}
default_link: {delay_ms: 10}
operators:
  src: {service_rate: 100, source_rate: 10, pinned: n0}
  b: {service_rate: 100, resources: 2}
  a: {service_rate: 100, resources: 3}
  sink: {service_rate: 100, pinned: n1}
streams:
  - {src: src, dst: b}
  - {src: b, dst: a}
  - {src: a, dst: sink}
"""
ONLY_PLAN = {"src": ["n0"], "b": ["n1"], "a": ["n0"], "sink": ["n1"]}


def op(name: str, res: float, **extra: object) -> OperatorSpec:
    return OperatorSpec(name=name, service_rate=100, resources=res, **extra)  # type: ignore[arg-type]


def one_way(weights: Weights, solver: str = "compact") -> PlanRequest:
    ops = (
        op("src", 1, source_rate=10, candidates=("n0",)),
        op("b", 2),
        op("a", 3),
        op("sink", 1, candidates=("n1",)),
    )
    streams = tuple(StreamSpec(src=s, dst=d) for s, d in (("src", "b"), ("b", "a"), ("a", "sink")))
    infra = Infrastructure(
        nodes=(NodeSpec(name="n0", resources=4), NodeSpec(name="n1", resources=3)),
        default_link=LinkSpec(delay_ms=10.0),
    )
    return PlanRequest(
        application=Application(operators=ops, streams=streams),
        infrastructure=infra,
        weights=weights,
        solver=solver,  # type: ignore[arg-type]
    )


def packing_infeasible(solver: str) -> PlanRequest:
    """3 + 3 units and a pinned 1 into nodes of 4 and 3: 7 units fit in total, not per node."""
    ops = (op("src", 1, source_rate=10, candidates=("n1",)), op("a", 3), op("b", 3))
    streams = (StreamSpec(src="src", dst="a"), StreamSpec(src="a", dst="b"))
    infra = Infrastructure(
        nodes=(NodeSpec(name="n0", resources=4), NodeSpec(name="n1", resources=3)),
        default_link=LinkSpec(delay_ms=10.0),
    )
    return PlanRequest(
        application=Application(operators=ops, streams=streams),
        infrastructure=infra,
        weights=Weights(r=1),
        solver=solver,  # type: ignore[arg-type]
    )


def test_first_fit_finds_no_start_on_the_one_way_instance() -> None:
    inst = build_instance(one_way(Weights(r=1)))
    with pytest.raises(NoStartError):
        Heuristic().search(inst, 10.0)
    with pytest.raises(PlacementError, match=r"a placement exists: use --solver compact"):
        plan(one_way(Weights(r=1), "heuristic"))


@pytest.mark.parametrize("weights", WEIGHTS, ids=lambda w: repr(w.model_dump()))
@pytest.mark.parametrize("solver", EXACT)
def test_exact_solvers_solve_without_a_start(solver: str, weights: Weights) -> None:
    brute = plan(one_way(weights, "brute"))
    result = plan(one_way(weights, solver))
    assert result["optimal"] and result["status"] == "Optimal"
    assert result["placement"] == brute["placement"] == ONLY_PLAN
    assert result["objective"] == pytest.approx(brute["objective"], abs=1e-9)


@pytest.mark.parametrize("solver", ("compact", "exact", "brute"))
def test_infeasible_instance_says_which_operator_and_why(solver: str) -> None:
    with pytest.raises(InfeasibleError) as err:
        plan(packing_infeasible(solver))
    message = str(err.value)
    assert message.startswith(f"{solver}: no replication and placement fits the nodes")
    assert "heuristic" not in message
    assert "operator 'b' cannot be placed beside 'src', 'a'" in message
    assert "n0 (4), n1 (3), which offer 7" in message
    assert "no node among n0, n1 with 3 units free" in message


def test_heuristic_proves_infeasibility_by_its_packing_check() -> None:
    with pytest.raises(InfeasibleError, match=r"heuristic \(its packing check\): .*'b' cannot"):
        plan(packing_infeasible("heuristic"))


def test_a_short_resource_is_named_with_the_shortfall() -> None:
    # a and b may only run on n1 (3 units), 2 units each; n0 is large but not a candidate
    ops = (
        op("src", 1, source_rate=10, candidates=("n0",)),
        op("a", 2, candidates=("n1",)),
        op("b", 2, candidates=("n1", "n2")),
        op("c", 2, candidates=("n1", "n2")),
    )
    streams = tuple(StreamSpec(src="src", dst=d) for d in "abc")
    infra = Infrastructure(
        nodes=tuple(NodeSpec(name=n, resources=r) for n, r in (("n0", 8), ("n1", 3), ("n2", 2))),
        default_link=LinkSpec(delay_ms=10.0),
    )
    req = PlanRequest(
        application=Application(operators=ops, streams=streams),
        infrastructure=infra,
        weights=Weights(c=1),
    )
    inst = build_instance(req)
    assert packs(inst, [0, 1, 2], 10.0) is True
    assert [inst.op_names[i] for i in conflict(inst, 10.0)] == ["a", "b", "c"]
    with pytest.raises(InfeasibleError, match=r"which offer 5: 1 resource units short"):
        plan(req)


def test_plan_json_stdout_is_one_json_object(tmp_path: Path) -> None:
    infra = tmp_path / "one-way.yaml"
    infra.write_text(ONE_WAY)
    done = subprocess.run(  # a fresh process: HiGHS prints its banner at its first Highs()
        [sys.executable, "-m", "elastream.cli", "plan", "--infra", str(infra), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # the whole stdout, nothing before or after
    assert result["placement"] == ONLY_PLAN
    assert result["optimal"]
