"""A validated, indexed ODRP instance: rates, multiset deployments P(V_res^i; k_i), QoS terms."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from elastream.placement.model import (
    Bounds,
    InfeasibleError,
    Metric,
    OperatorSpec,
    PlacementError,
    PlanRequest,
    Weights,
    topological_order,
)

# A deployment U of one operator: a multiset of nodes, as sorted (node index, copies) pairs.
Pattern = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Edge:
    """A stream (i, j) with its tuple rate lambda_(i,j) and bytes per tuple b_(i,j)."""

    src: int
    dst: int
    rate: float
    bytes_per_tuple: float


@dataclass(frozen=True)
class EdgeTerms:
    """The QoS of one stream under deployments U and V (Eq. 4-7, 18-20)."""

    delay_ms: float
    cost: float
    traffic: float
    usage: float
    energy: float

    def network(self, metric: Metric) -> float:
        """Z_(i,j) for the chosen network metric (Eq. 18, 19 or 20)."""
        if metric == "T":
            return self.traffic
        return self.usage if metric == "N" else self.energy


@dataclass(frozen=True)
class Utility:
    """Eq. 21 as F = const - r*R + a*log A - c*C - z*Z (a degenerate range adds its weight)."""

    const: float
    r: float
    a: float
    c: float
    z: float

    def value(self, response_ms: float, log_a: float, cost: float, network: float) -> float:
        return self.const - self.r * response_ms + self.a * log_a - self.c * cost - self.z * network


@dataclass(frozen=True)
class Instance:
    """Everything the solvers and the evaluator read, indexed; operators in topological order."""

    op_names: tuple[str, ...]
    node_names: tuple[str, ...]
    load: tuple[float, ...]  # lambda_i, tuples/s into operator i
    service_rate: tuple[float, ...]
    op_resources: tuple[float, ...]
    op_cost: tuple[float, ...]
    candidates: tuple[tuple[int, ...], ...]
    min_replicas: tuple[int, ...]
    max_replicas: tuple[int, ...]
    node_resources: tuple[float, ...]
    speedup: tuple[float, ...]
    log_a_node: tuple[float, ...]
    delay_ms: np.ndarray  # d_(u,v), zero on the diagonal
    link_cost: np.ndarray  # C_(u,v), zero on the diagonal
    log_a_link: np.ndarray  # log A_(u,v), zero on the diagonal
    edges: tuple[Edge, ...]
    metric: Metric
    weights: Weights
    bounds: Bounds
    utility: Utility

    @property
    def n_ops(self) -> int:
        return len(self.op_names)

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    def patterns(self, i: int) -> list[Pattern]:
        """P(V_res^i; k_i) without the deployments that overload i or cannot fit a node."""
        return list(iter_patterns(self, i))

    def pattern_count(self, i: int) -> int:
        """|P(V_res^i; k_i)| restricted to stable sizes, before the resource filter."""
        n = len(self.candidates[i])
        sizes = range(self.min_replicas[i], self.max_replicas[i] + 1)
        return sum(math.comb(n + s - 1, s) for s in sizes)

    def op_latency_ms(self, i: int, pattern: Pattern) -> float:
        """Eq. 1 with the M/M/1 latency of Sec. 6.1: R_i(lambda_i/|U|) / min S_u."""
        replicas = sum(c for _, c in pattern)
        spare = self.service_rate[i] - self.load[i] / replicas
        if spare <= 0:
            raise PlacementError(
                f"operator {self.op_names[i]!r} is overloaded with {replicas} replica(s): "
                f"load {self.load[i]:g} tuples/s, service rate {self.service_rate[i]:g}"
            )
        slowest = min(self.speedup[u] for u, _ in pattern)
        return 1000.0 / spare / slowest

    def op_deploy_cost(self, i: int, pattern: Pattern) -> float:
        """Eq. 2: C_{i,U} = sum_u U(u) C_i Res_i."""
        return sum(c for _, c in pattern) * self.op_cost[i] * self.op_resources[i]

    def edge_terms(self, e: int, up: Pattern, down: Pattern) -> EdgeTerms:
        """Eq. 4-7 and 18-20; the stream is split evenly over every pair of replicas (Eq. 7)."""
        edge = self.edges[e]
        pairs = sum(c for _, c in up) * sum(c for _, c in down)
        delay = cost = traffic = usage = energy = 0.0
        for (u, cu), (v, cv) in itertools.product(up, down):
            share = edge.rate * cu * cv / pairs  # lambda_(i,j),(U,V) summed over copies
            d = float(self.delay_ms[u, v])
            delay = max(delay, d)
            cost += share * float(self.link_cost[u, v])
            if u != v:
                data = share * edge.bytes_per_tuple
                traffic += data
                usage += data * d
                energy += data * d * d
        return EdgeTerms(delay, cost, traffic, usage, energy)


def iter_patterns(inst: Instance, i: int) -> Iterator[Pattern]:
    """Multisets over the candidate nodes of i with min_replicas <= |U| <= max_replicas."""
    nodes = inst.candidates[i]
    for size in range(inst.min_replicas[i], inst.max_replicas[i] + 1):
        for combo in itertools.combinations_with_replacement(nodes, size):
            pattern = tuple((u, combo.count(u)) for u in sorted(set(combo)))
            if all(c * inst.op_resources[i] <= inst.node_resources[u] for u, c in pattern):
                yield pattern


def build_instance(request: PlanRequest) -> Instance:
    """Resolve names, rates, candidate sets and bounds; raise clear errors on bad input."""
    app, infra = request.application, request.infrastructure
    node_index = {name: u for u, name in enumerate(infra.node_names)}
    order = topological_order(
        [o.name for o in app.operators], [(s.src, s.dst) for s in app.streams]
    )
    ops = {o.name: o for o in app.operators}
    op_index = {name: i for i, name in enumerate(order)}
    load, edges = _rates(request, order, op_index)
    candidates = tuple(_candidates(ops[name], node_index) for name in order)
    fixed = request.fixed_replicas or {}
    for name in fixed:
        if name not in ops:
            raise PlacementError(f"fixed_replicas: unknown operator {name!r}")
    min_rep, max_rep = [], []
    for i, name in enumerate(order):
        low, high = _replica_range(ops[name], load[i], fixed.get(name))
        min_rep.append(low)
        max_rep.append(high)
    n = len(infra.nodes)
    delay, cost, log_link = (np.zeros((n, n)) for _ in range(3))
    for u, v in itertools.permutations(range(n), 2):
        delay[u, v] = infra.default_link.delay_ms
        cost[u, v] = infra.default_link.cost
        log_link[u, v] = math.log(infra.default_link.availability)
    for link in infra.links:
        pairs = [(link.src, link.dst)] + ([(link.dst, link.src)] if link.symmetric else [])
        for a, b in pairs:
            u, v = node_index[a], node_index[b]
            delay[u, v], cost[u, v] = link.delay_ms, link.cost
            log_link[u, v] = math.log(link.availability)
    partial = Instance(
        op_names=tuple(order),
        node_names=infra.node_names,
        load=tuple(load),
        service_rate=tuple(ops[n_].service_rate for n_ in order),
        op_resources=tuple(ops[n_].resources for n_ in order),
        op_cost=tuple(ops[n_].cost for n_ in order),
        candidates=candidates,
        min_replicas=tuple(min_rep),
        max_replicas=tuple(max_rep),
        node_resources=tuple(nd.resources for nd in infra.nodes),
        speedup=tuple(nd.speedup for nd in infra.nodes),
        log_a_node=tuple(math.log(nd.availability) for nd in infra.nodes),
        delay_ms=delay,
        link_cost=cost,
        log_a_link=log_link,
        edges=tuple(edges),
        metric=request.metric,
        weights=request.weights,
        # placeholder until the bounds are known (derive_bounds needs the instance)
        bounds=request.bounds or Bounds(r_min_ms=0, r_max_ms=1, a_min=1, c_min=0, c_max=1, z_max=1),
        utility=Utility(0, 0, 0, 0, 0),
    )
    _check_fits(partial)
    bounds = request.bounds or derive_bounds(partial)
    return _with_bounds(partial, bounds)


def _rates(
    request: PlanRequest, order: list[str], op_index: dict[str, int]
) -> tuple[list[float], list[Edge]]:
    """lambda_i in topological order: the sum of the input streams, or the source rate."""
    app = request.application
    ops = {o.name: o for o in app.operators}
    load = [0.0] * len(order)
    rate_of: dict[tuple[str, str], float] = {}
    for name in order:
        inputs = [s for s in app.streams if s.dst == name]
        if inputs:
            load[op_index[name]] = sum(rate_of[(s.src, s.dst)] for s in inputs)
        else:
            load[op_index[name]] = float(ops[name].source_rate or 0.0)
        for s in app.streams:
            if s.src == name:
                own = load[op_index[name]]
                rate_of[(s.src, s.dst)] = s.rate if s.rate is not None else s.selectivity * own
    edges = [
        Edge(op_index[s.src], op_index[s.dst], rate_of[(s.src, s.dst)], s.bytes_per_tuple)
        for s in sorted(app.streams, key=lambda s: (op_index[s.src], op_index[s.dst]))
    ]
    return load, edges


def _candidates(op: OperatorSpec, node_index: dict[str, int]) -> tuple[int, ...]:
    """V_res^i as node indices; every node when the operator names none."""
    if op.candidates is None:
        return tuple(range(len(node_index)))
    for node in op.candidates:
        if node not in node_index:
            raise PlacementError(f"operator {op.name!r}: unknown candidate node {node!r}")
    return tuple(sorted({node_index[n] for n in op.candidates}))


def _replica_range(op: OperatorSpec, load: float, fixed: int | None) -> tuple[int, int]:
    """The stable replica counts of i: lambda_i / |U| < mu_i, |U| <= k_i (or the fixed one)."""
    name, mu, k = op.name, op.service_rate, op.max_replicas
    low = math.floor(load / mu) + 1
    if fixed is not None:
        if fixed < 1:
            raise PlacementError(f"fixed_replicas[{name!r}] = {fixed}: must be >= 1")
        if fixed < low:
            raise InfeasibleError(
                f"operator {name!r}: {fixed} replica(s) cannot serve {load:g} tuples/s "
                f"at {mu:g} tuples/s each (needs {low})"
            )
        if fixed > k:
            raise PlacementError(f"fixed_replicas[{name!r}] = {fixed}: above max_replicas {k}")
        return fixed, fixed
    if low > k:
        raise InfeasibleError(
            f"operator {name!r}: load {load:g} tuples/s needs {low} replicas at {mu:g} "
            f"tuples/s each, but max_replicas is {k}"
        )
    return low, k


def _check_fits(inst: Instance) -> None:
    """Clear errors for pinned operators that do not fit and for too few resources overall."""
    for i, name in enumerate(inst.op_names):
        need = inst.min_replicas[i] * inst.op_resources[i]
        room = sum(inst.node_resources[u] for u in inst.candidates[i])
        if need > room:
            where = ", ".join(inst.node_names[u] for u in inst.candidates[i])
            kind = "pinned operator" if len(inst.candidates[i]) == 1 else "operator"
            raise InfeasibleError(
                f"{kind} {name!r} needs {need:g} resource units "
                f"({inst.min_replicas[i]} replica(s)) but node(s) {where} offer {room:g}"
            )
        slots = sum(inst.node_resources[u] // inst.op_resources[i] for u in inst.candidates[i])
        if slots < inst.min_replicas[i]:
            raise InfeasibleError(
                f"operator {name!r}: its candidate nodes hold {slots:g} replica(s), "
                f"it needs {inst.min_replicas[i]}"
            )
    need = sum(m * r for m, r in zip(inst.min_replicas, inst.op_resources, strict=True))
    total = sum(inst.node_resources)
    if need > total:
        raise InfeasibleError(
            f"the operators need at least {need:g} resource units, the nodes offer {total:g}"
        )


def derive_bounds(inst: Instance) -> Bounds:
    """Valid (not tight) normalization bounds when the request gives none."""
    worst_r, best_r, worst_d = [], [], []
    for i in range(inst.n_ops):
        cand = inst.candidates[i]
        slow, fast = min(inst.speedup[u] for u in cand), max(inst.speedup[u] for u in cand)
        worst_r.append(1000.0 / (inst.service_rate[i] - inst.load[i] / inst.min_replicas[i]) / slow)
        best_r.append(1000.0 / (inst.service_rate[i] - inst.load[i] / inst.max_replicas[i]) / fast)
    for e in inst.edges:
        pair = np.ix_(inst.candidates[e.src], inst.candidates[e.dst])
        worst_d.append(float(inst.delay_ms[pair].max()))
    r_min = longest_path(inst, best_r, [0.0] * len(inst.edges))
    r_max = longest_path(inst, worst_r, worst_d)
    res = [inst.op_cost[i] * inst.op_resources[i] for i in range(inst.n_ops)]
    c_min = sum(m * r for m, r in zip(inst.min_replicas, res, strict=True))
    c_max = sum(k * r for k, r in zip(inst.max_replicas, res, strict=True))
    c_max += sum(e.rate * float(inst.link_cost.max()) for e in inst.edges)
    power = {"T": 0, "N": 1, "EE": 2}[inst.metric]
    z_max = sum(
        e.rate * e.bytes_per_tuple * float(inst.delay_ms.max()) ** power for e in inst.edges
    )
    log_a_min = sum(inst.log_a_node) + float(inst.log_a_link.sum())
    return Bounds(
        r_min_ms=r_min,
        r_max_ms=max(r_max, r_min + 1e-9),
        a_min=math.exp(log_a_min),
        c_min=c_min,
        c_max=max(c_max, c_min + 1e-9),
        z_max=max(z_max, 1e-9),
    )


def longest_path(inst: Instance, op_ms: list[float], edge_ms: list[float]) -> float:
    """Eq. 8-9: the worst source-to-sink delay, by dynamic programming on the DAG."""
    finish = list(op_ms)
    for e, edge in enumerate(inst.edges):  # edges are sorted by upstream topological index
        finish[edge.dst] = max(finish[edge.dst], finish[edge.src] + edge_ms[e] + op_ms[edge.dst])
    return max(finish)


def _with_bounds(inst: Instance, bounds: Bounds) -> Instance:
    """Attach the bounds and Eq. 21 in linear form."""
    w = inst.weights
    const, coef = 0.0, {}
    log_a_min, log_a_max = math.log(bounds.a_min), math.log(bounds.a_max)
    for key, weight, low, high, better_high in (
        ("r", w.r, bounds.r_min_ms, bounds.r_max_ms, False),
        ("a", w.a, log_a_min, log_a_max, True),
        ("c", w.c, bounds.c_min, bounds.c_max, False),
        ("z", w.z, bounds.z_min, bounds.z_max, False),
    ):
        if high <= low:  # degenerate range: the attribute is always at its best
            const += weight
            coef[key] = 0.0
        elif better_high:
            coef[key] = weight / (high - low)
            const -= weight * low / (high - low)
        else:
            coef[key] = weight / (high - low)
            const += weight * high / (high - low)
    utility = Utility(const=const, r=coef["r"], a=coef["a"], c=coef["c"], z=coef["z"])
    return replace(inst, bounds=bounds, utility=utility)
