"""The plan the Execute step applies (control/execute.py): host leases, replica placement and
active replica counts."""

from __future__ import annotations

from dataclasses import dataclass, field

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
