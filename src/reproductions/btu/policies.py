"""Leasing policies: the paper's BTU-based approach, its threshold baseline, our forecast policy."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from elastream.leasing.hosts import Host, HostType
from reproductions.btu.algorithms import (
    OperatorStatus,
    best_downscale,
    release_procedure,
    select_host,
    up_trigger,
)
from reproductions.btu.cluster import Cluster, Instance, LeasePlan, Placement
from reproductions.btu.config import BTUSettings, ForecastSettings, ThresholdSettings
from reproductions.btu.forecast import forecast, window_peak

HOLT_SAMPLES = 60  # Holt runs over the last 60 samples: older ones weigh < (1 - alpha)^60


@dataclass(frozen=True)
class Observation:
    """What Monitor hands to Analyze/Plan at time `now` (all per operator type)."""

    now: float
    monitor_s: float
    status: Mapping[str, OperatorStatus]  # o#, o_d, o_slo, o_s, o_queue
    history: Mapping[str, tuple[float, ...]]  # od_1..od_N, oldest first
    arrivals: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # time x operator
    service_rate: Mapping[str, float] = field(default_factory=dict)  # items/s of one instance
    # measured start-ups so far: lease to the first instances on the new host serving (s)
    startup_s: tuple[float, ...] = ()
    # the topology's routing R[i, j]: items entering operator j per item operator i processes
    # (its edges and outgoing ratios); None where a policy is not told it
    routing: np.ndarray | None = None


class LeasingPolicy(Protocol):
    """Analyze/Plan: a plan each provisioning interval, and one for hosts entering their window."""

    name: str

    def provision(self, obs: Observation, cluster: Cluster) -> LeasePlan: ...

    def release(self, obs: Observation, cluster: Cluster, hosts: tuple[str, ...]) -> LeasePlan: ...


class Draft:
    """Builds one LeasePlan while keeping a simulated cluster up to date (local to one decision)."""

    def __init__(self, cluster: Cluster, kind: HostType, now: float) -> None:
        self.cluster = cluster
        self.kind = kind
        self.now = now
        self.lease: list[str] = []
        self.stop: list[str] = []
        self.place: list[Placement] = []
        self.release: list[str] = []
        self.prolong: list[str] = []
        self.created: set[str] = set()  # placeholder ids of this plan's own placements
        self.drain = False  # released hosts serve until their BTU ends (LeasePlan.drain)

    def new_host(self) -> str:
        hid = f"h{int(self.now)}-{self.cluster.next_id}"
        host = Host(hid, self.kind, self.now, ready_at=math.inf)
        self.cluster = replace(
            self.cluster, hosts=(*self.cluster.hosts, host), next_id=self.cluster.next_id + 1
        )
        self.lease.append(hid)
        return hid

    def put(self, operator: str, host_id: str, migrated_from: str | None = None) -> None:
        inst = Instance(f"d{self.cluster.next_id}", operator, host_id, ready_at=math.inf)
        self.created.add(inst.instance_id)
        self.cluster = replace(
            self.cluster,
            instances=(*self.cluster.instances, inst),
            next_id=self.cluster.next_id + 1,
        )
        self.place.append(Placement(operator, host_id, migrated_from))

    def remove(self, instance_id: str) -> None:
        kept = tuple(i for i in self.cluster.instances if i.instance_id != instance_id)
        self.cluster = replace(self.cluster, instances=kept)
        self.stop.append(instance_id)

    def release_hosts(
        self,
        hosts: Sequence[str],
        vacate: Callable[[Draft, str, frozenset[str]], bool],
        *,
        spare_undecided: bool = False,
    ) -> LeasePlan:
        """Each host in turn is vacated on a trial copy (`vacate(trial, host, excluded)` stops
        or moves its instances, never onto an excluded host; False when it cannot): released,
        with the trial's stops and moves, if that worked, else prolonged. The hosts released
        before are excluded, and with `spare_undecided` the hosts still to decide too."""
        gone: frozenset[str] = frozenset()
        undecided = set(hosts)
        for hid in hosts:
            undecided.discard(hid)
            trial = Draft(self.cluster, self.kind, self.now)
            trial.created = set(self.created)
            if vacate(trial, hid, gone | undecided if spare_undecided else gone):
                self.cluster = trial.cluster
                self.created = trial.created
                self.stop += trial.stop
                self.place += trial.place
                self.release.append(hid)
                gone = gone | {hid}
            else:
                self.prolong.append(hid)  # and a target for the hosts after it
        return self.plan()

    def plan(self) -> LeasePlan:
        return LeasePlan(
            lease=tuple(self.lease),
            stop=tuple(self.stop),
            place=tuple(self.place),
            release=tuple(self.release),
            prolong=tuple(self.prolong),
            drain=self.drain,
        )


def _swap(draft: Draft, victim: str, operator: str) -> bool:
    """Stop one instance of `victim` (never one this plan placed) on a host where that makes
    room for `operator`, and place `operator` there; False when no such instance exists."""
    d = draft.cluster.demand(operator)
    v = draft.cluster.demand(victim)
    for inst in reversed(draft.cluster.of_operator(victim)):
        if inst.instance_id in draft.created:
            continue
        cpu, mem = draft.cluster.free_raw(inst.host_id)
        if cpu + v.cpu_shares >= d.cpu_shares and mem + v.memory_mb >= d.memory_mb:
            draft.remove(inst.instance_id)
            draft.put(operator, inst.host_id)
            return True
    return False


def upscale(
    draft: Draft, operator: str, status: Mapping[str, OperatorStatus], settings: BTUSettings
) -> None:
    """The upscaling procedure of Fig. 4: the best Alg. 2 host; else room freed by scaling down
    the type with the best positive Alg. 3 utility; else a new host."""
    host = select_host(draft.cluster, operator, settings)
    if host is not None:
        draft.put(operator, host)
        return
    victim = best_downscale(status, settings, exclude=operator)
    if victim is not None and _swap(draft, victim, operator):
        return
    draft.put(operator, draft.new_host())


def _counts(status: Mapping[str, OperatorStatus], cluster: Cluster) -> dict[str, OperatorStatus]:
    """Alg. 3 status with o# as it is in `cluster` (a draft may have changed it)."""
    return {op: replace(s, instances=cluster.count(op)) for op, s in status.items()}


@dataclass
class BTUPolicy:
    """The paper's BTU-based approach: Alg. 1 each provisioning interval, Fig. 4 to scale up,
    Fig. 5 in the last 5 % of every host's BTU."""

    kind: HostType
    settings: BTUSettings = field(default_factory=BTUSettings)
    name: str = "btu"

    def provision(self, obs: Observation, cluster: Cluster) -> LeasePlan:
        draft = Draft(cluster, self.kind, obs.now)
        for op, s in obs.status.items():
            hist = obs.history.get(op, ())[-self.settings.trend_window :]
            if up_trigger(s.duration, hist, s.slo, s.queue, self.settings.scaling_threshold):
                upscale(draft, op, _counts(obs.status, draft.cluster), self.settings)
        return draft.plan()

    def release(self, obs: Observation, cluster: Cluster, hosts: tuple[str, ...]) -> LeasePlan:
        def vacate(trial: Draft, hid: str, gone: frozenset[str]) -> bool:
            status = _counts(obs.status, trial.cluster)
            decision = release_procedure(trial.cluster, hid, status, self.settings, gone)
            if decision.release:
                for iid in decision.stop:
                    trial.remove(iid)
                for m in decision.migrate:
                    trial.put(m.operator, m.host_id, m.migrated_from)
            return decision.release

        return Draft(cluster, self.kind, obs.now).release_hosts(hosts, vacate)


@dataclass
class ThresholdPolicy:
    """The paper's baseline: +1 instance above 50 queued items, +2 above 250, -1 below 1;
    on-demand leasing: a new host when all are full, release when a host's last instance stops."""

    kind: HostType
    settings: ThresholdSettings = field(default_factory=ThresholdSettings)
    name: str = "threshold"

    def provision(self, obs: Observation, cluster: Cluster) -> LeasePlan:
        draft = Draft(cluster, self.kind, obs.now)
        for op, s in obs.status.items():
            if s.queue > self.settings.up_two:
                steps = 2
            elif s.queue > self.settings.up_one:
                steps = 1
            elif s.queue < self.settings.down_below and draft.cluster.count(op) > 1:
                steps = -1
            else:
                steps = 0
            for _ in range(steps):
                draft.put(op, self._first_fit(draft, op))
            if steps < 0:
                draft.remove(draft.cluster.of_operator(op)[-1].instance_id)  # the newest one
        for h in draft.cluster.hosts:
            if h.host_id not in draft.lease and not draft.cluster.on_host(h.host_id):
                draft.release.append(h.host_id)
        return draft.plan()

    @staticmethod
    def _first_fit(draft: Draft, op: str) -> str:
        for h in draft.cluster.hosts:
            if draft.cluster.fits(h.host_id, op):
                return h.host_id
        return draft.new_host()

    def release(self, obs: Observation, cluster: Cluster, hosts: tuple[str, ...]) -> LeasePlan:
        return LeasePlan()  # BTU-agnostic: hosts go as soon as they are empty, never in a window


def _reuse_surplus(draft: Draft, operator: str, needs: Mapping[str, int]) -> bool:
    """Make room for `operator` by stopping an instance another type has beyond its forecast
    need (the type with the largest surplus first); True when it placed the instance."""
    surplus = sorted(
        ((draft.cluster.count(v) - n, v) for v, n in needs.items() if v != operator),
        reverse=True,
    )
    return any(extra > 0 and _swap(draft, victim, operator) for extra, victim in surplus)


@dataclass
class ForecastPolicy:
    """Ours: size every operator for the Holt forecast of its arrival rate (plus its backlog) each
    provisioning interval; in a host's last 5 % keep it only when the capacity the next BTU is
    forecast to need (the peak of the last BTU, or the trend if higher) does not fit elsewhere."""

    kind: HostType
    settings: ForecastSettings = field(default_factory=ForecastSettings)
    btu: BTUSettings = field(default_factory=BTUSettings)
    name: str = "forecast"

    def _needed(self, obs: Observation, rates: np.ndarray) -> dict[str, int]:
        out = {}
        for k, (op, s) in enumerate(obs.status.items()):
            mu = obs.service_rate[op]
            load = rates[k] / (mu * self.settings.utilisation)
            backlog = s.queue / (mu * self.settings.drain_s)
            out[op] = max(1, math.ceil(load + backlog - 1e-9))
        return out

    def provision(self, obs: Observation, cluster: Cluster) -> LeasePlan:
        draft = Draft(cluster, self.kind, obs.now)
        if obs.arrivals.shape[0] == 0:
            return draft.plan()
        s = self.settings
        ahead = forecast(obs.arrivals[-HOLT_SAMPLES:], s.lead_s / obs.monitor_s, s.alpha, s.beta)
        rates = np.maximum(ahead, obs.arrivals[-1])
        needs = self._needed(obs, rates)
        for op, need in needs.items():
            st = obs.status[op]
            hist = obs.history.get(op, ())[-self.btu.trend_window :]
            fire = up_trigger(st.duration, hist, st.slo, st.queue, self.btu.scaling_threshold)
            if s.reactive and fire:
                need = max(need, draft.cluster.count(op) + 1)  # Alg. 1 still has its say
            for _ in range(min(s.max_step, need - draft.cluster.count(op))):
                host = select_host(draft.cluster, op, self.btu)
                if host is None and not _reuse_surplus(draft, op, needs):
                    host = draft.new_host()
                if host is not None:
                    draft.put(op, host)
        return draft.plan()

    def release(self, obs: Observation, cluster: Cluster, hosts: tuple[str, ...]) -> LeasePlan:
        draft = Draft(cluster, self.kind, obs.now)
        if obs.arrivals.shape[0] == 0:
            draft.prolong.extend(hosts)
            return draft.plan()
        s = self.settings
        look = int(max(self.kind.btu_s, s.memory_s) / obs.monitor_s)
        horizon = self.kind.btu_s / obs.monitor_s
        trend = forecast(obs.arrivals[-HOLT_SAMPLES:], horizon, s.alpha, s.beta)
        keep = self._needed(obs, np.maximum(window_peak(obs.arrivals, look), trend))
        return draft.release_hosts(
            hosts, lambda trial, hid, gone: self._vacate(trial, hid, keep, gone)
        )

    def _vacate(
        self, trial: Draft, hid: str, keep: Mapping[str, int], gone: frozenset[str]
    ) -> bool:
        """Stop the host's instances beyond the forecast need; migrate the rest (Alg. 2, the host
        and hosts already released excluded). False when something needed fits nowhere."""
        for inst in trial.cluster.on_host(hid):
            if trial.cluster.count(inst.operator) > keep[inst.operator]:
                trial.remove(inst.instance_id)
                continue
            target = select_host(trial.cluster, inst.operator, self.btu, gone | {hid})
            if target is None:
                return False
            trial.remove(inst.instance_id)
            trial.put(inst.operator, target, inst.instance_id)
        return True


def pool_wait(rate: float, instances: int, service_rate: float) -> float:
    """Mean waiting time of items arriving at `rate` at a pool of `instances` that serve
    `service_rate` items/s each, as one M/M/1 server of the pool's rate c (the simulator's
    queue model): rate / (c (c - rate)); infinite when the pool cannot keep up."""
    c = instances * service_rate
    return rate / (c * (c - rate)) if c > rate else math.inf


def _fill_gain(rate: float, count: int, service_rate: float, slo: float) -> float:
    """What one more instance is worth: the waiting it saves each of the type's items, relative
    to its SLO, times the items per second (the share of items it moves within their SLO
    grows with that)."""
    before = pool_wait(rate, count, service_rate)
    if math.isinf(before):
        return math.inf
    return rate * (before - pool_wait(rate, count + 1, service_rate)) / slo


def fill_by_waiting(draft: Draft, rates: np.ndarray, obs: Observation, btu: BTUSettings) -> None:
    """Paid room is free: each free place goes to the type whose next instance saves the most
    waiting per unit of host room it takes (`_fill_gain` / the larger of its CPU and memory
    share of a host) at the forecast rates, until no type fits anywhere."""
    ops = list(obs.status)
    while True:
        best, best_score = None, -1.0
        for k, op in enumerate(ops):
            host = select_host(draft.cluster, op, btu)
            if host is None:
                continue
            d = draft.cluster.demand(op)
            room = max(d.cpu_shares / draft.kind.cpu_shares, d.memory_mb / draft.kind.memory_mb)
            gain = _fill_gain(
                float(rates[k]), draft.cluster.count(op), obs.service_rate[op], obs.status[op].slo
            )
            if gain / room > best_score:
                best, best_score = (op, host), gain / room
        if best is None:
            return
        draft.put(*best)


@dataclass
class StaticPeakPolicy:
    """A reference, not from the paper and not elastic: an oracle told the peak arrival rate of
    every operator type leases, at the first provisioning, the hosts that the peak needs (at
    `utilisation`), fills them as the lease-ahead policy fills paid room (`fill_by_waiting` at
    the peak rates), and never changes anything after (every later plan is empty: the need is
    met and the hosts are full)."""

    kind: HostType
    peak_rates: Mapping[str, float]
    utilisation: float = 0.9
    btu: BTUSettings = field(default_factory=BTUSettings)
    name: str = "static_peak"

    def provision(self, obs: Observation, cluster: Cluster) -> LeasePlan:
        draft = Draft(cluster, self.kind, obs.now)  # idempotent: once set up, nothing to do
        need = {
            op: max(1, math.ceil(rate / (obs.service_rate[op] * self.utilisation)))
            for op, rate in self.peak_rates.items()
        }
        for op, n in need.items():
            for _ in range(n - draft.cluster.count(op)):
                host = select_host(draft.cluster, op, self.btu)
                draft.put(op, host if host is not None else draft.new_host())
        # paid room is free: filled by the rule of the lease-ahead policy at the peak rates, so that
        # the fixed fleet differs from it only in not being elastic
        rates = np.array([self.peak_rates[op] for op in obs.status])
        fill_by_waiting(draft, rates, obs, self.btu)
        return draft.plan()

    def release(self, obs: Observation, cluster: Cluster, hosts: tuple[str, ...]) -> LeasePlan:
        return LeasePlan(prolong=hosts)


@dataclass
class FixedFleetPolicy:
    """A reference, not elastic: `hosts` hosts leased at the first provisioning and kept, their
    room filled as static_peak fills it (`fill_by_waiting` at the peak rates, so the types the
    fleet cannot keep up with come first). Run for every size, it gives the best fixed fleet in
    hindsight; static_peak is the size the peak needs."""

    kind: HostType
    peak_rates: Mapping[str, float]
    hosts: int
    btu: BTUSettings = field(default_factory=BTUSettings)
    name: str = "fixed"

    def provision(self, obs: Observation, cluster: Cluster) -> LeasePlan:
        draft = Draft(cluster, self.kind, obs.now)
        for _ in range(self.hosts - len(draft.cluster.hosts)):
            draft.new_host()
        rates = np.array([self.peak_rates[op] for op in obs.status])
        fill_by_waiting(draft, rates, obs, self.btu)
        return draft.plan()

    def release(self, obs: Observation, cluster: Cluster, hosts: tuple[str, ...]) -> LeasePlan:
        return LeasePlan(prolong=hosts)
