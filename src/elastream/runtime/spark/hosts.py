"""Executors of a standalone cluster as hosts billed per BTU: the `HostProvider` of the Spark
runtime. Lease = one more executor (its boot time measured until it registers); release = a
graceful decommission (running tasks finish, the executor takes no new one, then exits)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

from elastream.config.run import LeasingSettings
from elastream.control.policy import Lease
from elastream.leasing.hosts import (
    Host,
    HostType,
    LeasingError,
    billed_btus,
    lease_cost,
    re_leases,
)
from elastream.leasing.provider import LeaseRecord
from elastream.model.snapshot import HostClock
from elastream.runtime.spark.executors import Executors

NOT_UP = math.inf  # ready_at of a host whose executor has not registered yet


@dataclass(frozen=True)
class LeaseTotals:
    """What the run's leases came to: hosts leased (the first ones included), BTUs paid, cost,
    the mean time from a lease to its executor's registration, s, and the leases within one BTU
    after a released host's paid end (`re_leases`)."""

    hosts_leased: int
    btus_paid: int
    cost: float
    boot_s_mean: float | None
    re_leases: int = 0


class ExecutorHosts:
    """Hosts backed by executors of this Spark application; `now` is the engine's run clock."""

    def __init__(self, executors: Executors, kind: HostType) -> None:
        self.executors = executors
        self.kind = kind
        self.leased: dict[str, Host] = {}
        self.executor_of: dict[str, str] = {}  # host id -> executor id
        self.retired: set[str] = set()  # executor ids decommissioned (they leave a bit later)
        self.finished: list[LeaseRecord] = []
        self.boots: list[float] = []
        self.count = 0

    def adopt(self, hosts: int, timeout_s: float = 120.0, poll_s: float = 0.25) -> None:
        """At start: wait for the cluster's first executors, keep `hosts` of them as hosts
        leased at time 0 and retire the rest (none has run a task yet)."""
        waited = 0.0
        while len(self.executors.ids()) < hosts:
            if waited > timeout_s:
                raise LeasingError(
                    f"{len(self.executors.ids())} of {hosts} executors registered within "
                    f"{timeout_s:.0f} s: is the cluster up and big enough?"
                )
            time.sleep(poll_s)
            waited += poll_s
        live = sorted(self.executors.ids(), key=int)
        self.executors.set_total(hosts)
        for extra in live[hosts:]:
            self.executors.decommission(extra)
            self.retired.add(extra)
        for executor in live[:hosts]:
            host_id = self._new_id()
            self.leased[host_id] = Host(host_id, self.kind, lease_start=0.0, ready_at=0.0)
            self.executor_of[host_id] = executor

    def lease(self, host_id: str, kind: HostType, now: float) -> Host:
        if host_id in self.leased:
            raise LeasingError(f"host {host_id!r} is already leased")
        host = Host(host_id, kind, lease_start=now, ready_at=NOT_UP)
        self.leased[host_id] = host
        self.executors.set_total(len(self.leased))
        return host

    def lease_new(self, now: float) -> Host:
        return self.lease(self._new_id(), self.kind, now)

    def release(self, host_id: str, now: float) -> LeaseRecord:
        host = self.leased.get(host_id)
        if host is None:
            raise LeasingError(f"cannot release unknown host {host_id!r}")
        executor = self.executor_of.pop(host_id, None)
        if executor is None:
            raise LeasingError(f"host {host_id!r} is still booting: release it once it is up")
        del self.leased[host_id]
        self.executors.decommission(executor)
        self.retired.add(executor)
        cost = lease_cost(host.lease_start, now, host.kind)
        record = LeaseRecord(host_id, host.lease_start, now, cost)
        self.finished.append(record)
        return record

    def hosts(self, now: float) -> tuple[Host, ...]:
        self.poll(now)
        return tuple(self.leased.values())

    def poll(self, now: float) -> None:
        """Bind executors that registered since the last poll to the hosts waiting for one."""
        booting = [h for h in self.leased.values() if h.ready_at == NOT_UP]
        if not booting:
            return
        bound = set(self.executor_of.values()) | self.retired
        new = sorted((e for e in self.executors.ids() if e not in bound), key=int)
        for host, executor in zip(booting, new, strict=False):
            self.leased[host.host_id] = replace(host, ready_at=now)
            self.executor_of[host.host_id] = executor
            self.boots.append(now - host.lease_start)

    def spans(self, now: float) -> list[tuple[float, float]]:
        """Every lease's start and end (`now` for those still running)."""
        running = [(h.lease_start, now) for h in self.leased.values()]
        return running + [(r.lease_start, r.end) for r in self.finished]

    def btus(self, now: float, spans: list[tuple[float, float]] | None = None) -> int:
        """BTUs paid so far, the running leases' current ones included (`spans`: the leases'
        spans at `now`, when the caller has them)."""
        spans = self.spans(now) if spans is None else spans
        return sum(billed_btus(start, end, self.kind.btu_s) for start, end in spans)

    def re_leases(self, spans: list[tuple[float, float]]) -> int:
        """Leases (of `spans`, every lease's) that began within one BTU after a released host's
        paid end."""
        released = [(r.lease_start, r.end) for r in self.finished]
        return re_leases(released, [start for start, _ in spans], self.kind.btu_s)

    def totals(self, now: float) -> LeaseTotals:
        spans = self.spans(now)
        btus = self.btus(now, spans)
        boot = sum(self.boots) / len(self.boots) if self.boots else None
        return LeaseTotals(len(spans), btus, btus * self.kind.price, boot, self.re_leases(spans))

    def enact(self, leases: tuple[Lease, ...], now: float) -> None:
        """Execute a plan's leases: the new hosts leased, the hosts named released."""
        for lease in leases:
            for _ in range(max(lease.count, 0)):
                self.lease_new(now)
            for host_id in lease.hosts:
                self.release(host_id, now)

    def clocks(self, now: float) -> dict[str, Any]:
        """A snapshot's host figures: each host's BTU clock, the cost and the re-leases so far."""
        clocks = tuple(
            HostClock(h.host_id, h.ready_at <= now, h.btus_started(now), h.remaining_btu(now))
            for h in self.hosts(now)
        )
        spans = self.spans(now)
        return {
            "hosts": clocks,
            "host_cost": self.btus(now, spans) * self.kind.price,
            "host_re_leases": self.re_leases(spans),
        }

    def run_totals(self, now: float) -> dict[str, Any]:
        """A run's totals of its leases (RunTotals' host fields)."""
        leased = self.totals(now)
        return {
            "hosts_leased": leased.hosts_leased,
            "host_btus": leased.btus_paid,
            "host_cost": leased.cost,
            "host_boot_s": leased.boot_s_mean,
            "host_re_leases": leased.re_leases,
        }

    def _new_id(self) -> str:
        self.count += 1
        return f"executor-host-{self.count}"


def adopt_hosts(executors: Executors, leasing: LeasingSettings) -> ExecutorHosts:
    """The run's hosts at its start: `leasing.min_hosts` of the cluster's executors."""
    kind = HostType(cores=leasing.slots, btu_s=leasing.btu_s, price=leasing.price)
    hosts = ExecutorHosts(executors, kind)
    hosts.adopt(leasing.min_hosts)
    return hosts
