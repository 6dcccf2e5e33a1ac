"""Hosts under the replicas when a replica is a task slot on a leased host (Spark executors):
lease when a decision needs more slots than the leased hosts give, release a host only in the
last part of its BTU and only if the others hold the decision (or would have held every
decision of the BTU before, or will hold the next BTU's by the lulls seen), cap the replicas at
the slots of the hosts that are up. Pure: time comes as `now`, hosts as values; the decisions
of the last BTUs are the stage's record."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from elastream.control.features import LeasedHosts, feature
from elastream.control.mape import Engine
from elastream.control.policy import Decision, Lease, Plan
from elastream.leasing.hosts import Host, HostType
from elastream.leasing.needs import NeedRecord
from elastream.model.snapshot import Snapshot

EXECUTOR = "executor"  # the one host kind of a slot-leased engine
ReleaseRule = Literal["last_btu", "lulls", "now"]


@dataclass
class SlotHosts:
    """Leasing hosts of one kind whose `kind.cores` slots each run one replica at a time.

    A host is released only inside the last `release_window` of its current BTU (VISP,
    Hochreiner et al., PeerJ CS 2017, Fig. 5) — it is paid until then anyway — and, by the `now`
    rule (VISP's), only when the hosts that stay hold this interval's decision. By
    the `last_btu` rule, only when they held every interval's decision over the BTU before:
    keeping the host pays one more BTU, releasing it pays a new BTU and a boot if the load comes
    back within the next one, so the next BTU is forecast by the last (issue 41, item 2); no host
    is released before one BTU of decisions is recorded. By the `lulls` rule (the default), only
    when the lulls seen say the hosts that stay will hold the need for the rest of the window
    and the next BTU (`NeedRecord.lulls_allow`): after a step down from a level, in the new
    lull's first window when the lulls seen outlast that window and the next BTU (as VISP's); on
    bursts that come back within a BTU it keeps, as `last_btu`; a dip of one interval is weighed
    only while the current lull is younger than the dip was long.
    Otherwise the host is kept for another BTU. The window is never narrower than one control
    interval: a narrower one can fall between two intervals' ends in every BTU (a 3-s window,
    5-s intervals, a 60-s BTU), and the host is then never released."""

    kind: HostType
    min_hosts: int = 1
    max_hosts: int = 4
    release_window: float = 0.05
    release: ReleaseRule = "lulls"
    record: NeedRecord = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.min_hosts <= self.max_hosts:
            raise ValueError(
                f"hosts: need 1 <= min_hosts <= max_hosts, got {self.min_hosts}, {self.max_hosts}"
            )
        if not 0 < self.release_window <= 1:
            raise ValueError(f"hosts: release_window must be in (0, 1], got {self.release_window}")
        self.record = NeedRecord(self.kind.btu_s)

    def begin(self, engine: Engine) -> Plan | None:
        """A plan stage (control/mape.py): the engine must lease hosts; nothing to enact yet; the
        record of needs starts empty."""
        leased_hosts(engine)
        self.record = NeedRecord(self.kind.btu_s)
        return None

    def refine(self, plan: Plan, snapshot: Snapshot, engine: Engine) -> Plan:
        """The policy's plan on the engine's leased hosts (`plan` below), a release leaving the
        hosts the stage's rule keeps (`kept`)."""
        floors = {op.name: op.replicas.min for op in engine.pipeline.operators}
        hosts = leased_hosts(engine).hosts()
        kept = self.kept(plan.replicas, snapshot, len(hosts))
        return self.plan(plan.replicas, hosts, snapshot.t, floors, snapshot.interval_s, kept)

    def kept(self, decision: Decision, snapshot: Snapshot, hosts: int) -> int | None:
        """The hosts a release must leave by the stage's rule, the decision's need recorded
        first (None by the `now` rule: the hosts this decision needs, which `plan` counts)."""
        if self.release == "now":
            return None
        need = self.needed(decision)
        self.record.add(snapshot.t, snapshot.interval_s, need)
        if self.release == "last_btu":
            peak = self.record.peak(snapshot.t)
            return hosts if peak is None else peak
        # `lulls`: a host in its window has at most the window left, then prolonging pays a BTU
        rest = max(self.release_window * self.kind.btu_s, snapshot.interval_s)
        horizon = rest + self.kind.btu_s
        allowed = (k for k in range(need, hosts) if self.record.lulls_allow(snapshot.t, k, horizon))
        return next(allowed, hosts)

    def needed(self, decision: Decision) -> int:
        """Hosts whose slots hold the decision's replicas, within [min_hosts, max_hosts]."""
        replicas = sum(r for _, r in decision.replicas)
        return min(max(math.ceil(replicas / self.kind.cores), self.min_hosts), self.max_hosts)

    def plan(
        self,
        decision: Decision,
        hosts: Sequence[Host],
        now: float,
        floors: Mapping[str, int],
        interval_s: float = 0.0,
        kept: int | None = None,
    ) -> Plan:
        """The interval's plan: leases and releases, then the decision capped at the slots of
        the hosts that are up (booting hosts give none yet); no operator goes below its floor.
        `interval_s` is the control interval: the release window is at least that wide. `kept`
        is the hosts a release must leave (the release rule's forecast; None: the hosts this
        decision needs, VISP's rule)."""
        need = self.needed(decision)
        leases: list[Lease] = []
        if need > len(hosts):
            leases.append(Lease(EXECUTOR, need - len(hosts)))
        stay = need if kept is None else max(kept, need)
        released = self.releasable(hosts, now, len(hosts) - stay, interval_s)
        if released:
            leases.append(Lease(EXECUTOR, -len(released), released))
        up = sum(1 for h in hosts if h.ready_at <= now and h.host_id not in released)
        return Plan(fit(decision, up * self.kind.cores, floors), tuple(leases))

    def releasable(
        self, hosts: Sequence[Host], now: float, surplus: int, interval_s: float = 0.0
    ) -> tuple[str, ...]:
        """Up to `surplus` hosts that are up and inside their release window, the one whose BTU
        ends first first."""
        if surplus <= 0:
            return ()
        due = [h for h in hosts if h.ready_at <= now and self.in_window(h, now, interval_s)]
        due.sort(key=lambda h: (h.btu_end(now), h.host_id))
        return tuple(h.host_id for h in due[:surplus])

    def in_window(self, host: Host, now: float, interval_s: float = 0.0) -> bool:
        """In the last `release_window` of the host's BTU, or in the last interval before the BTU
        ends when an interval is the wider of the two (the last check before the next BTU)."""
        return host.in_release_window(now, self.release_window) or (
            host.remaining_btu(now) <= interval_s
        )


def leased_hosts(engine: Engine) -> LeasedHosts:
    """The engine as one that leases hosts; a `TypeError` naming it if it does not."""
    leased = feature(engine, LeasedHosts)
    if leased is None:
        raise TypeError(f"{type(engine).__name__} cannot lease hosts; run without host leasing")
    return leased


def fit(decision: Decision, slots: int, floors: Mapping[str, int]) -> Decision:
    """`decision` with at most `slots` replicas in all: the operator with the most replicas above
    its floor gives one up, again and again (never below its floor: past that the tasks queue)."""
    counts = decision.as_dict()
    trimmed = False
    while sum(counts.values()) > slots:
        above = [(counts[n] - floors.get(n, 1), n) for n in counts if counts[n] > floors.get(n, 1)]
        if not above:
            break
        _, name = max(above)
        counts[name] -= 1
        trimmed = True
    if not trimmed:
        return decision
    reasons = {n: decision.reason(n) for n, _ in decision.replicas}
    for name, wanted in decision.replicas:
        if counts[name] < wanted:
            capped = f"capped at {counts[name]} by {slots} host slots"
            reasons[name] = f"{reasons[name]}; {capped}" if reasons[name] else capped
    return replace(decision, replicas=tuple(counts.items()), reasons=tuple(reasons.items()))
