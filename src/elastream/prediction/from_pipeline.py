"""The models' view of a pipeline: its operators as components and the operator-to-operator
streams as edges, each grouped as its target operator groups its input."""

from __future__ import annotations

from elastream.model.pipeline import Pipeline
from elastream.prediction.graph import Edge, PipelineGraph


def graph_of(pipeline: Pipeline) -> PipelineGraph:
    """Components are the operators; sources of the graph are the operators fed by sources."""
    operators = {op.name: op for op in pipeline.operators}
    edges = tuple(
        Edge(s.source, s.target, operators[s.target].grouping, s.name)
        for s in pipeline.streams
        if s.source in operators and s.target in operators
    )
    return PipelineGraph(pipeline.name, pipeline.topological_order, edges)
