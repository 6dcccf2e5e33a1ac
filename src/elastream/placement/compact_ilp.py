"""The compact exact ODRP ILP as a solver (the formulation: compact_model.py), warm-started
from the heuristic when it finds a plan."""

from __future__ import annotations

from dataclasses import dataclass

from elastream.placement.compact_model import _Model, build_compact, relaxed_choice
from elastream.placement.diagnosis import infeasible
from elastream.placement.heuristic import Heuristic, NoStartError
from elastream.placement.instance import Instance
from elastream.placement.model import InfeasibleError
from elastream.placement.solution import Solution, chosen_patterns, milp_solution


@dataclass(frozen=True)
class CompactIlp:
    """The compact formulation above; same optimum as PaperIlp, a fraction of its columns."""

    name: str = "compact"
    # start HiGHS from the heuristic's plan (its LP rounding reuses this model's relaxation):
    # measured on the paper's instance with the HiGHS options of milp.py, it helps every
    # objective there (see docs/placement.md)
    warm_start: bool = True

    def solve(self, inst: Instance, time_limit_s: float, gap: float) -> Solution:
        model = build_compact(inst)
        start = _start(inst, model, time_limit_s) if self.warm_start else None
        try:
            res = model.m.solve(time_limit_s, gap, start=start)
        except InfeasibleError:
            raise infeasible(inst, self.name, time_limit_s) from None
        plan = chosen_patterns(model.pats, model.x, res.values)
        return milp_solution(self.name, plan, res)


def _start(inst: Instance, model: _Model, time_limit_s: float) -> dict[int, float] | None:
    """The heuristic's plan as x_{i,U} columns; None when it finds none (HiGHS starts cold)."""
    try:
        relaxed = relaxed_choice(inst, time_limit_s, model)
        hint = Heuristic().search(inst, time_limit_s, relaxed).plan
    except (InfeasibleError, NoStartError):  # no start, or an infeasible LP relaxation
        return None
    return {
        col: float(pat == hint.deployments[i])
        for i, (cols, pats) in enumerate(zip(model.x, model.pats, strict=True))
        for col, pat in zip(cols, pats, strict=True)
    }
