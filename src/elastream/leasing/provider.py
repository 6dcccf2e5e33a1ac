"""The HostProvider interface (lease / release / list) and an in-memory provider."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from elastream.leasing.hosts import Host, HostType, LeasingError, lease_cost


@dataclass(frozen=True)
class LeaseRecord:
    """A finished lease and what it cost (started BTUs x price)."""

    host_id: str
    lease_start: float
    end: float
    cost: float


@runtime_checkable
class HostProvider(Protocol):
    """Where hosts come from. Time is a parameter, so a provider can be driven by a simulator, by a
    wall clock in an I/O module, or by a test. Implementations: `InMemoryProvider` (here); the
    Spark standalone executor provider and a cloud provider are described in docs/leasing.md."""

    def lease(self, host_id: str, kind: HostType, now: float) -> Host:
        """Start leasing a host of `kind`; it is paid one BTU at once and usable at `ready_at`."""
        ...

    def release(self, host_id: str, now: float) -> LeaseRecord:
        """Stop leasing a host (its instances must be gone); returns the lease's total cost."""
        ...

    def hosts(self, now: float) -> tuple[Host, ...]:
        """The hosts leased at `now`."""
        ...


@dataclass
class InMemoryProvider:
    """A provider whose hosts exist only in memory: boot takes `boot_s`, nothing can fail."""

    boot_s: float = 0.0
    leased: dict[str, Host] = field(default_factory=dict)
    finished: list[LeaseRecord] = field(default_factory=list)

    def lease(self, host_id: str, kind: HostType, now: float) -> Host:
        if host_id in self.leased:
            raise LeasingError(f"host {host_id!r} is already leased")
        host = Host(host_id, kind, lease_start=now, ready_at=now + self.boot_s)
        self.leased[host_id] = host
        return host

    def release(self, host_id: str, now: float) -> LeaseRecord:
        if host_id not in self.leased:
            raise LeasingError(f"cannot release unknown host {host_id!r}")
        host = self.leased.pop(host_id)
        record = LeaseRecord(
            host_id, host.lease_start, now, lease_cost(host.lease_start, now, host.kind)
        )
        self.finished.append(record)
        return record

    def hosts(self, now: float) -> tuple[Host, ...]:
        return tuple(replace(h) for h in self.leased.values() if h.lease_start <= now)

    def cost(self, now: float) -> float:
        """Cost so far: finished leases plus the BTUs started by the running ones."""
        running = sum(lease_cost(h.lease_start, now, h.kind) for h in self.leased.values())
        return running + sum(r.cost for r in self.finished)
