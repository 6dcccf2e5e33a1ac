"""Placement in the simulator: which node each replica runs on, and the network delay an event
pays on every stream between placed operators (placement/network.py's even-split mean)."""

from __future__ import annotations

from collections.abc import Mapping

from elastream.control.policy import Placement
from elastream.model.pipeline import Pipeline
from elastream.placement.model import Infrastructure
from elastream.placement.network import mean_stream_delay_ms


class SimPlacement:
    """The node of every placed replica (replica order) over one infrastructure.

    An operator (or source) that was never placed pays no delay on its streams; once placed,
    every active replica of it must have a node."""

    def __init__(self, pipeline: Pipeline, infra: Infrastructure) -> None:
        self.pipeline = pipeline
        self.infra = infra
        self.nodes: dict[str, list[str]] = {}

    def place(self, placement: tuple[Placement, ...], pool: Mapping[str, int]) -> None:
        """Record where the listed replicas run (replicas not listed keep their node)."""
        known = set(self.infra.node_names)
        for p in placement:
            if p.operator not in pool:
                raise KeyError(f"placement names unknown operator {p.operator!r}")
            if len(p.hosts) > pool[p.operator]:
                raise ValueError(
                    f"placement of {p.operator!r}: {len(p.hosts)} replicas, "
                    f"its pool has {pool[p.operator]}"
                )
            unknown = sorted(set(p.hosts) - known)
            if unknown:
                raise ValueError(
                    f"placement of {p.operator!r}: unknown node(s) {', '.join(unknown)} "
                    f"(the infrastructure has {', '.join(self.infra.node_names)})"
                )
            nodes = self.nodes.setdefault(p.operator, [])
            nodes[: len(p.hosts)] = p.hosts

    def active_nodes(self, name: str, active: int) -> list[str] | None:
        """The nodes of the first `active` replicas of `name`; None if it was never placed."""
        nodes = self.nodes.get(name)
        if nodes is None:
            return None
        if len(nodes) < active:
            raise ValueError(
                f"operator {name!r}: {active} replicas are active but only {len(nodes)} "
                "were placed on a node"
            )
        return nodes[:active]

    def path_delays_s(self, active: Mapping[str, int]) -> dict[str, float]:
        """Per operator, the network delay of the path up to it, in seconds: the mean over its
        input streams of (the upstream path's delay + the stream's delay), as the simulator
        averages the path's service time over an operator's predecessors."""
        path: dict[str, float] = dict.fromkeys(self.pipeline.source_names, 0.0)
        for name in self.pipeline.topological_order:
            if name in path:
                continue
            preds = self.pipeline.predecessors(name)
            down = self.active_nodes(name, active[name])
            total = 0.0
            for pred in preds:
                up = self.active_nodes(pred, active.get(pred, 1))
                hop = (
                    0.0
                    if up is None or down is None
                    else mean_stream_delay_ms(self.infra, up, down)
                )
                total += path[pred] + hop / 1000.0
            path[name] = total / len(preds)
        return path
