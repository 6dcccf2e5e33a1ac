"""A small sparse MILP builder solved with HiGHS (`highspy`): time limit and relative gap."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from elastream.base.extras import require
from elastream.placement.model import InfeasibleError, PlacementError

if TYPE_CHECKING:
    import highspy

Expr = dict[int, float]  # column -> coefficient
INF = math.inf  # what highspy.kHighsInf is


def _highs() -> ModuleType:
    """highspy, or an error naming the `placement` extra."""
    return require("highspy", extra="placement", feature="placement (the HiGHS MILP solver)")


_banner_shown = False


def _new_highs() -> highspy.Highs:
    """A HiGHS instance. HiGHS prints its banner to the C-level stdout on the first one of the
    process; that one is made with stdout pointed at stderr, so `plan --json` keeps stdout JSON."""
    global _banner_shown
    highspy = _highs()
    if _banner_shown:
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        _banner_shown = True


@dataclass(frozen=True)
class MilpResult:
    """What HiGHS returned for one model."""

    status: str
    values: np.ndarray
    objective: float
    dual_bound: float
    gap: float
    run_s: float
    n_vars: int
    n_binaries: int
    n_rows: int

    @property
    def optimal(self) -> bool:
        return self.status == "Optimal"


def add(expr: Expr, terms: Iterable[tuple[int, float]], scale: float = 1.0) -> Expr:
    """expr += scale * terms (in place); returns expr."""
    for col, coef in terms:
        expr[col] = expr.get(col, 0.0) + scale * coef
    return expr


class Milp:
    """Columns, rows and a maximized objective with a constant offset."""

    def __init__(self) -> None:
        self._lower: list[float] = []
        self._upper: list[float] = []
        self._integer: list[bool] = []
        self._cost: list[float] = []
        self._rows: list[tuple[Expr, float, float]] = []
        self.offset = 0.0

    @property
    def n_vars(self) -> int:
        return len(self._cost)

    def var(self, lower: float = 0.0, upper: float = INF, *, integer: bool = False) -> int:
        self._lower.append(lower)
        self._upper.append(upper)
        self._integer.append(integer)
        self._cost.append(0.0)
        return len(self._cost) - 1

    def binary(self) -> int:
        return self.var(0.0, 1.0, integer=True)

    def objective(self, expr: Expr, scale: float = 1.0) -> None:
        """Add scale * expr to the maximized objective."""
        for col, coef in expr.items():
            self._cost[col] += scale * coef

    def row(self, expr: Expr, lower: float = -INF, upper: float = INF) -> None:
        self._rows.append((expr, lower, upper))

    def solve(
        self,
        time_limit_s: float,
        gap: float,
        *,
        relax: bool = False,
        start: dict[int, float] | None = None,
    ) -> MilpResult:
        """Maximize with HiGHS (the LP relaxation if `relax`); raise when there is no solution.
        A `start` whose run reports an objective its own solution does not have is not trusted
        (HiGHS 1.16 does this after a partial start: its incumbent's value and the dual bound
        both wrong, so it stops at the root claiming optimality): the model is solved again
        without it."""
        lp = self._lp(relax)
        highs = _run(lp, time_limit_s, gap, start)
        if start and not _objective_is_consistent(highs, lp):
            highs = _run(lp, time_limit_s, gap, None)
        status = highs.modelStatusToString(highs.getModelStatus())
        if status in ("Infeasible", "Primal infeasible or unbounded"):
            raise InfeasibleError("no replication and placement satisfies the constraints")
        info = highs.getInfo()
        if info.primal_solution_status != 2 and not (relax and status == "Optimal"):
            raise PlacementError(f"HiGHS found no plan within {time_limit_s:g} s ({status})")
        return MilpResult(
            status=status,
            values=np.array(highs.getSolution().col_value),
            objective=float(info.objective_function_value),
            dual_bound=float(info.mip_dual_bound),
            gap=float(info.mip_gap),
            run_s=float(highs.getRunTime()),
            n_vars=self.n_vars,
            n_binaries=sum(self._integer),
            n_rows=len(self._rows),
        )

    def _lp(self, relax: bool) -> highspy.HighsLp:
        """The model as HiGHS' LP structure, rows as a row-wise sparse matrix."""
        highspy = _highs()
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = self.n_vars, len(self._rows)
        lp.col_cost_ = np.array(self._cost)
        lp.col_lower_, lp.col_upper_ = np.array(self._lower), np.array(self._upper)
        lp.row_lower_ = np.array([r[1] for r in self._rows])
        lp.row_upper_ = np.array([r[2] for r in self._rows])
        starts, index, value = [0], [], []
        for expr, _, _ in self._rows:
            for col, coef in expr.items():
                if coef != 0.0:
                    index.append(col)
                    value.append(coef)
            starts.append(len(index))
        matrix = lp.a_matrix_
        matrix.format_ = highspy.MatrixFormat.kRowwise
        matrix.num_col_, matrix.num_row_ = self.n_vars, len(self._rows)
        matrix.start_ = np.array(starts, dtype=np.int32)
        matrix.index_ = np.array(index, dtype=np.int32)
        matrix.value_ = np.array(value, dtype=float)
        kinds = highspy.HighsVarType
        lp.integrality_ = [
            kinds.kInteger if i and not relax else kinds.kContinuous for i in self._integer
        ]
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.offset_ = self.offset
        return lp


def _run(
    lp: highspy.HighsLp, time_limit_s: float, gap: float, start: dict[int, float] | None
) -> highspy.Highs:
    """One HiGHS run of `lp`, from `start` if given (HiGHS completes the other columns)."""
    highs = _new_highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("time_limit", float(time_limit_s))
    highs.setOptionValue("mip_rel_gap", float(gap))
    highs.setOptionValue("threads", 1)
    highs.setOptionValue("random_seed", 0)
    # measured on the paper's instance (benchmarks/placement_speed.py): each of these
    # slows the root of the ODRP models down, whose proof is the bulk of the solve
    highs.setOptionValue("mip_heuristic_run_rins", False)
    highs.setOptionValue("mip_heuristic_run_rens", False)
    highs.setOptionValue("mip_heuristic_run_root_reduced_cost", False)
    highs.setOptionValue("mip_allow_restart", False)
    highs.setOptionValue("mip_pscost_minreliable", 0)  # no strong branching
    highs.passModel(lp)
    if start:
        cols = np.array(sorted(start), dtype=np.int32)
        highs.setSolution(len(cols), cols, np.array([start[c] for c in cols]))
    highs.run()
    return highs


def _objective_is_consistent(highs: highspy.Highs, lp: highspy.HighsLp) -> bool:
    """Whether the objective HiGHS reports is that of the solution it returns."""
    if highs.getInfo().primal_solution_status != 2:
        return True  # no solution to check
    values = np.array(highs.getSolution().col_value)
    own = lp.offset_ + float(np.asarray(lp.col_cost_) @ values)
    reported = highs.getInfo().objective_function_value
    return abs(own - reported) <= 1e-7 * max(1.0, abs(own))
