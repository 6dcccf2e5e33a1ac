"""The paper's ODRP ILP (Eq. 22-32): multiset variables x_{i,U}, y_{(i,j),(U,V)}, z, on HiGHS."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from elastream.placement.instance import Instance
from elastream.placement.milp import Expr, Milp, add
from elastream.placement.model import PlacementError
from elastream.placement.solution import Solution, chosen_patterns

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


class PaperIlp:
    """Eq. 22-32 as written, with Eq. 24-25 summed over the deployments that use u (and v)."""

    name = "exact"

    def solve(self, inst: Instance, time_limit_s: float, gap: float) -> Solution:
        m = Milp()
        pats = [inst.patterns(i) for i in range(inst.n_ops)]
        x = [[m.binary() for _ in p] for p in pats]  # Eq. 29
        y = [
            {
                pair: m.binary()
                for pair in itertools.product(*map(range, map(len, (pats[ed.src], pats[ed.dst]))))
            }
            for ed in inst.edges
        ]  # Eq. 30
        z_node = [m.binary() for _ in range(inst.n_nodes)]  # Eq. 31
        z_link = {
            (u, v): m.binary() for u, v in itertools.permutations(range(inst.n_nodes), 2)
        }  # Eq. 32
        r = m.var(0.0)
        util = inst.utility
        terms = [
            {(a, b): inst.edge_terms(e, pats[ed.src][a], pats[ed.dst][b]) for a, b in y[e]}
            for e, ed in enumerate(inst.edges)
        ]
        latency = [[inst.op_latency_ms(i, u) for u in pats[i]] for i in range(inst.n_ops)]
        objective: Expr = {r: -util.r}
        for i in range(inst.n_ops):  # Eq. 13
            add(
                objective,
                ((x[i][a], -util.c * inst.op_deploy_cost(i, u)) for a, u in enumerate(pats[i])),
            )
        for e in range(len(inst.edges)):  # Eq. 14, 17-20
            add(
                objective,
                (
                    (y[e][k], -util.c * t.cost - util.z * t.network(inst.metric))
                    for k, t in terms[e].items()
                ),
            )
        add(objective, ((z_node[u], util.a * inst.log_a_node[u]) for u in range(inst.n_nodes)))
        add(objective, ((col, util.a * float(inst.log_a_link[uv])) for uv, col in z_link.items()))
        m.objective(objective)
        m.offset = util.const
        for count, path in enumerate(source_sink_paths(inst)):  # Eq. 22
            if count >= MAX_PATHS:
                raise PlacementError(f"more than {MAX_PATHS} source-sink paths: use compact")
            row: Expr = {r: 1.0}
            add(row, ((x[path[0]][a], -lat) for a, lat in enumerate(latency[path[0]])))
            for e in path[1:]:
                j = inst.edges[e].dst
                add(row, ((x[j][a], -lat) for a, lat in enumerate(latency[j])))
                add(row, ((y[e][k], -t.delay_ms) for k, t in terms[e].items()))
            m.row(row, lower=0.0)
        for u in range(inst.n_nodes):  # Eq. 23, 24
            use: Expr = {}
            act: Expr = {z_node[u]: float(inst.n_ops)}
            for i in range(inst.n_ops):
                for a, pat in enumerate(pats[i]):
                    copies = dict(pat).get(u, 0)
                    if copies:
                        use[x[i][a]] = copies * inst.op_resources[i]
                        act[x[i][a]] = -1.0
            m.row(use, upper=inst.node_resources[u])
            m.row(act, lower=0.0)
        big_n = float(max(1, len(inst.edges)))
        link_rows: dict[tuple[int, int], Expr] = {uv: {col: big_n} for uv, col in z_link.items()}
        for e, ed in enumerate(inst.edges):
            ups: list[Expr] = [{col: -1.0} for col in x[ed.src]]
            downs: list[Expr] = [{col: -1.0} for col in x[ed.dst]]
            for (a, b), yc in y[e].items():
                ups[a][yc] = 1.0
                downs[b][yc] = 1.0
                for (u, _), (v, _) in itertools.product(pats[ed.src][a], pats[ed.dst][b]):
                    if u != v:
                        link_rows[(u, v)][yc] = -1.0
            for row in ups + downs:  # Eq. 27, 28
                m.row(row, lower=0.0, upper=0.0)
        for row in link_rows.values():  # Eq. 25
            m.row(row, lower=0.0)
        for i in range(inst.n_ops):  # Eq. 26
            m.row(dict.fromkeys(x[i], 1.0), lower=1.0, upper=1.0)
        res = m.solve(time_limit_s, gap)
        return Solution(
            solver=self.name,
            plan=chosen_patterns(pats, x, res.values),
            objective=res.objective,
            optimal=res.optimal,
            status=res.status,
            gap=res.gap,
            bound=res.dual_bound,
            solver_s=res.run_s,
            n_vars=res.n_vars,
            n_binaries=res.n_binaries,
            n_rows=res.n_rows,
        )


def paper_variable_count(
    n_nodes: int, max_replicas: list[int], n_streams_pairs: list[tuple[int, int]]
) -> int:
    """Size of Eq. 29-32 with no pinning or stability reduction (the paper's ~55.8 K)."""
    from math import comb

    per_op = [sum(comb(n_nodes + s - 1, s) for s in range(1, k + 1)) for k in max_replicas]
    y = sum(per_op[i] * per_op[j] for i, j in n_streams_pairs)
    return sum(per_op) + y + n_nodes + n_nodes * (n_nodes - 1) + 1
