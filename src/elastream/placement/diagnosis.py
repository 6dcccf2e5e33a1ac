"""Why an ODRP instance has no plan: the smallest set of operators that cannot be packed."""

from __future__ import annotations

from elastream.placement.instance import Instance
from elastream.placement.milp import Expr, Milp
from elastream.placement.model import InfeasibleError, PlacementError


def packs(inst: Instance, ops: list[int], time_limit_s: float) -> bool | None:
    """Whether the operators `ops` fit the nodes with their minimum replicas (Eq. 23, 26).

    Eq. 23 and 26 are the only hard constraints of ODRP (R, A, C and Z are objectives), and
    fewer replicas never need more room, so a plan exists iff this packing does. None: HiGHS
    neither found a packing nor proved there is none within the time limit.
    """
    m = Milp()
    use: dict[int, Expr] = {}
    for i in ops:
        res = inst.op_resources[i]
        placed: Expr = {}
        for u in inst.candidates[i]:
            room = int(inst.node_resources[u] // res + 1e-9)
            if room:
                col = m.var(0.0, float(min(room, inst.min_replicas[i])), integer=True)
                placed[col] = 1.0
                use.setdefault(u, {})[col] = res
        if not placed:
            return False
        m.row(placed, lower=inst.min_replicas[i], upper=inst.min_replicas[i])
    for u, row in use.items():
        m.row(row, upper=inst.node_resources[u])
    try:
        m.solve(time_limit_s, 0.0)
    except InfeasibleError:
        return False
    except PlacementError:
        return None
    return True


def conflict(inst: Instance, time_limit_s: float) -> list[int]:
    """A set of operators that cannot be placed together while every proper subset can
    (deletion filter); the whole set when a check runs out of time."""
    kept = list(range(inst.n_ops))
    for i in sorted(kept, key=lambda i: (len(inst.candidates[i]) == 1, i)):
        rest = [j for j in kept if j != i]
        if rest and packs(inst, rest, time_limit_s) is False:
            kept = rest
    return kept


def _units(inst: Instance, i: int) -> str:
    return f"{inst.min_replicas[i]} x {inst.op_resources[i]:g}"


def explain(inst: Instance, ops: list[int]) -> str:
    """Which operator cannot be placed, beside which others, and which resource is short."""
    names = inst.node_names
    nodes = sorted({u for i in ops for u in inst.candidates[i]})
    offer = sum(inst.node_resources[u] for u in nodes)
    need = sum(inst.min_replicas[i] * inst.op_resources[i] for i in ops)
    where = ", ".join(f"{names[u]} ({inst.node_resources[u]:g})" for u in nodes)
    # the operator named as the one left without room: the largest that is not pinned
    free = [i for i in ops if len(inst.candidates[i]) > 1] or ops
    last = max(free, key=lambda i: (inst.op_resources[i], i))
    others = [inst.op_names[i] for i in ops if i != last]
    demand = " + ".join(_units(inst, i) for i in ops)
    head = f"operator {inst.op_names[last]!r} cannot be placed"
    if others:
        head += " beside " + ", ".join(repr(n) for n in others)
    if need > offer + 1e-9:
        short = f"{need - offer:g} resource units short"
    else:
        cand = ", ".join(names[u] for u in inst.candidates[last])
        short = (
            f"enough in total, but every placement of the others leaves no node among {cand} "
            f"with {inst.op_resources[last]:g} units free for a replica of {inst.op_names[last]!r}"
        )
    return (
        f"{head}: they need {demand} = {need:g} resource units (replicas x units) on "
        f"nodes {where}, which offer {offer:g}: {short}"
    )


def infeasible(inst: Instance, solver: str, time_limit_s: float) -> InfeasibleError:
    """The error for an instance `solver` proved has no plan, with the reason."""
    if packs(inst, list(range(inst.n_ops)), time_limit_s):
        raise PlacementError(f"{solver}: reported no plan, yet the operators fit the nodes")
    reason = explain(inst, conflict(inst, time_limit_s))
    return InfeasibleError(f"{solver}: no replication and placement fits the nodes: {reason}")
