"""The ODRP planner mounted on the modelling service: POST /plans/odrp runs the same `plan` as
`elastream plan --json` (joint replication and placement, re-checked by the evaluator)."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from elastream.placement.model import PlanRequest
from elastream.placement.service import plan
from elastream.service.app import Planner
from elastream.service.operations import Modeller


class PlanResult(BaseModel):
    """One ODRP solution, as `elastream plan --json` prints it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replicas: dict[str, int] = Field(..., description="operator -> replicas")
    placement: dict[str, list[str]] = Field(..., description="operator -> node of each replica")
    objective: float = Field(..., description="the utility F of Eq. 21")
    metrics: dict[str, float] = Field(..., description="R, C, A, T, N, EE (Eq. 8-20)")
    solve_s: float = Field(..., description="solve time, seconds")
    solver: str = Field(..., description="exact, compact, heuristic or brute")
    status: str = Field(..., description="the solver's status")
    optimal: bool = Field(..., description="proven optimal within the gap")
    gap: float | None = Field(..., description="relative gap at the end (MILP solvers)")
    bound: float | None = Field(..., description="the solver's bound on F")
    variables: int = Field(..., description="variables of the model solved")
    weights: dict[str, float] = Field(..., description="the SAW weights used")
    metric: str = Field(..., description="network metric Z used (T, N or EE)")


def run_odrp(modeller: Modeller, request: BaseModel) -> PlanResult:
    """Solve (the history is not needed: the request carries the rates it plans for)."""
    assert isinstance(request, PlanRequest)
    return PlanResult(**plan(request, clock=time.perf_counter))


ODRP = Planner(
    name="odrp",
    description="optimal replication and placement (ODRP, Eq. 22-32) for weighted QoS",
    request=PlanRequest,
    response=PlanResult,
    run=run_odrp,
)
