"""`static`: a fixed number of replicas per operator (Storm without elasticity)."""

from __future__ import annotations

from pydantic import Field

from elastream.base.settings import Settings
from elastream.control.policy import POLICIES, Decision, Policy, plural
from elastream.model.snapshot import Snapshot


class StaticConfig(Settings):
    """Options of the static policy."""

    replicas: int = Field(1, ge=1, description="r: active replicas of every operator")


def decide(snapshot: Snapshot, state: None, config: StaticConfig) -> tuple[Decision, None]:
    targets = {o.name: config.replicas for o in snapshot.operators}
    reasons = {name: f"fixed at {plural(n, 'replica')}" for name, n in targets.items()}
    return Decision.of(targets, reasons, {name: "static" for name in targets}), state


POLICY = POLICIES.register(
    "static",
    Policy("static", decide, StaticConfig, None, "fixed r per operator", fast_forward_exact=True),
)
