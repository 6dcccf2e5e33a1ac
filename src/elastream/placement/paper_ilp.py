"""The paper's ODRP ILP (Eq. 22-32): multiset variables x_{i,U}, y_{(i,j),(U,V)}, z, on HiGHS."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from elastream.placement.diagnosis import infeasible
from elastream.placement.evaluator import Deployment
from elastream.placement.instance import Instance
from elastream.placement.milp import Expr, Milp, add
from elastream.placement.model import InfeasibleError, PlacementError
from elastream.placement.solution import Solution, chosen_patterns, milp_solution

MAX_PATHS = 10_000


def source_sink_paths(inst: Instance) -> Iterator[list[int]]:
    """Pi_dsp: every operator path from a source (no input) to a sink (no output)."""
    succ: dict[int, list[int]] = {i: [] for i in range(inst.n_ops)}
    preds = set()
    for e, ed in enumerate(inst.edges):
        succ[ed.src].append(e)
        preds.add(ed.dst)

    def walk(i: int, path: list[int]) -> Iterator[list[int]]:
        if not succ[i]:
            yield path
        for e in succ[i]:
            yield from walk(inst.edges[e].dst, [*path, e])

    for i in range(inst.n_ops):
        if i not in preds:
            yield from ([i, *p] for p in walk(i, []))


class _Paper:
    """The columns of Eq. 29-32 and r, with the per-deployment QoS coefficients."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        m = self.m = Milp()
        self.pats = pats = [inst.patterns(i) for i in range(inst.n_ops)]
        self.x = [[m.binary() for _ in p] for p in pats]  # Eq. 29
        self.y = [  # Eq. 30
            {
                (a, b): m.binary()
                for a, b in itertools.product(range(len(pats[ed.src])), range(len(pats[ed.dst])))
            }
            for ed in inst.edges
        ]
        self.z_node = [m.binary() for _ in range(inst.n_nodes)]  # Eq. 31
        self.z_link = {  # Eq. 32
            (u, v): m.binary() for u, v in itertools.permutations(range(inst.n_nodes), 2)
        }
        self.r = m.var(0.0)
        self.terms = [
            {(a, b): inst.edge_terms(e, pats[ed.src][a], pats[ed.dst][b]) for a, b in self.y[e]}
            for e, ed in enumerate(inst.edges)
        ]
        self.latency = [[inst.op_latency_ms(i, u) for u in pats[i]] for i in range(inst.n_ops)]


def _objective(p: _Paper) -> None:
    """F' (Eq. 21 with r for R): Eq. 13-14 cost, Eq. 16 log A, Eq. 17-20 Z."""
    inst, util = p.inst, p.inst.utility
    objective: Expr = {p.r: -util.r}
    for i, pats in enumerate(p.pats):  # Eq. 13
        add(
            objective,
            ((p.x[i][a], -util.c * inst.op_deploy_cost(i, u)) for a, u in enumerate(pats)),
        )
    for e, terms in enumerate(p.terms):  # Eq. 14, 17-20
        add(
            objective,
            (
                (p.y[e][k], -util.c * t.cost - util.z * t.network(inst.metric))
                for k, t in terms.items()
            ),
        )
    add(objective, ((p.z_node[u], util.a * inst.log_a_node[u]) for u in range(inst.n_nodes)))
    add(objective, ((col, util.a * float(inst.log_a_link[uv])) for uv, col in p.z_link.items()))
    p.m.objective(objective)
    p.m.offset = util.const


def _paths(p: _Paper) -> None:
    """Eq. 22: r >= R_pi(x, y) for every source-sink path."""
    for count, path in enumerate(source_sink_paths(p.inst)):
        if count >= MAX_PATHS:
            raise PlacementError(f"more than {MAX_PATHS} source-sink paths: use compact")
        row: Expr = {p.r: 1.0}
        add(row, ((p.x[path[0]][a], -lat) for a, lat in enumerate(p.latency[path[0]])))
        for e in path[1:]:
            j = p.inst.edges[e].dst
            add(row, ((p.x[j][a], -lat) for a, lat in enumerate(p.latency[j])))
            add(row, ((p.y[e][k], -t.delay_ms) for k, t in p.terms[e].items()))
        p.m.row(row, lower=0.0)


def _nodes(p: _Paper) -> None:
    """Eq. 23 (resources) and Eq. 24 (z_u >= sum of the x that use u / M), Eq. 26."""
    inst = p.inst
    for u in range(inst.n_nodes):
        use: Expr = {}
        act: Expr = {p.z_node[u]: float(inst.n_ops)}
        for i, pats in enumerate(p.pats):
            for a, pat in enumerate(pats):
                copies = dict(pat).get(u, 0)
                if copies:
                    use[p.x[i][a]] = copies * inst.op_resources[i]
                    act[p.x[i][a]] = -1.0
        p.m.row(use, upper=inst.node_resources[u])
        p.m.row(act, lower=0.0)
    for cols in p.x:  # Eq. 26
        p.m.row(dict.fromkeys(cols, 1.0), lower=1.0, upper=1.0)


def _streams(p: _Paper) -> None:
    """Eq. 27-28 (y = x_i AND x_j) and Eq. 25 (z_(u,v) >= sum of the y that use (u,v) / N)."""
    inst = p.inst
    big_n = float(max(1, len(inst.edges)))
    link_rows: dict[tuple[int, int], Expr] = {uv: {col: big_n} for uv, col in p.z_link.items()}
    for e, ed in enumerate(inst.edges):
        ups: list[Expr] = [{col: -1.0} for col in p.x[ed.src]]
        downs: list[Expr] = [{col: -1.0} for col in p.x[ed.dst]]
        for (a, b), yc in p.y[e].items():
            ups[a][yc] = 1.0
            downs[b][yc] = 1.0
            for (u, _), (v, _) in itertools.product(p.pats[ed.src][a], p.pats[ed.dst][b]):
                if u != v:
                    link_rows[(u, v)][yc] = -1.0
        for row in ups + downs:
            p.m.row(row, lower=0.0, upper=0.0)
    for row in link_rows.values():
        p.m.row(row, lower=0.0)


def _start(p: _Paper, plan: Deployment) -> dict[int, float]:
    """Columns x, y and z of a known plan (a MIP start)."""
    chosen = [pats.index(dep) for pats, dep in zip(p.pats, plan.deployments, strict=True)]
    start = {col: float(a == chosen[i]) for i, cols in enumerate(p.x) for a, col in enumerate(cols)}
    for e, ed in enumerate(p.inst.edges):
        for (a, b), col in p.y[e].items():
            start[col] = float(a == chosen[ed.src] and b == chosen[ed.dst])
    used = {u for dep in plan.deployments for u, _ in dep}
    start.update({col: float(u in used) for u, col in enumerate(p.z_node)})
    links = {
        (u, v)
        for ed in p.inst.edges
        for u, _ in plan.deployments[ed.src]
        for v, _ in plan.deployments[ed.dst]
    }
    start.update({col: float(uv in links) for uv, col in p.z_link.items()})
    return start


def _heuristic_start(p: _Paper, time_limit_s: float) -> dict[int, float] | None:
    """The heuristic's plan as a MIP start; None when it finds none (HiGHS starts cold)."""
    from elastream.placement.heuristic import Heuristic, NoStartError

    try:
        return _start(p, Heuristic().search(p.inst, time_limit_s).plan)
    except (InfeasibleError, NoStartError):  # no start, or an infeasible LP relaxation
        return None


@dataclass(frozen=True)
class PaperIlp:
    """Eq. 22-32 as written, with Eq. 24-25 summed over the deployments that use u (and v)."""

    name: str = "exact"
    warm_start: bool = True  # start HiGHS from the heuristic's plan when it finds one

    def solve(self, inst: Instance, time_limit_s: float, gap: float) -> Solution:
        model = _Paper(inst)
        for block in (_objective, _paths, _nodes, _streams):
            block(model)
        start = _heuristic_start(model, time_limit_s) if self.warm_start else None
        try:
            res = model.m.solve(time_limit_s, gap, start=start)
        except InfeasibleError:
            raise infeasible(inst, self.name, time_limit_s) from None
        return milp_solution(self.name, chosen_patterns(model.pats, model.x, res.values), res)


def paper_variable_count(
    n_nodes: int, max_replicas: list[int], n_streams_pairs: list[tuple[int, int]]
) -> int:
    """Size of Eq. 29-32 with no pinning or stability reduction (the paper's ~55.8 K)."""
    from math import comb

    per_op = [sum(comb(n_nodes + s - 1, s) for s in range(1, k + 1)) for k in max_replicas]
    y = sum(per_op[i] * per_op[j] for i, j in n_streams_pairs)
    return sum(per_op) + y + n_nodes + n_nodes * (n_nodes - 1) + 1
