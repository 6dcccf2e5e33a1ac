"""The planner as one pure function, `plan(request) -> result`, for the CLI and a REST endpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from elastream.placement.evaluator import evaluate, plan_to_names
from elastream.placement.instance import build_instance
from elastream.placement.model import PlacementError, PlanRequest
from elastream.placement.solvers import get_solver

Clock = Callable[[], float]
TOLERANCE = 1e-6


def plan(request: PlanRequest | dict[str, Any], clock: Clock | None = None) -> dict[str, Any]:
    """Solve one ODRP request; a JSON-ready dict (the `elastream plan --json` object).

    `request` may be a PlanRequest or its JSON form (validated here). `clock` (for example
    time.perf_counter) times the solve; without it `solve_s` is the solver's own run time.
    The plan is re-evaluated by the solver-independent evaluator and checked against the
    objective the solver reports.
    """
    req = request if isinstance(request, PlanRequest) else PlanRequest.model_validate(request)
    inst = build_instance(req)
    solver = get_solver(req.solver)
    started = clock() if clock else None
    sol = solver.solve(inst, req.time_limit_s, req.gap)
    elapsed = clock() - started if clock and started is not None else sol.solver_s
    qos = evaluate(inst, sol.plan)
    _check(sol.objective, qos.utility, sol.optimal, req.solver)
    placement = plan_to_names(inst, sol.plan)
    return {
        "replicas": {op: len(nodes) for op, nodes in placement.items()},
        "placement": placement,
        "objective": qos.utility,
        "metrics": qos.as_dict(),
        "solve_s": elapsed,
        "solver": req.solver,
        "status": sol.status,
        "optimal": sol.optimal,
        "gap": sol.gap,
        "bound": sol.bound,
        "variables": sol.n_vars,
        "weights": req.weights.model_dump(),
        "metric": req.metric,
    }


def _check(claimed: float, evaluated: float, optimal: bool, solver: str) -> None:
    """A MILP objective is a lower bound on the plan's F (r >= R); equal at the optimum."""
    scale = max(1.0, abs(evaluated))
    low = evaluated + TOLERANCE * scale < claimed
    high = optimal and claimed + TOLERANCE * scale < evaluated
    if low or high:
        raise PlacementError(
            f"solver {solver!r} claims F = {claimed:.9f} but the evaluator gives {evaluated:.9f}"
        )
