"""The Execute step: a plan applied always in one order: lease hosts -> place replicas -> set
replica counts (a replica can only be active where a leased host has room for it)."""

from __future__ import annotations

from typing import Protocol

from elastream.control.features import Hosts, feature
from elastream.control.policy import Decision, Plan


class ReplicaEngine(Protocol):
    """What every engine enacts: active replica counts; the rest (hosts) is a feature it lists."""

    features: frozenset[type]

    def enact(self, decision: Decision) -> None: ...


def execute(engine: ReplicaEngine, plan: Plan) -> None:
    """Apply `plan` in order: lease hosts -> place replicas -> set replica counts. A plan that
    leases or places on an engine without hosts is an error, never silently dropped."""
    if plan.leases or plan.placement:
        hosts = feature(engine, Hosts)
        if hosts is None:
            raise TypeError(
                f"{type(engine).__name__} cannot lease hosts or place replicas; "
                "this plan needs an engine with hosts"
            )
        hosts.lease(plan.leases)
        hosts.place(plan.placement)
    engine.enact(plan.replicas)
