"""The Solver interface and what every solver returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from elastream.placement.evaluator import Deployment
from elastream.placement.instance import Instance, Pattern
from elastream.placement.milp import MilpResult


@dataclass(frozen=True)
class Solution:
    """A plan, the objective F the solver claims for it, and how the solve went."""

    solver: str
    plan: Deployment
    objective: float
    optimal: bool
    status: str
    gap: float | None = None  # relative gap to the solver's proven bound (MILP only)
    bound: float | None = None  # proven upper bound on F (MILP only)
    solver_s: float | None = None  # time the solver itself reports (HiGHS run time)
    n_vars: int = 0
    n_binaries: int = 0
    n_rows: int = 0
    evaluations: int = 0  # plans evaluated (heuristic and brute force)


class Solver(Protocol):
    """One way of solving ODRP; `solve` maximizes F (Eq. 21) within a time limit and a gap."""

    name: str

    def solve(self, inst: Instance, time_limit_s: float, gap: float) -> Solution: ...


def chosen_patterns(
    patterns: list[list[Pattern]], x: list[list[int]], values: np.ndarray
) -> Deployment:
    """The plan encoded by binary x_{i,U} columns (one U per operator, Eq. 26)."""
    deps = []
    for pats, cols in zip(patterns, x, strict=True):
        best = max(range(len(cols)), key=lambda k: values[cols[k]])
        deps.append(pats[best])
    return Deployment(tuple(deps))


def milp_solution(solver: str, plan: Deployment, res: MilpResult) -> Solution:
    """A Solution from what HiGHS returned."""
    return Solution(
        solver=solver,
        plan=plan,
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
