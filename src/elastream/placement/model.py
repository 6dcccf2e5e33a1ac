"""The ODRP input models (paper Sec. 3): resource graph, application graph, weights, bounds."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from elastream.base.dag import kahn_order
from elastream.base.settings import Settings

Metric = Literal["T", "N", "EE"]
METRICS: tuple[Metric, ...] = ("T", "N", "EE")
SolverName = Literal["exact", "compact", "heuristic", "brute"]


class PlacementError(ValueError):
    """An ODRP input that cannot be planned: bad infra, unknown names, no feasible plan."""


class InfeasibleError(PlacementError):
    """No replication and placement satisfies the constraints (Eq. 23, 26, stability)."""


class NodeSpec(Settings):
    """A computing node u of V_res (Sec. 3.1)."""

    name: str = Field(..., min_length=1, description="node name, unique in the infrastructure")
    resources: float = Field(..., gt=0, description="Res_u: resource units (slots) available")
    speedup: float = Field(1.0, gt=0, description="S_u: processing speed-up on the reference")
    availability: float = Field(1.0, gt=0, le=1, description="A_u: probability the node is up")


class LinkSpec(Settings):
    """The QoS of a logical link (u, v) of E_res, u != v (Sec. 3.1)."""

    delay_ms: float = Field(..., ge=0, description="d_(u,v): network delay, milliseconds")
    availability: float = Field(1.0, gt=0, le=1, description="A_(u,v): probability link is up")
    cost: float = Field(0.0, ge=0, description="C_(u,v): cost per unit of data (per tuple)")


class LinkOverride(LinkSpec):
    """A link whose QoS differs from the default one."""

    src: str = Field(..., description="name of the sending node u")
    dst: str = Field(..., description="name of the receiving node v")
    symmetric: bool = Field(True, description="also set the link (v, u) to the same values")


class Infrastructure(Settings):
    """The resource graph G_res: a fully connected directed graph of nodes (Sec. 3.1)."""

    nodes: tuple[NodeSpec, ...] = Field(..., min_length=1, description="the nodes V_res")
    default_link: LinkSpec = Field(..., description="QoS of every link not listed in `links`")
    links: tuple[LinkOverride, ...] = Field((), description="links whose QoS differs")

    @model_validator(mode="after")
    def _check_names(self) -> Infrastructure:
        known = _unique([n.name for n in self.nodes], "node")
        for k, link in enumerate(self.links):
            for end in (link.src, link.dst):
                if end not in known:
                    raise ValueError(f"links[{k}]: unknown node {end!r}")
            if link.src == link.dst:
                raise ValueError(f"links[{k}]: a loop ({link.src}, {link.src}) is a perfect link")
        return self

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)


class OperatorSpec(Settings):
    """An operator i of V_dsp with its reference non-functional attributes (Sec. 3.2)."""

    name: str = Field(..., min_length=1, description="operator name, unique in the application")
    service_rate: float = Field(..., gt=0, description="mu_i: tuples/s one replica serves (M/M/1)")
    resources: float = Field(1.0, gt=0, description="Res_i: resource units per replica")
    cost: float = Field(1.0, ge=0, description="C_i: cost per replica per resource unit")
    max_replicas: int = Field(1, ge=1, description="k_i: maximum replication degree")
    candidates: tuple[str, ...] | None = Field(
        None, description="V_res^i: nodes where i may run (one node: pinned); None: every node"
    )
    source_rate: float | None = Field(
        None, gt=0, description="tuples/s a source emits (its load when it has no input stream)"
    )

    @field_validator("candidates")
    @classmethod
    def _nonempty(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and not value:
            raise ValueError("candidates must name at least one node (or be omitted)")
        return value


class StreamSpec(Settings):
    """A stream (i, j) of E_dsp with its tuple rate and size (Sec. 3.2)."""

    src: str = Field(..., description="name of the upstream operator i")
    dst: str = Field(..., description="name of the downstream operator j")
    rate: float | None = Field(
        None, ge=0, description="lambda_(i,j), tuples/s; None: selectivity x input rate of i"
    )
    selectivity: float = Field(1.0, ge=0, description="tuples out per tuple into i (rate unset)")
    bytes_per_tuple: float = Field(1.0, gt=0, description="b_(i,j): data units per tuple")


class Application(Settings):
    """The application graph G_dsp: a DAG of operators and streams (Sec. 3.2)."""

    operators: tuple[OperatorSpec, ...] = Field(..., min_length=1, description="V_dsp")
    streams: tuple[StreamSpec, ...] = Field((), description="E_dsp")

    @model_validator(mode="after")
    def _check_graph(self) -> Application:
        known = _unique([o.name for o in self.operators], "operator")
        seen: set[tuple[str, str]] = set()
        for k, s in enumerate(self.streams):
            for end in (s.src, s.dst):
                if end not in known:
                    raise ValueError(f"streams[{k}]: unknown operator {end!r}")
            if (s.src, s.dst) in seen:
                raise ValueError(f"streams[{k}]: duplicate stream {s.src} -> {s.dst}")
            seen.add((s.src, s.dst))
        topological_order([o.name for o in self.operators], [(s.src, s.dst) for s in self.streams])
        fed = {s.dst for s in self.streams}
        for o in self.operators:
            if o.name not in fed and o.source_rate is None:
                raise ValueError(f"operator {o.name!r} has no input stream: give its source_rate")
        return self


def _unique(names: list[str], what: str) -> set[str]:
    """The names as a set; a name given twice is an error naming every such `what`."""
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate {what} name(s): {', '.join(dup)}")
    return set(names)


def topological_order(names: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """Kahn's order of a DAG; a cycle is an error naming its operators."""
    order, cyclic = kahn_order(names, edges)
    if cyclic:
        raise ValueError(f"the application graph has a cycle through {', '.join(cyclic)}")
    return order


class Weights(Settings):
    """SAW weights of Eq. 21: w_r + w_a + w_c + w_z = 1."""

    r: float = Field(0.0, ge=0, le=1, description="w_r: weight of the response time R")
    a: float = Field(0.0, ge=0, le=1, description="w_a: weight of the availability A")
    c: float = Field(0.0, ge=0, le=1, description="w_c: weight of the cost C")
    z: float = Field(0.0, ge=0, le=1, description="w_z: weight of the network metric Z")

    @model_validator(mode="after")
    def _sum_to_one(self) -> Weights:
        total = self.r + self.a + self.c + self.z
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"weights r={self.r}, a={self.a}, c={self.c}, z={self.z} sum to {total:g}, not 1"
            )
        return self


class Bounds(Settings):
    """Normalization factors of Eq. 21 (paper Table 2); A in (0, 1]."""

    r_min_ms: float = Field(..., ge=0, description="R_min, milliseconds")
    r_max_ms: float = Field(..., gt=0, description="R_max, milliseconds")
    a_min: float = Field(..., gt=0, le=1, description="A_min")
    a_max: float = Field(1.0, gt=0, le=1, description="A_max")
    c_min: float = Field(..., ge=0, description="C_min")
    c_max: float = Field(..., gt=0, description="C_max")
    z_min: float = Field(0.0, ge=0, description="Z_min of the chosen network metric")
    z_max: float = Field(..., gt=0, description="Z_max of the chosen network metric")

    @model_validator(mode="after")
    def _ordered(self) -> Bounds:
        for low, high, what in (
            (self.r_min_ms, self.r_max_ms, "r_min_ms < r_max_ms"),
            (self.a_min, self.a_max, "a_min <= a_max"),
            (self.c_min, self.c_max, "c_min < c_max"),
            (self.z_min, self.z_max, "z_min < z_max"),
        ):
            if low > high or (low == high and "<=" not in what):
                raise ValueError(f"bounds: need {what}, got {low} and {high}")
        return self


class PlanRequest(Settings):
    """Everything one ODRP solve needs: what the planning endpoint and `plan` accept."""

    application: Application = Field(..., description="the application graph G_dsp")
    infrastructure: Infrastructure = Field(..., description="the resource graph G_res")
    weights: Weights = Field(..., description="SAW weights of Eq. 21")
    metric: Metric = Field("T", description="network metric Z: T, N or EE (Eq. 18-20)")
    bounds: Bounds | None = Field(None, description="Eq. 21 normalization; None: derived")
    solver: SolverName = Field(
        "compact", description="exact (the paper's ILP, Eq. 22-32), compact, heuristic or brute"
    )
    time_limit_s: float = Field(60.0, gt=0, description="solver time limit, seconds")
    gap: float = Field(1e-6, ge=0, description="relative optimality gap accepted by the MILP")
    fixed_replicas: dict[str, int] | None = Field(
        None, description="operator -> replica count to impose (placement only, e.g. S-ODP)"
    )
