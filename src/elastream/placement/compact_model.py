"""A compact exact ODRP ILP: x_{i,U} kept, y_{(i,j),(U,V)} replaced by O(|P_i| |V_res|) shares.

Same optimum as Eq. 22-32 with far fewer variables:
- the response time uses arrival times t_i (longest path on the DAG) instead of one Eq. 22 row
  per source-sink path; the max delay D_(i,j) of Eq. 4 and 11 is bounded below, for every node
  v of j, by sum_U x_{i,U} max_{u in U} d_(u,v) - H_v (1 - o_{j,v}) (and the mirror), where
  o_{j,v} = sum_{V contains v} x_{j,V} says whether j has a replica on v, plus the valid cut
  D_(i,j) >= d_min(u) (o_{i,u} - [j only on u]) that makes the LP see the network delays;
- the stream terms (Eq. 5, 14, 18-20) are bilinear in the replica shares f_i(u) = U(u)/|U|;
  p_{U,v} = x_{i,U} f_j(v) is linearized exactly by sum_v p_{U,v} = x_{i,U} and
  sum_U p_{U,v} = f_j(v) (one x_{i,U} is 1), on the side with fewer columns; when every
  link of the stream weighs the same (T with uniform link costs) only the co-located part
  p_{U,u}, u in U, is kept (same LP bound, fewer than half the columns);
- z_u >= o_{i,u} and z_(u,v) >= o_{i,u} + o_{j,v} - 1 replace the big-M rows 24-25;
- every block whose weight in F is zero is left out (it cannot change the optimum).
"""

from __future__ import annotations

import itertools

from elastream.placement.instance import Edge, Instance, Pattern
from elastream.placement.milp import Expr, Milp, add


class _Model:
    """The columns shared by the blocks of the compact model, with cached row pieces."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self.m = Milp()
        self.pats = [inst.patterns(i) for i in range(inst.n_ops)]
        self.x = [[self.m.binary() for _ in p] for p in self.pats]
        self._on: dict[tuple[int, int], Expr] = {}
        self._share: dict[tuple[int, int], Expr] = {}
        self._far: dict[tuple[int, bool], list[list[float]]] = {}
        for i, pats in enumerate(self.pats):
            for col, pat in zip(self.x[i], pats, strict=True):
                size = sum(c for _, c in pat)
                for u, c in pat:
                    self._on.setdefault((i, u), {})[col] = 1.0
                    self._share.setdefault((i, u), {})[col] = c / size

    def farthest(self, i: int, upstream: bool) -> list[list[float]]:
        """Per deployment U of i and node v: max_{u in U} d(u, v) (or d(v, u) downstream)."""
        key = (i, upstream)
        if key not in self._far:
            d = (self.inst.delay_ms if upstream else self.inst.delay_ms.T).tolist()
            self._far[key] = [
                [max(col) for col in zip(*(d[u] for u, _ in pat), strict=True)]
                for pat in self.pats[i]
            ]
        return self._far[key]

    def on_node(self, i: int, u: int) -> Expr:
        """o_{i,u}: 1 when operator i has at least one replica on node u."""
        return self._on.get((i, u), {})

    def share(self, i: int, u: int) -> Expr:
        """f_i(u) = U(u) / |U|: the fraction of i's replicas on node u."""
        return self._share.get((i, u), {})


def _assignment(model: _Model) -> None:
    """Eq. 26 (one deployment per operator) and Eq. 23 (node resources)."""
    inst, m = model.inst, model.m
    for cols in model.x:
        m.row(dict.fromkeys(cols, 1.0), lower=1.0, upper=1.0)
    use: dict[int, Expr] = {}
    for i in range(inst.n_ops):
        for col, pat in zip(model.x[i], model.pats[i], strict=True):
            for u, copies in pat:
                use.setdefault(u, {})[col] = copies * inst.op_resources[i]
    for u in sorted(use):
        m.row(use[u], upper=inst.node_resources[u])


def _response_time(model: _Model) -> None:
    """Eq. 8-11 by arrival times: t_j >= t_i + D_(i,j) + R_j, r >= t_i."""
    inst, m = model.inst, model.m
    latency = [
        {model.x[i][a]: inst.op_latency_ms(i, pat) for a, pat in enumerate(model.pats[i])}
        for i in range(inst.n_ops)
    ]
    arrival = [m.var(0.0) for _ in range(inst.n_ops)]
    r = m.var(0.0)
    for i in range(inst.n_ops):
        m.row(add({arrival[i]: 1.0}, latency[i].items(), -1.0), lower=0.0)
        m.row({r: 1.0, arrival[i]: -1.0}, lower=0.0)
    for ed in inst.edges:
        delay = m.var(0.0)
        _max_delay(model, ed.src, ed.dst, delay, upstream=True)
        _max_delay(model, ed.dst, ed.src, delay, upstream=False)
        _leave_node(model, ed.src, ed.dst, delay, upstream=True)
        _leave_node(model, ed.dst, ed.src, delay, upstream=False)
        row = add(
            {arrival[ed.dst]: 1.0, arrival[ed.src]: -1.0, delay: -1.0},
            latency[ed.dst].items(),
            -1.0,
        )
        m.row(row, lower=0.0)
    m.objective({r: -inst.utility.r})


def _max_delay(model: _Model, i: int, j: int, delay: int, *, upstream: bool) -> None:
    """Eq. 4: D >= max_{u in U_i} d(u, v) - H_v (1 - o_{j,v}) for every node v of j."""
    inst, m = model.inst, model.m
    far = model.farthest(i, upstream)
    for v in inst.candidates[j]:
        reach = {col: row[v] for col, row in zip(model.x[i], far, strict=True)}
        big = max(reach.values())
        if big <= 0:
            continue
        row = add(add({delay: 1.0}, reach.items(), -1.0), model.on_node(j, v).items(), -big)
        m.row(row, lower=-big)


def _leave_node(model: _Model, i: int, j: int, delay: int, *, upstream: bool) -> None:
    """Valid cut: D >= m_u (o_{i,u} - [j only on u]), m_u the nearest other node of j."""
    inst, m = model.inst, model.m
    for u in inst.candidates[i]:
        others = [
            float(inst.delay_ms[u, v] if upstream else inst.delay_ms[v, u])
            for v in inst.candidates[j]
            if v != u
        ]
        nearest = min(others, default=0.0)
        if nearest <= 0:
            continue
        only_u = {
            model.x[j][b]: nearest
            for b, pat in enumerate(model.pats[j])
            if pat[0][0] == u and len(pat) == 1
        }
        row = add(add({delay: 1.0}, model.on_node(i, u).items(), -nearest), only_u.items())
        m.row(row, lower=0.0)


def _availability(model: _Model) -> None:
    """Eq. 15-16 with z_u >= o_{i,u} and z_(u,v) >= o_{i,u} + o_{j,v} - 1."""
    inst, m = model.inst, model.m
    for u in range(inst.n_nodes):
        if inst.log_a_node[u] == 0.0:
            continue
        z = m.binary()
        m.objective({z: inst.utility.a * inst.log_a_node[u]})
        for i in range(inst.n_ops):
            if u in inst.candidates[i]:
                m.row(add({z: 1.0}, model.on_node(i, u).items(), -1.0), lower=0.0)
    links: dict[tuple[int, int], int] = {}
    for ed in inst.edges:
        for u, v in itertools.product(inst.candidates[ed.src], inst.candidates[ed.dst]):
            if u == v or inst.log_a_link[u, v] == 0.0:
                continue
            if (u, v) not in links:
                links[(u, v)] = m.binary()
                m.objective({links[(u, v)]: inst.utility.a * float(inst.log_a_link[u, v])})
            row = add({links[(u, v)]: 1.0}, model.on_node(ed.src, u).items(), -1.0)
            m.row(add(row, model.on_node(ed.dst, v).items(), -1.0), lower=-1.0)


def _pair_weight(inst: Instance, ed: Edge, u: int, v: int) -> float:
    """Objective weight of one tuple/s sent from u to v: Eq. 14 (cost) and Eq. 18-20 (Z)."""
    util = inst.utility
    weight = util.c * float(inst.link_cost[u, v])
    if u != v:
        d = float(inst.delay_ms[u, v])
        weight += util.z * ed.bytes_per_tuple * {"T": 1.0, "N": d, "EE": d * d}[inst.metric]
    return weight


def _streams(model: _Model, colocation: bool) -> None:
    """Eq. 5, 14, 17-20: lambda sum_{u,v} f_i(u) f_j(v) w_(u,v), linearized through p_{U,v}."""
    inst = model.inst
    for ed in inst.edges:
        weights = {
            (u, v): _pair_weight(inst, ed, u, v)
            for u, v in itertools.product(inst.candidates[ed.src], inst.candidates[ed.dst])
        }
        if not any(weights.values()):
            continue
        uniform = {w for (u, v), w in weights.items() if u != v}
        local = {w for (u, v), w in weights.items() if u == v}
        if colocation and len(uniform) == 1 and local <= {0.0}:  # T, uniform link costs
            _colocation(model, ed, uniform.pop())
        else:
            _transport(model, ed, weights)


def _transport(model: _Model, ed: Edge, weights: dict[tuple[int, int], float]) -> None:
    """p_{U,v} = x_{i,U} f_j(v) for every pattern U of one side and node v of the other."""
    inst, m = model.inst, model.m
    forward = len(model.pats[ed.src]) * len(inst.candidates[ed.dst]) <= len(
        model.pats[ed.dst]
    ) * len(inst.candidates[ed.src])
    side, other = (ed.src, ed.dst) if forward else (ed.dst, ed.src)
    by_node: dict[int, Expr] = {v: {} for v in inst.candidates[other]}
    for a, pat in enumerate(model.pats[side]):
        cols = {v: m.var(0.0, 1.0) for v in inst.candidates[other]}
        m.row(
            add({model.x[side][a]: -1.0}, ((c, 1.0) for c in cols.values())),
            lower=0.0,
            upper=0.0,
        )
        for v, col in cols.items():
            by_node[v][col] = 1.0
            m.objective({col: -ed.rate * _pattern_weight(pat, v, weights, forward)})
    for v, row in by_node.items():
        m.row(add(row, model.share(other, v).items(), -1.0), lower=0.0, upper=0.0)


def _colocation(model: _Model, ed: Edge, weight: float) -> None:
    """Uniform pair weight W (u != v): the term is lambda W (1 - sum_u f_i(u) f_j(u)).

    Only the co-located share q_u = f_i(u) f_j(u) is linearized, by p_{U,u} <= x_{i,U} f_j(u)
    for u in U: sum_{u in U} p_{U,u} <= x_{i,U}, sum_{U contains u} p_{U,u} <= f_j(u). F rewards
    every p, so the LP bound equals that of the full p_{U,v} model with far fewer columns.
    """
    inst, m = model.inst, model.m
    common = set(inst.candidates[ed.src]) & set(inst.candidates[ed.dst])

    def size(i: int) -> int:
        return sum(1 for pat in model.pats[i] for u, _ in pat if u in common)

    side, other = (ed.src, ed.dst) if size(ed.src) <= size(ed.dst) else (ed.dst, ed.src)
    m.offset -= ed.rate * weight
    by_node: dict[int, Expr] = {u: {} for u in common}
    for a, pat in enumerate(model.pats[side]):
        total = sum(c for _, c in pat)
        cols = {u: m.var(0.0, 1.0) for u, _ in pat if u in common}
        if not cols:
            continue
        m.row(add({model.x[side][a]: -1.0}, ((c, 1.0) for c in cols.values())), upper=0.0)
        for u, c in pat:
            if u in cols:
                by_node[u][cols[u]] = 1.0
                m.objective({cols[u]: ed.rate * weight * c / total})
    for u, row in by_node.items():
        if row:
            m.row(add(row, model.share(other, u).items(), -1.0), upper=0.0)


def _pattern_weight(
    pat: Pattern, v: int, weights: dict[tuple[int, int], float], fwd: bool
) -> float:
    """sum_u f_U(u) w_(u,v) (or w_(v,u) when the pattern is downstream)."""
    size = sum(c for _, c in pat)
    return sum(c / size * weights[(u, v) if fwd else (v, u)] for u, c in pat)


def build_compact(inst: Instance, colocation: bool = True) -> _Model:
    """The whole compact model; blocks with a zero weight in F are left out.

    `colocation=False` keeps the full p_{U,v} form on every stream (the tests compare both).
    """
    model = _Model(inst)
    util = inst.utility
    _assignment(model)
    for i in range(inst.n_ops):  # Eq. 13
        model.m.objective(
            {
                model.x[i][a]: -util.c * inst.op_deploy_cost(i, pat)
                for a, pat in enumerate(model.pats[i])
            }
        )
    if util.r:
        _response_time(model)
    if util.a:
        _availability(model)
    if util.c or util.z:
        _streams(model, colocation)
    model.m.offset += util.const
    return model


Relaxation = list[list[tuple[float, Pattern]]]


def relaxed_choice(inst: Instance, time_limit_s: float, model: _Model | None = None) -> Relaxation:
    """The LP relaxation of the compact model: per operator, (x_{i,U}, U) best first."""
    model = model or build_compact(inst)
    res = model.m.solve(time_limit_s, 0.0, relax=True)
    return [
        sorted(
            ((float(res.values[c]), pat) for c, pat in zip(cols, pats, strict=True)),
            key=lambda t: -t[0],
        )
        for cols, pats in zip(model.x, model.pats, strict=True)
    ]
