"""A policy bound to its config and to the guard layer: what an engine's MAPE loop calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from elastream.control.guards import GuardConfig, GuardedState, guarded_plan
from elastream.control.policies import POLICIES
from elastream.control.policy import Decision, Plan, Policy
from elastream.model.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Controller:
    """Analyze + Plan of the MAPE loop: a guarded, pure policy."""

    policy: Policy[Any, Any]
    policy_config: Any
    guards: GuardConfig = GuardConfig()

    @classmethod
    def build(
        cls, name: str, options: Mapping[str, Any] | None = None, guards: GuardConfig | None = None
    ) -> Controller:
        policy = POLICIES.get(name)
        return cls(policy, policy.make_config(options), guards or GuardConfig())

    def initial_state(self) -> GuardedState:
        return GuardedState(self.policy.initial_state)

    def plan(self, snapshot: Snapshot, state: GuardedState) -> tuple[Plan, GuardedState]:
        """The guarded policy's plan for this interval (its replica counts guarded)."""
        return guarded_plan(self.policy, snapshot, state, self.policy_config, self.guards)

    def decide(self, snapshot: Snapshot, state: GuardedState) -> tuple[Decision, GuardedState]:
        """The guarded replica counts of `plan`."""
        planned, state = self.plan(snapshot, state)
        return planned.replicas, state

    def messages(self, state: GuardedState) -> int:
        """The coordination messages the policy's agents have sent so far (0: a central one)."""
        count = self.policy.messages
        return 0 if count is None else count(state.policy)

    def close(self, state: GuardedState) -> None:
        """Free what the policy's state holds (e.g. the decentralized agents' transport)."""
        if self.policy.close is not None:
            self.policy.close(state.policy)
