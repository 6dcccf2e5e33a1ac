"""The `objective` policy's settings (each with its equation in docs/objective.md) and state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from elastream.base.settings import Settings
from elastream.control.flow import (
    FlowState,
)
from elastream.model.objective import Objective
from elastream.model.pipeline import DEFAULT_ET_S
from elastream.prediction.forecasting import get_forecaster


class ObjectiveConfig(Settings):
    """Options of the objective policy."""

    objective: Objective | None = Field(
        None, description="the latency objective (default: the run's `objective`)"
    )
    forecaster: str = Field("holt", description="forecast model of the modelling registry")
    forecaster_params: dict[str, Any] = Field(
        default_factory=dict, description="the forecaster's own parameters (docs/modeling.md)"
    )
    bound: Literal["auto", "errors", "upper", "point"] = Field(
        "auto",
        description="plan for the point forecast widened by its measured errors (O18), the "
        "forecaster's prediction interval's upper edge, the point forecast, or `auto`: the point "
        "when the next decision acts within (1 − m)·bound, else the measured errors (O17)",
    )
    level: float = Field(
        0.98, gt=0, lt=1, description="coverage of the forecaster's prediction interval (O1)"
    )
    error_level: float = Field(
        0.995,
        gt=0,
        lt=1,
        description="share of the measured one-step forecast errors the plan covers (O18)",
    )
    error_window_s: float = Field(
        3600.0, gt=0, description="seconds of one-step forecast errors kept (O18)"
    )
    history_s: float = Field(
        600.0,
        gt=0,
        description="seconds of source-rate history fitted; O18's errors and O19's cap X_p "
        "come from it",
    )
    min_history: int = Field(4, ge=2, description="intervals before forecasting (before: x_p(t))")
    actuation_s: float = Field(
        0.0, ge=0, description="a: time a replica change takes to act, s (O3, lookahead td + a)"
    )
    scale_in_horizon_s: float | None = Field(
        None, gt=0, description="A_in: a scale-in must hold over this forecast horizon (None: 3·td)"
    )
    margin: float = Field(
        0.3, ge=0, lt=1, description="m: a scale-in must keep the latency under (1 − m)·bound"
    )
    overhead_s: float = Field(
        0.0, ge=0, description="h: fixed latency of every path (engine batching, network), s"
    )
    burst_window: int = Field(
        5, ge=1, description="intervals over which the largest burst factor β is kept (O8)"
    )
    burst_floor: float | None = Field(
        None,
        ge=0,
        le=1,
        description="f: β is calibrated only on a measured latency of at least f·(B − h) "
        "(O16; 0: on every interval; None: 1 − m, a latency that ate the scale-in margin)",
    )
    spread_window: int = Field(
        10, ge=1, description="intervals over which the largest batch spread φ is kept (O15)"
    )
    burst_after_change: bool = Field(
        False,
        description="also calibrate β on an interval whose replica counts had just changed "
        "(its latency then shows the change, not the arrivals)",
    )
    burst_max: float = Field(
        4.0, ge=1, description="largest burst factor β the calibration may find (O8)"
    )
    resolution_s: float = Field(
        0.1,
        ge=0,
        description="ε: a measured latency within this of the model's is explained (β = 1, O8): "
        "the measurement's resolution (the simulator's step), not a burst",
    )
    transient: bool = Field(
        True,
        description="cap the stationary wait by the wait a queue builds within the next td + a "
        "(O11); off: a count below the planned rate is never taken",
    )
    batch_per_task_s: float | None = Field(
        None,
        ge=0,
        description="b: micro-batch time each task (active replica) adds, s (O12); None: "
        "learned from the snapshots' micro-batches (O13)",
    )
    batch_cap_s: float = Field(
        1.0,
        gt=0,
        description="c: the most work one share of a micro-batch admits, s (O12; Spark's "
        "`spark.batch_s`)",
    )
    batch_prior_s: float = Field(
        0.03, ge=0, description="b₀: the per-task batch cost assumed until R varies (O13), s"
    )
    batch_prior_weight: float = Field(
        8.0, ge=0, description="w: the weight of b₀ in the O13 fit, in tasks² (0: plain OLS)"
    )
    batch_window: int = Field(
        60, ge=2, description="intervals of measured micro-batches the O13 fit keeps"
    )
    hop_batches: float = Field(
        1.0,
        gt=0,
        description="η: micro-batches an event takes per operator (O6): 1 in Spark's `pipeline` "
        "layout; about 1.5 with a query per operator (`operator` layout, the simulator's "
        "micro_batch model), where it also waits for the next query's batch",
    )
    et_default_s: float = Field(
        DEFAULT_ET_S, gt=0, description="1 / ρ before any rate is measured, s"
    )

    @model_validator(mode="after")
    def _needs_objective(self) -> ObjectiveConfig:
        if self.objective is None:
            raise ValueError(
                "objective: missing; set `objective: {latency_p99_s: ...}` in the run settings"
            )
        get_forecaster(self.forecaster)  # an unknown model is named at once
        return self

    @property
    def target(self) -> Objective:
        assert self.objective is not None  # the validator guarantees it
        return self.objective

    @property
    def floor(self) -> float:
        """f of O16: `burst_floor`, or 1 − m when unset."""
        return 1 - self.margin if self.burst_floor is None else self.burst_floor


@dataclass(frozen=True, slots=True)
class ObjectiveState:
    flow: FlowState = FlowState()
    history: tuple[tuple[str, tuple[float, ...]], ...] = field(default=())
    queues: tuple[tuple[tuple[str, int], ...], ...] = field(default=())  # q_i(t − n … t − 1)
    bursts: tuple[float, ...] = field(default=())  # β of the last intervals (O8)
    spreads: tuple[float, ...] = field(default=())  # φ of the last intervals (O15)
    replicas: tuple[tuple[str, int], ...] = field(default=())  # r_i during t − 1
    batches: tuple[tuple[int, float], ...] = field(default=())  # (R(t), o(t)) of O13
    forecasts: tuple[tuple[str, float], ...] = field(default=())  # F_p(t | t − 1) of O18
    errors: tuple[tuple[str, tuple[float, ...]], ...] = field(default=())  # e_p of O18
