"""`static`: a fixed number of replicas per operator (Storm without elasticity)."""

from __future__ import annotations

from dataclasses import dataclass

from elastream.control.policy import POLICIES, Decision, Policy
from elastream.model.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class StaticConfig:
    replicas: int = 1

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {self.replicas}")


def decide(snapshot: Snapshot, state: None, config: StaticConfig) -> tuple[Decision, None]:
    targets = {o.name: config.replicas for o in snapshot.operators}
    return Decision.of(targets, {name: "static" for name in targets}), state


POLICY = POLICIES.register(
    "static", Policy("static", decide, StaticConfig, None, "fixed r per operator")
)
