"""Pipeline graph and measurements as the models see them (Caladrius II-A..C), validated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from elastream.base.dag import kahn_order
from elastream.model.pipeline import Grouping

ANY_STREAM = "*"  # output measured over all of a component's streams together


class ModelError(ValueError):
    """Input the models cannot use: the message names the component, field or point."""


def splits_evenly(grouping: Grouping) -> bool:
    """Groupings that split an edge's tuples evenly across the target's replicas (Eq. 8)."""
    return grouping is not Grouping.KEY_HASH


@dataclass(frozen=True)
class Edge:
    """A stream `stream` of `source` read by `target`, partitioned by `grouping`."""

    source: str
    target: str
    grouping: Grouping = Grouping.SHUFFLE
    stream: str = "default"


@dataclass(frozen=True)
class PipelineGraph:
    """Components (names) and edges; sources are components without incoming edges."""

    name: str
    components: tuple[str, ...]
    edges: tuple[Edge, ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for comp in self.components:
            if not comp:
                raise ModelError(f"pipeline {self.name!r}: a component has an empty name")
            if comp in seen:
                raise ModelError(f"pipeline {self.name!r}: duplicate component {comp!r}")
            seen.add(comp)
        for edge in self.edges:
            for end in (edge.source, edge.target):
                if end not in seen:
                    raise ModelError(
                        f"pipeline {self.name!r}: edge {edge.source}->{edge.target} names "
                        f"unknown component {end!r}"
                    )
        self.topological_order()  # raises on a cycle

    def incoming(self, comp: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.target == comp)

    def outgoing(self, comp: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.source == comp)

    def sources(self) -> tuple[str, ...]:
        return tuple(c for c in self.components if not self.incoming(c))

    def sinks(self) -> tuple[str, ...]:
        return tuple(c for c in self.components if not self.outgoing(c))

    def grouping_into(self, comp: str) -> Grouping:
        """The grouping of the edges into `comp` (key if any of them is key-grouped)."""
        kinds = {e.grouping for e in self.incoming(comp)}
        return Grouping.KEY_HASH if Grouping.KEY_HASH in kinds else Grouping.SHUFFLE

    def topological_order(self) -> tuple[str, ...]:
        order, stuck = kahn_order(list(self.components), [(e.source, e.target) for e in self.edges])
        if stuck:
            raise ModelError(f"pipeline {self.name!r}: cycle through {', '.join(stuck)}")
        return tuple(order)

    def paths(self) -> tuple[tuple[str, ...], ...]:
        """Every source-to-sink path: the candidates for the critical path (IV-B3)."""
        found: list[tuple[str, ...]] = []

        def walk(path: tuple[str, ...]) -> None:
            nexts = self.outgoing(path[-1])
            if not nexts:
                found.append(path)
            for edge in nexts:
                if edge.target not in path:
                    walk((*path, edge.target))

        for src in self.sources():
            walk((src,))
        return tuple(found)


@dataclass(frozen=True)
class MeasuredPoint:
    """One interval of one replica (Caladrius II-C): rates in events/s, cpu in cores.

    `source_rate` is what was offered to the replica (admitted or still queued), `input_rate`
    what it admitted, `output_rates` its output per stream; `busy` the busy seconds per second,
    `service_time_var` the variance of the per-event service time (s²) when measured,
    `batch_rate` the micro-batches per second in which the replica processed events (the
    per-batch term of the CPU model, cpu.py) when counted.
    """

    parallelism: int
    source_rate: float
    input_rate: float
    output_rates: Mapping[str, float] = field(default_factory=dict)
    replica: int = 0
    backpressure: bool = False
    cpu: float | None = None
    busy: float | None = None
    service_time_var: float | None = None
    batch_rate: float | None = None

    def __post_init__(self) -> None:
        if self.parallelism < 1:
            raise ModelError(f"measured point: parallelism must be ≥ 1, got {self.parallelism}")
        if not 0 <= self.replica < self.parallelism:
            raise ModelError(
                f"measured point: replica {self.replica} outside 0..{self.parallelism - 1}"
            )
        rates = {"source_rate": self.source_rate, "input_rate": self.input_rate}
        rates.update({f"output_rates[{k}]": v for k, v in self.output_rates.items()})
        for extra in ("cpu", "busy", "service_time_var", "batch_rate"):
            if getattr(self, extra) is not None:
                rates[extra] = getattr(self, extra)
        for name, value in rates.items():
            if not value >= 0:  # also rejects NaN
                raise ModelError(f"measured point: {name} must be ≥ 0, got {value}")

    @property
    def output_rate(self) -> float:
        return float(sum(self.output_rates.values()))
