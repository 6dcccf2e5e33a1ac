"""The registry of ODRP solvers behind the one `Solver` interface."""

from __future__ import annotations

from elastream.placement.brute import BruteForce
from elastream.placement.compact_ilp import CompactIlp
from elastream.placement.heuristic import Heuristic
from elastream.placement.model import PlacementError
from elastream.placement.paper_ilp import PaperIlp
from elastream.placement.solution import Solver

SOLVERS: dict[str, Solver] = {
    s.name: s for s in (PaperIlp(), CompactIlp(), Heuristic(), BruteForce())
}


def get_solver(name: str) -> Solver:
    if name not in SOLVERS:
        raise PlacementError(f"unknown solver {name!r}: use one of {', '.join(SOLVERS)}")
    return SOLVERS[name]
