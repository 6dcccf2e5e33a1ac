"""Pipeline validation: every error names its culprit."""

import copy

import pytest
from support.builders import linear_pipeline

from elastream.config.files import load_pipeline
from elastream.model.pipeline import TopologyError, pipeline_from_dict


def bad(mutate, match):
    data = copy.deepcopy(linear_pipeline())
    mutate(data)
    with pytest.raises(TopologyError, match=match):
        pipeline_from_dict(data, "test.yaml")


def test_valid_pipeline_order_and_r_over():
    p = pipeline_from_dict(linear_pipeline(3, (1, 4)))
    assert p.topological_order == ("op1", "op2", "op3")
    assert p.overprovisioned_replicas == 12
    assert p.routes("op1") == {"out": ("op2",)}


def test_cycle_is_named():
    bad(lambda d: d["streams"].append({"from": "op3", "to": "op1"}), "cycle through op1, op2, op3")


def test_unknown_and_duplicate_names():
    bad(lambda d: d["streams"].append({"from": "op2", "to": "nowhere"}), "'nowhere' is unknown")
    bad(lambda d: d["operators"].append(dict(d["operators"][0])), "duplicate node name 'op1'")
    bad(lambda d: d["streams"].append({"from": "sink", "to": "op1"}), "'sink' is a sink")


def test_unreachable_operator():
    def add_island(d):
        d["operators"].append({"name": "island", "function": "m:f"})
        d["streams"].append({"from": "island", "to": "sink"})

    bad(add_island, "'island' is unreachable")


def test_bad_numbers_name_the_field():
    bad(lambda d: d["sources"][0].update(rate=-5), r"sources\.0\.rate")
    bad(
        lambda d: d["operators"][1].update(replicas={"min": 5, "max": 2}),
        r"operators\.1\.replicas.*min replicas \(5\) > max replicas \(2\)",
    )
    bad(lambda d: d["operators"][0].update(service_time_ms=-1), r"operators\.0\.service_time_ms")
    bad(lambda d: d["operators"][0].update(grouping="teleport"), r"operators\.0\.grouping")


def test_function_that_cannot_be_imported():
    data = linear_pipeline()
    data["operators"][0]["function"] = "no_such_module_xyz:fn"
    with pytest.raises(TopologyError, match="operator 'op1' function: cannot import module"):
        pipeline_from_dict(data).check_imports()
    data["operators"][0]["function"] = "elastream.model.grouping:nope"
    with pytest.raises(TopologyError, match="has no attribute 'nope'"):
        pipeline_from_dict(data).check_imports()


def test_yaml_errors_name_the_file(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("sources: [unclosed")
    with pytest.raises(TopologyError, match="p.yaml: not valid YAML"):
        load_pipeline(path)
    with pytest.raises(TopologyError, match="does not exist"):
        load_pipeline(tmp_path / "missing.yaml")
