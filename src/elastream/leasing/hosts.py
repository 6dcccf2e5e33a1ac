"""Hosts billed per BTU (Billing Time Unit): what a lease buys, a leased host, the BTUs it pays."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


class LeasingError(ValueError):
    """An invalid host-layer request; the message names the host, instance or operator."""


@dataclass(frozen=True)
class HostType:
    """What a lease buys: h_cpu (cores x 1024 shares), h_memory, the BTU length and its price."""

    cores: int = 4
    memory_mb: float = 7168.0
    btu_s: float = 3600.0
    price: float = 6.0
    shares_per_core: int = 1024

    def __post_init__(self) -> None:
        if self.cores <= 0 or self.memory_mb <= 0 or self.btu_s <= 0 or self.price < 0:
            raise LeasingError(f"invalid host type {self}")

    @property
    def cpu_shares(self) -> float:
        return float(self.cores * self.shares_per_core)


@dataclass(frozen=True)
class Host:
    """A leased host: its type, the lease start, when it is booted and the images it has cached."""

    host_id: str
    kind: HostType
    lease_start: float
    ready_at: float
    images: frozenset[str] = frozenset()

    def btus_started(self, now: float) -> int:
        """BTUs begun by `now` (at least 1: a lease pays its first BTU up front)."""
        return billed_btus(self.lease_start, now, self.kind.btu_s)

    def btu_end(self, now: float) -> float:
        """End of the BTU running at `now` (h_BTU* = btu_end - now is the paid time left)."""
        return self.lease_start + self.btus_started(now) * self.kind.btu_s

    def remaining_btu(self, now: float) -> float:
        return self.btu_end(now) - now

    def in_release_window(self, now: float, fraction: float) -> bool:
        """True in the last `fraction` of the current BTU (paper: the last 5 %)."""
        return self.remaining_btu(now) <= fraction * self.kind.btu_s


def billed_btus(lease_start: float, end: float, btu_s: float) -> int:
    """Started BTUs of a lease from `lease_start` to `end`: a started BTU is paid in full."""
    if end < lease_start:
        raise LeasingError(f"lease ends ({end}) before it starts ({lease_start})")
    if btu_s <= 0:
        raise LeasingError(f"BTU length must be positive, got {btu_s}")
    return max(1, math.ceil((end - lease_start) / btu_s - 1e-9))


def re_leases(
    released: Sequence[tuple[float, float]], leased: Sequence[float], btu_s: float
) -> int:
    """Leases that began within one BTU after the paid end of a released host (released: its
    lease start and release time; leased: lease starts), each release matched once: a defect,
    since keeping that host would have cost no more and needed no boot."""
    paid_ends = sorted(
        (end, start + billed_btus(start, end, btu_s) * btu_s) for start, end in released
    )
    count = 0
    for start in sorted(leased):
        match = next((r for r in paid_ends if r[0] <= start < r[1] + btu_s), None)
        if match is not None:
            paid_ends.remove(match)
            count += 1
    return count


def lease_cost(lease_start: float, end: float, kind: HostType) -> float:
    """Resource cost of one lease: started BTUs x price per BTU."""
    return billed_btus(lease_start, end, kind.btu_s) * kind.price
