"""Sources and sinks of every kind in the pipeline model: defaults, required and foreign fields."""

from __future__ import annotations

from typing import Any

import pytest

from elastream.model.endpoints import SinkKind, SourceKind
from elastream.model.pipeline import TopologyError, pipeline_from_dict


def _pipeline(source: dict[str, Any], sink: dict[str, Any] | None = None) -> Any:
    return pipeline_from_dict(
        {
            "sources": [source],
            "operators": [{"name": "op", "function": "m:f"}],
            "sinks": [sink or {"name": "out"}],
            "streams": [{"from": source["name"], "to": "op"}, {"from": "op", "to": "out"}],
        }
    )


def test_generator_stays_the_default_kind() -> None:
    pipeline = _pipeline({"name": "s", "generator": "m:g", "rate": 5})
    assert pipeline.sources[0].kind is SourceKind.GENERATOR
    assert pipeline.sinks[0].kind is SinkKind.QUEUE
    assert pipeline.generator_sources == pipeline.sources


def test_every_kind_validates_with_its_fields() -> None:
    files = _pipeline(
        {"name": "s", "kind": "files", "path": "/in", "format": "csv", "schema": "a INT"},
        {"name": "out", "kind": "files", "path": "/out", "format": "json"},
    )
    assert files.sources[0].schema_ == "a INT" and files.sources[0].external
    assert files.generator_sources == ()
    redis = _pipeline(
        {"name": "s", "kind": "redis", "url": "redis://h:1/0", "stream": "x", "key": "user"},
        {"name": "out", "kind": "redis", "url": "redis://h:1/0", "stream": "y"},
    )
    assert redis.sinks[0].delivered
    spark = _pipeline(
        {"name": "s", "kind": "spark", "function": "m:build"},
        {"name": "out", "kind": "foreach_batch", "function": "m:fn"},
    )
    assert spark.sources[0].import_path == "m:build"


@pytest.mark.parametrize(
    ("source", "sink", "message"),
    [
        ({"name": "s", "kind": "kafka"}, None, "sources.0.kind"),
        ({"name": "s"}, None, "a source needs `kind`"),
        ({"name": "s", "kind": "files", "path": "/in"}, None, "needs `format`"),
        ({"name": "s", "kind": "files", "path": "/i", "format": "xml"}, None, "'xml'"),
        ({"name": "s", "kind": "redis", "url": "u", "stream": "x", "path": "/p"}, None, "`path`"),
        ({"name": "s", "generator": "m:g"}, {"name": "out", "kind": "files"}, "needs `path`"),
        ({"name": "s", "generator": "m:g"}, {"name": "out", "kind": "nope"}, "sinks.0.kind"),
        ({"name": "s", "generator": "m:g"}, {"name": "out", "path": "/o"}, "'queue'"),
    ],
)
def test_bad_declarations_name_the_field(
    source: dict[str, Any], sink: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(TopologyError, match=message.replace("(", r"\(")):
        _pipeline(source, sink)


def test_the_simulator_refuses_external_sources() -> None:
    pipeline = _pipeline({"name": "s", "kind": "redis", "url": "redis://h:1/0", "stream": "x"})
    with pytest.raises(TopologyError, match="source 's' is of kind 'redis'"):
        pipeline.require_generators("simulator")
