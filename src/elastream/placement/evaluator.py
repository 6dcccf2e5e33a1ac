"""The solver-independent QoS evaluator: R, C, A, T, N, EE and the utility F (Eq. 8-21)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from elastream.placement.instance import Instance, Pattern, longest_path
from elastream.placement.model import PlacementError


@dataclass(frozen=True)
class Deployment:
    """A replication and placement: for every operator (instance order) its multiset map(i)."""

    deployments: tuple[Pattern, ...]

    def replicas(self, i: int) -> int:
        return sum(c for _, c in self.deployments[i])


@dataclass(frozen=True)
class QoS:
    """The application QoS of one plan (Sec. 4.2.3) and its utility F (Eq. 21)."""

    response_ms: float
    cost: float
    availability: float
    traffic: float
    usage: float
    energy: float
    network: float
    utility: float

    def as_dict(self) -> dict[str, float]:
        return {
            "R": self.response_ms,
            "C": self.cost,
            "A": self.availability,
            "T": self.traffic,
            "N": self.usage,
            "EE": self.energy,
        }


def evaluate(inst: Instance, plan: Deployment) -> QoS:
    """QoS of `plan` straight from Eq. 1-21 (no solver involved)."""
    check_plan(inst, plan)
    dep = plan.deployments
    op_ms = [inst.op_latency_ms(i, dep[i]) for i in range(inst.n_ops)]  # Eq. 1, 10
    terms = [inst.edge_terms(e, dep[ed.src], dep[ed.dst]) for e, ed in enumerate(inst.edges)]
    response = longest_path(inst, op_ms, [t.delay_ms for t in terms])  # Eq. 8, 9, 11
    cost = sum(inst.op_deploy_cost(i, dep[i]) for i in range(inst.n_ops))  # Eq. 12, 13
    cost += sum(t.cost for t in terms)  # Eq. 14
    log_a = log_availability(inst, plan)  # Eq. 15-16
    traffic = sum(t.traffic for t in terms)  # Eq. 17-18
    usage = sum(t.usage for t in terms)  # Eq. 19
    energy = sum(t.energy for t in terms)  # Eq. 20
    network = {"T": traffic, "N": usage, "EE": energy}[inst.metric]
    utility = inst.utility.value(response, log_a, cost, network)  # Eq. 21
    return QoS(response, cost, math.exp(log_a), traffic, usage, energy, network, utility)


def log_availability(inst: Instance, plan: Deployment) -> float:
    """Eq. 16: sum of log A over the active nodes and the active links (u != v)."""
    nodes = {u for dep in plan.deployments for u, _ in dep}
    links = {
        (u, v)
        for ed in inst.edges
        for u, _ in plan.deployments[ed.src]
        for v, _ in plan.deployments[ed.dst]
        if u != v
    }
    return sum(inst.log_a_node[u] for u in nodes) + sum(
        float(inst.log_a_link[u, v]) for u, v in links
    )


def check_plan(inst: Instance, plan: Deployment) -> None:
    """A plan must deploy every operator within its candidates, k_i and the resources (Eq. 23)."""
    if len(plan.deployments) != inst.n_ops:
        raise PlacementError(f"plan has {len(plan.deployments)} deployments for {inst.n_ops} ops")
    used = [0.0] * inst.n_nodes
    for i, dep in enumerate(plan.deployments):
        name = inst.op_names[i]
        count = plan.replicas(i)
        if not inst.min_replicas[i] <= count <= inst.max_replicas[i]:
            raise PlacementError(
                f"operator {name!r}: {count} replicas outside "
                f"[{inst.min_replicas[i]}, {inst.max_replicas[i]}]"
            )
        for u, c in dep:
            if u not in inst.candidates[i] or c < 1:
                raise PlacementError(f"operator {name!r}: node {inst.node_names[u]!r} not allowed")
            used[u] += c * inst.op_resources[i]
    for u, amount in enumerate(used):
        if amount > inst.node_resources[u] + 1e-9:
            raise PlacementError(
                f"node {inst.node_names[u]!r} over capacity: "
                f"{amount:g} > {inst.node_resources[u]:g}"
            )


def plan_from_names(inst: Instance, placement: dict[str, list[str]]) -> Deployment:
    """Build a Deployment from operator -> list of node names (one per replica)."""
    op_index = {n: i for i, n in enumerate(inst.op_names)}
    node_index = {n: u for u, n in enumerate(inst.node_names)}
    deps: list[Pattern | None] = [None] * inst.n_ops
    for name, nodes in placement.items():
        if name not in op_index:
            raise PlacementError(f"placement: unknown operator {name!r}")
        for node in nodes:
            if node not in node_index:
                raise PlacementError(f"placement of {name!r}: unknown node {node!r}")
        idx = sorted(node_index[n] for n in nodes)
        deps[op_index[name]] = tuple((u, idx.count(u)) for u in sorted(set(idx)))
    missing = [inst.op_names[i] for i, d in enumerate(deps) if not d]
    if missing:
        raise PlacementError(f"placement: no replica for {', '.join(missing)}")
    return Deployment(tuple(d for d in deps if d))


def plan_to_names(inst: Instance, plan: Deployment) -> dict[str, list[str]]:
    """Operator -> list of node names, one entry per replica."""
    return {
        inst.op_names[i]: [inst.node_names[u] for u, c in dep for _ in range(c)]
        for i, dep in enumerate(plan.deployments)
    }
