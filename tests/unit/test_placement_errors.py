"""Bad infrastructures and applications fail with errors that name what and where."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from elastream.placement.instance import build_instance
from elastream.placement.model import (
    Application,
    InfeasibleError,
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
from elastream.placement.service import plan
from elastream.placement.yaml_io import load_request

LINK = LinkSpec(delay_ms=10.0)


def infra(*slots: float) -> Infrastructure:
    return Infrastructure(
        nodes=tuple(NodeSpec(name=f"n{u}", resources=s) for u, s in enumerate(slots)),
        default_link=LINK,
    )


def app(*ops: OperatorSpec, streams: tuple[StreamSpec, ...] = ()) -> Application:
    return Application(operators=ops, streams=streams)


def request(application: Application, resources: Infrastructure) -> PlanRequest:
    return PlanRequest(application=application, infrastructure=resources, weights=Weights(r=1))


SRC = OperatorSpec(name="src", service_rate=100, source_rate=10, candidates=("n0",))


def test_unknown_candidate_node_is_named() -> None:
    bad = OperatorSpec(name="op", service_rate=50, candidates=("n9",))
    req = request(app(SRC, bad, streams=(StreamSpec(src="src", dst="op"),)), infra(4, 4))
    with pytest.raises(PlacementError, match=r"operator 'op': unknown candidate node 'n9'"):
        build_instance(req)


def test_unknown_link_node_is_named() -> None:
    with pytest.raises(ValidationError, match=r"links\[0\]: unknown node 'nX'"):
        Infrastructure(
            nodes=(NodeSpec(name="n0", resources=1),),
            default_link=LINK,
            links=(LinkOverride(src="n0", dst="nX", delay_ms=3),),
        )


def test_pinned_operator_without_resources() -> None:
    pinned = OperatorSpec(name="big", service_rate=50, resources=8, candidates=("n1",))
    req = request(app(SRC, pinned, streams=(StreamSpec(src="src", dst="big"),)), infra(4, 4))
    with pytest.raises(InfeasibleError, match=r"pinned operator 'big' needs 8 .* node\(s\) n1"):
        build_instance(req)


def test_weights_must_sum_to_one() -> None:
    with pytest.raises(ValidationError, match=r"sum to 0.9, not 1"):
        Weights(r=0.5, c=0.4)


def test_overload_beyond_max_replicas_is_infeasible() -> None:
    slow = OperatorSpec(name="slow", service_rate=4, max_replicas=2)
    req = request(app(SRC, slow, streams=(StreamSpec(src="src", dst="slow"),)), infra(4, 4))
    with pytest.raises(InfeasibleError, match=r"'slow': load 10 tuples/s needs 3 replicas"):
        build_instance(req)


def test_too_few_resources_overall_is_infeasible() -> None:
    ops = [SRC] + [OperatorSpec(name=f"o{k}", service_rate=50) for k in range(4)]
    streams = tuple(StreamSpec(src="src", dst=f"o{k}") for k in range(4))
    req = request(app(*ops, streams=streams), infra(2, 2))
    with pytest.raises(InfeasibleError, match=r"need at least 5 resource units, the nodes offer 4"):
        build_instance(req)


def test_packing_infeasible_reported_by_the_solver() -> None:
    # each operator fits some node alone, the total fits, but no packing does: 3 + 3 into 4 + 2
    ops = [
        OperatorSpec(name="src", service_rate=100, source_rate=10, resources=1, candidates=("n1",)),
        OperatorSpec(name="a", service_rate=50, resources=3),
        OperatorSpec(name="b", service_rate=50, resources=3),
    ]
    streams = (StreamSpec(src="src", dst="a"), StreamSpec(src="a", dst="b"))
    req = request(app(*ops, streams=streams), infra(4, 3))
    for solver in ("compact", "exact", "brute"):
        with pytest.raises(InfeasibleError):
            plan(req.model_copy(update={"solver": solver}))


def test_cycle_and_unknown_stream_end() -> None:
    a = OperatorSpec(name="a", service_rate=5, source_rate=1)
    b = OperatorSpec(name="b", service_rate=5)
    with pytest.raises(ValidationError, match=r"cycle through a, b"):
        app(a, b, streams=(StreamSpec(src="a", dst="b"), StreamSpec(src="b", dst="a")))
    with pytest.raises(ValidationError, match=r"streams\[0\]: unknown operator 'c'"):
        app(a, b, streams=(StreamSpec(src="a", dst="c"),))


def test_planning_file_errors_name_file_and_field(tmp_path: Path) -> None:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        "sources: [{name: s, generator: 'x:y', rate: 5}]\n"
        "operators: [{name: op, function: 'x:z', service_time_ms: 10}]\n"
        "sinks: [{name: out}]\n"
        "streams: [{from: s, to: op}, {from: op, to: out}]\n"
    )
    bad_node = tmp_path / "bad.yaml"
    bad_node.write_text("nodes: [{name: n0, resources: -1}]\n")
    with pytest.raises(PlacementError, match=r"bad.yaml: nodes.0.resources"):
        load_request(str(bad_node), pipeline, Weights(r=1))
    stray = tmp_path / "stray.yaml"
    stray.write_text("nodes: [{name: n0, resources: 2}]\noperators: {nope: {pinned: n0}}\n")
    with pytest.raises(PlacementError, match=r"operators.nope: not a source or operator"):
        load_request(str(stray), pipeline, Weights(r=1))
    pinned_missing = tmp_path / "pin.yaml"
    pinned_missing.write_text("nodes: [{name: n0, resources: 2}]\noperators: {op: {pinned: n7}}\n")
    req = load_request(str(pinned_missing), pipeline, Weights(r=1))
    with pytest.raises(PlacementError, match=r"operator 'op': unknown candidate node 'n7'"):
        build_instance(req)


def test_planning_file_errors_name_the_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("nodes:\n  - {name: n0, resources: 2\n")
    with pytest.raises(PlacementError, match=r"broken.yaml:3: not valid YAML"):
        load_request(str(broken), None, Weights(r=1))
    twice = tmp_path / "twice.yaml"
    twice.write_text("nodes: [{name: n0, resources: 2}]\nnodes: []\n")
    with pytest.raises(PlacementError, match=r"twice.yaml:2: duplicate key 'nodes'"):
        load_request(str(twice), None, Weights(r=1))
    negative = tmp_path / "negative.yaml"
    negative.write_text("default_link: {delay_ms: 0}\nnodes:\n  - {name: n0, resources: -1}\n")
    with pytest.raises(PlacementError, match=r"negative.yaml: nodes.0.resources: .* \(line 3\)$"):
        load_request(str(negative), None, Weights(r=1))


def test_duplicate_names_are_named() -> None:
    twice = NodeSpec(name="n0", resources=1)
    with pytest.raises(ValidationError, match=r"duplicate node name\(s\): n0"):
        Infrastructure(nodes=(twice, twice, NodeSpec(name="n1", resources=1)), default_link=LINK)
    with pytest.raises(ValidationError, match=r"duplicate operator name\(s\): src"):
        app(SRC, SRC, OperatorSpec(name="op", service_rate=5))
