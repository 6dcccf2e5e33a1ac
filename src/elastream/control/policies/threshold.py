"""`threshold`: the queue-threshold baseline of Hochreiner et al. (seed 004, section "Baseline").

Up one replica when the queue exceeds `upper` (their scalingThreshold, 50 items), up two when it
exceeds `upper_double` (250 items), down one when it falls below `lower` (1 item, i.e. empty)."""

from __future__ import annotations

from pydantic import Field, model_validator

from elastream.base.settings import Settings
from elastream.control.policy import POLICIES, Decision, Policy
from elastream.model.snapshot import Snapshot


class ThresholdConfig(Settings):
    """Options of the threshold policy (seed 004's baseline)."""

    upper: int = Field(50, ge=0, description="scale up by one above this queue length")
    upper_double: int = Field(250, ge=0, description="scale up by two above this queue length")
    lower: int = Field(1, ge=0, description="scale down by one below this queue length")

    @model_validator(mode="after")
    def _ordered(self) -> ThresholdConfig:
        if not self.lower <= self.upper <= self.upper_double:
            raise ValueError("thresholds must satisfy 0 <= lower <= upper <= upper_double")
        return self


def step_for(queue: int, config: ThresholdConfig) -> int:
    if queue > config.upper_double:
        return 2
    if queue > config.upper:
        return 1
    if queue < config.lower:
        return -1
    return 0


def decide(snapshot: Snapshot, state: None, config: ThresholdConfig) -> tuple[Decision, None]:
    targets, reasons, details = {}, {}, {}
    for o in snapshot.operators:
        step = step_for(o.queue, config)
        targets[o.name] = o.replicas + step
        reasons[o.name] = threshold_reason(o.queue, step, config)
        details[o.name] = f"queue={o.queue} step={step:+d}"
    return Decision.of(targets, reasons, details), state


def threshold_reason(queue: int, step: int, config: ThresholdConfig) -> str:
    """'queue 120 above 100: one replica more', in words."""
    if step == 2:
        return f"queue {queue:,} above {config.upper_double:,}: two replicas more"
    if step == 1:
        return f"queue {queue:,} above {config.upper:,}: one replica more"
    if step == -1:
        return f"queue {queue:,} below {config.lower:,}: one replica less"
    return f"queue {queue:,} within {config.lower:,}–{config.upper:,}: no change"


POLICY = POLICIES.register(
    "threshold",
    Policy(
        "threshold",
        decide,
        ThresholdConfig,
        None,
        "queue thresholds 50/250 up, empty down",
        fast_forward_exact=True,
    ),
)
