"""The plan the Execute step applies, always in one order: lease hosts -> place replicas -> set
replica counts (a replica can only be active where a leased host has room for it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from elastream.control.features import Hosts, feature
from elastream.control.policy import Decision


@dataclass(frozen=True, slots=True)
class Lease:
    """Lease `count` new hosts of a kind (count > 0), or release the hosts named in `hosts`
    (count < 0, one name per host released)."""

    host_kind: str
    count: int
    hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.count == 0 or (self.count < 0 and len(self.hosts) != -self.count):
            raise ValueError(
                f"lease of {self.host_kind!r}: count {self.count} with hosts {self.hosts}; "
                "a release names every host it releases, a lease names none"
            )
        if self.count > 0 and self.hosts:
            raise ValueError(f"lease of {self.host_kind!r}: new hosts are named by the engine")


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
