"""Reading pipeline graphs for the models: a small YAML format and a directory of them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import ValidationError

from elastream.config.files import load_pipeline
from elastream.prediction.from_pipeline import graph_of
from elastream.prediction.graph import Edge, ModelError, PipelineGraph
from elastream.service.schemas import GraphSpec


def graph_from_spec(name: str, spec: GraphSpec) -> PipelineGraph:
    return PipelineGraph(
        name=name,
        components=tuple(spec.components),
        edges=tuple(Edge(e.source, e.target, e.grouping, e.stream) for e in spec.edges),
    )


def load_graph_yaml(path: str | Path) -> PipelineGraph:
    """A pipeline file (docs/pipeline-yaml.md: its operators and their streams), or the models'
    own graph file: `name:`, `components: [..]`, `edges: [{source, target, grouping, stream}]`."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ModelError(f"graph {path}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise ModelError(f"graph {path}: expected a mapping with components and edges")
    if "operators" in data:  # a pipeline file
        return graph_of(load_pipeline(path))
    name = str(data.pop("name", path.stem))
    try:
        spec = GraphSpec(**data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ModelError(f"graph {path}: {where}: {first['msg']}") from None
    return graph_from_spec(name, spec)


class GraphDirectory:
    """Resolves a pipeline name to `<dir>/<name>.yaml`."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory) if directory else None

    def __call__(self, pipeline: str) -> PipelineGraph:
        if self.directory is None:
            raise ModelError(f"no graph for pipeline {pipeline!r}: give one inline")
        if not re.fullmatch(r"\w[\w.-]*", pipeline):
            raise ModelError(f"pipeline name {pipeline!r}: use letters, digits, '_', '.', '-'")
        path = self.directory / f"{pipeline}.yaml"
        if not path.is_file():
            raise ModelError(f"no graph for pipeline {pipeline!r} in {self.directory}")
        return load_graph_yaml(path)
