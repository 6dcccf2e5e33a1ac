"""`threshold`: the queue-threshold baseline of Hochreiner et al. (seed 004, section "Baseline").

Up one replica when the queue exceeds `upper` (their scalingThreshold, 50 items), up two when it
exceeds `upper_double` (250 items), down one when it falls below `lower` (1 item, i.e. empty)."""

from __future__ import annotations

from dataclasses import dataclass

from elastream.control.policy import POLICIES, Decision, Policy
from elastream.model.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class ThresholdConfig:
    upper: int = 50
    upper_double: int = 250
    lower: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.lower <= self.upper <= self.upper_double:
            raise ValueError("thresholds must satisfy 0 <= lower <= upper <= upper_double")


def step_for(queue: int, config: ThresholdConfig) -> int:
    if queue > config.upper_double:
        return 2
    if queue > config.upper:
        return 1
    if queue < config.lower:
        return -1
    return 0


def decide(snapshot: Snapshot, state: None, config: ThresholdConfig) -> tuple[Decision, None]:
    targets, reasons = {}, {}
    for o in snapshot.operators:
        step = step_for(o.queue, config)
        targets[o.name] = o.replicas + step
        reasons[o.name] = f"queue={o.queue} step={step:+d}"
    return Decision.of(targets, reasons), state


POLICY = POLICIES.register(
    "threshold",
    Policy("threshold", decide, ThresholdConfig, None, "queue thresholds 50/250 up, empty down"),
)
