"""The plan the Execute step applies, always in one order: lease hosts -> place replicas -> set
replica counts (a replica can only be active where a leased host has room for it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from elastream.control.policy import Decision


@dataclass(frozen=True, slots=True)
class Lease:
    """Lease (count > 0) or release (count < 0) hosts of a kind."""

    host_kind: str
    count: int


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the replicas of one operator run: one host name per replica, in replica order."""

    operator: str
    hosts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """One interval's plan: host leases, replica placement, then active replica counts."""

    replicas: Decision
    leases: tuple[Lease, ...] = field(default=())
    placement: tuple[Placement, ...] = field(default=())


class ReplicaEngine(Protocol):
    """What every engine enacts: active replica counts."""

    def enact(self, decision: Decision) -> None: ...


@runtime_checkable
class HostEngine(Protocol):
    """An engine that also leases hosts and places replicas on them."""

    def lease(self, leases: tuple[Lease, ...]) -> None: ...

    def place(self, placement: tuple[Placement, ...]) -> None: ...


def execute(engine: ReplicaEngine, plan: Plan) -> None:
    """Apply `plan` in order: lease hosts -> place replicas -> set replica counts. A plan that
    leases or places on an engine without hosts is an error, never silently dropped."""
    if plan.leases or plan.placement:
        if not isinstance(engine, HostEngine):
            raise TypeError(
                f"{type(engine).__name__} cannot lease hosts or place replicas; "
                "this plan needs an engine with hosts"
            )
        engine.lease(plan.leases)
        engine.place(plan.placement)
    engine.enact(plan.replicas)
