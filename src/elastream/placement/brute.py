"""Brute-force ODRP: evaluate every combination of deployments (small instances only)."""

from __future__ import annotations

import itertools
import math

from elastream.placement.diagnosis import infeasible
from elastream.placement.evaluator import Deployment, evaluate
from elastream.placement.instance import Instance
from elastream.placement.model import PlacementError
from elastream.placement.solution import Solution

MAX_COMBINATIONS = 2_000_000


class BruteForce:
    """Enumerates P(V_res^1; k_1) x ... x P(V_res^n; k_n); keeps the best feasible F."""

    name = "brute"

    def solve(self, inst: Instance, time_limit_s: float, gap: float) -> Solution:
        pats = [inst.patterns(i) for i in range(inst.n_ops)]
        total = math.prod(len(p) for p in pats)
        if total > MAX_COMBINATIONS:
            raise PlacementError(f"{total} combinations: too many for brute force")
        best: tuple[float, Deployment] | None = None
        count = 0
        for combo in itertools.product(*pats):
            if not _fits(inst, combo):
                continue
            plan = Deployment(tuple(combo))
            value = evaluate(inst, plan).utility
            count += 1
            if best is None or value > best[0]:
                best = (value, plan)
        if best is None:
            raise infeasible(inst, self.name, time_limit_s)
        return Solution(self.name, best[1], best[0], True, "Optimal", evaluations=count)


def _fits(inst: Instance, combo: tuple) -> bool:
    """Eq. 23 for one combination."""
    used = [0.0] * inst.n_nodes
    for i, pat in enumerate(combo):
        for u, c in pat:
            used[u] += c * inst.op_resources[i]
    return all(a <= r + 1e-9 for a, r in zip(used, inst.node_resources, strict=True))
