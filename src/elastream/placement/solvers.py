"""The registry of ODRP solvers behind the one `Solver` interface."""

from __future__ import annotations

from elastream.base.registry import Registry, UnknownNameError
from elastream.placement.brute import BruteForce
from elastream.placement.compact_ilp import CompactIlp
from elastream.placement.heuristic import Heuristic
from elastream.placement.model import PlacementError
from elastream.placement.paper_ilp import PaperIlp
from elastream.placement.solution import Solver

SOLVERS: Registry[Solver] = Registry("solver")
for _solver in (PaperIlp(), CompactIlp(), Heuristic(), BruteForce()):
    SOLVERS.register(_solver.name, _solver)


def get_solver(name: str) -> Solver:
    try:
        return SOLVERS.get(name)
    except UnknownNameError as exc:
        raise PlacementError(str(exc)) from None
