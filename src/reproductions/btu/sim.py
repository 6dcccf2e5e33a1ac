"""A seeded, pure, discrete-time simulation of the paper's evaluation (fluid queues, BTUs)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from elastream.leasing.hosts import HostType, LeasingError, re_leases
from reproductions.btu.algorithms import OperatorStatus, select_host
from reproductions.btu.cluster import Applied, Cluster, LeasePlan, Placement, Timing, apply_plan
from reproductions.btu.config import BTUSettings, SimSettings
from reproductions.btu.metrics import Counters, RunMetrics, finish_metrics
from reproductions.btu.patterns import Load, machines
from reproductions.btu.policies import LeasingPolicy, Observation
from reproductions.btu.topology import Topology, manufacturing

LEVELS = (1.0, 2.0, 5.0)  # SLA compliance: real-time, near real-time, relaxed (x o_slo)
MAX_RHO = 0.99  # utilisation cap of the stochastic-queue term (M/M/1: Lq = rho^2 / (1 - rho))


def _phi(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF (Abramowitz & Stegun 7.1.26 for erf, absolute error < 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    erf = 1.0 - poly * np.exp(-z * z)
    return 0.5 * (1.0 + np.sign(x) * erf)


def within(limit: np.ndarray, mean: np.ndarray, sigma: float) -> np.ndarray:
    """P(S <= limit) for a log-normal processing time S with the given mean and log-sd."""
    out = np.zeros_like(limit, dtype=float)
    ok = limit > 0
    if sigma == 0:
        out[ok] = (mean[ok] <= limit[ok]).astype(float)
        return out
    mu = np.log(mean[ok]) - sigma**2 / 2
    out[ok] = _phi((np.log(limit[ok]) - mu) / sigma)
    return out


@dataclass
class _Flow:
    """Per-operator fluid state between monitoring points."""

    queue: np.ndarray
    last_out: np.ndarray
    processed: np.ndarray
    latency: np.ndarray
    arrived: np.ndarray

    @classmethod
    def empty(cls, n: int) -> _Flow:
        z = np.zeros(n)
        return cls(z.copy(), z.copy(), z.copy(), z.copy(), z.copy())

    def step(self, arrive: np.ndarray, rate: np.ndarray, dt: float, service: np.ndarray):
        """One fluid FIFO step: process min(queue + arrivals, capacity); returns what was done,
        the wait of the items done (the backlog ahead of them, plus the M/M/1 waiting
        rho / ((1 - rho) * rate) of a stochastic stream) and the M/M/1 queue rho^2 / (1 - rho)
        that a monitor would see on top of the backlog."""
        safe = np.maximum(rate, 1e-12)
        rho = np.minimum(arrive / dt / safe, MAX_RHO)
        wait = np.where(rate > 0, self.queue / safe + rho / (1 - rho) / safe, np.inf)
        done = np.minimum(self.queue + arrive, rate * dt)
        self.queue = self.queue + arrive - done
        self.last_out = done
        self.processed += done
        self.latency += done * (np.where(np.isfinite(wait), wait, 0.0) + service)
        self.arrived += arrive
        return done, wait, rho**2 / (1 - rho)

    def reset_interval(self) -> None:
        self.processed[:] = 0
        self.latency[:] = 0
        self.arrived[:] = 0


@dataclass
class Simulation:
    """One run: a pattern, a policy and a seed; `run()` returns the metrics of Tables 3-6."""

    pattern: Load
    policy_factory: Callable[[HostType], LeasingPolicy]
    seed: int
    settings: SimSettings = field(default_factory=SimSettings)
    topology: Topology = field(default_factory=manufacturing)
    placement: BTUSettings = field(default_factory=BTUSettings)

    def __post_init__(self) -> None:
        s = self.settings
        self.kind = HostType(s.cores, s.memory_mb, s.btu_s, s.price)
        self.policy = self.policy_factory(self.kind)
        # common random numbers: the interference of every tick and the boot time of the k-th
        # lease come from two streams of the seed, so that for one seed every policy meets the
        # same interference whatever it leases (a paired comparison between policies)
        noise, boots = np.random.SeedSequence(self.seed).spawn(2)
        self.rng = np.random.default_rng(noise)
        self.boot_rng = np.random.default_rng(boots)
        ops = self.topology.operators
        self.names = self.topology.names
        self.slo = np.array([o.slo_s for o in ops])
        self.mu = s.concurrency / self.slo  # items/s of one instance at nominal speed
        self.routing_t = self.topology.routing().T
        self.sources = self.topology.source_vector()
        pulls = {o.name: o.image_mb / s.pull_mb_per_s for o in ops}
        self.timing = Timing(0.0, s.start_cached_s, pulls)
        self.counters = Counters(ops=len(ops))
        # (operator index, ready at, serves until) of instances on released hosts (LeasePlan.drain)
        self._draining: list[tuple[int, float, float]] = []
        # every released host's lease start and release, every lease's start (re-leases are
        # counted from them at the end), and the start-ups (lease to the last of its first
        # instances serving) of leased hosts: (done at, seconds)
        self._released: list[tuple[float, float]] = []
        self._leased_at: list[float] = []
        self._startups: list[tuple[float, float]] = []
        self._levels = np.array(LEVELS)[:, None]

    # ------------------------------------------------------------------ execute
    def _apply(self, cluster: Cluster, plan: LeasePlan, now: float) -> Cluster:
        if plan.empty:
            return cluster
        boot = (
            self.boot_rng.uniform(self.settings.boot_min_s, self.settings.boot_max_s)
            if plan.lease
            else 0
        )
        timing = Timing(boot, self.timing.start_cached_s, self.timing.image_download_s)
        applied = apply_plan(cluster, plan, now, self.kind, timing)
        self._count(applied, plan, now)
        if plan.drain:
            self._keep_draining(applied, now)
        self._index(applied.cluster)
        return applied.cluster

    def _keep_draining(self, applied: Applied, now: float) -> None:
        """LeasePlan.drain: the instances stopped on a released host serve on until its paid BTU
        ends (the host is paid to then; the moved copies start on their targets meanwhile)."""
        ends = {h.host_id: h.btu_end(now) for h in applied.released}
        where = {name: k for k, name in enumerate(self.names)}
        for inst in applied.stopped:
            if inst.host_id in ends and inst.active:
                self._draining.append((where[inst.operator], inst.ready_at, ends[inst.host_id]))

    def _count(self, applied: Applied, plan: LeasePlan, now: float) -> None:
        c = self.counters
        c.vm_up += len(applied.leased)
        c.paid_btus += len(applied.leased)
        c.vm_down += sum(1 for h in applied.released if h.remaining_btu(now) > 1e-9)
        c.migrations += applied.migrations
        moved = {p.migrated_from for p in plan.place if p.migrated_from}
        ups = [p for p in plan.place if p.migrated_from is None]
        downs = [i for i in applied.stopped if i.instance_id not in moved]
        c.instance_up += len(ups)
        c.instance_down += len(downs)
        for p in ups:
            c.scalings[self.names.index(p.operator)] += 1
        for i in downs:
            c.scalings[self.names.index(i.operator)] += 1
        for h in applied.leased:
            self.btus_seen[h.host_id] = 1
            self._leased_at.append(now)
            self._note_startup(h.host_id, applied, now)
        for h in applied.released:
            self.btus_seen.pop(h.host_id, None)
            self._released.append((h.lease_start, now))

    def re_lease_count(self) -> int:
        """Leases so far within one BTU after a released host's paid end: a defect, since
        prolonging that host would have paid no more and needed no boot."""
        return re_leases(self._released, self._leased_at, self.kind.btu_s)

    def _note_startup(self, host_id: str, applied: Applied, now: float) -> None:
        """A leased host's start-up, measured once its first instances serve."""
        ready = [i.ready_at for i in applied.started if i.host_id == host_id]
        host = applied.cluster.host(host_id)
        done = max(ready) if ready else host.ready_at
        self._startups.append((done, done - now))

    def _bill(self, cluster: Cluster, now: float) -> None:
        """A host still leased when its BTU ends is leased for another one (VM prolonging)."""
        for h in cluster.hosts:
            started = h.btus_started(now + 1e-9) if now > h.lease_start else 1
            if started > self.btus_seen.get(h.host_id, 1):
                self.counters.vm_prolong += started - self.btus_seen[h.host_id]
                self.counters.paid_btus += started - self.btus_seen[h.host_id]
                self.btus_seen[h.host_id] = started

    # ------------------------------------------------------------------ start
    def _initial(self) -> Cluster:
        s = self.settings
        cluster = Cluster(demands=self.topology.demands())
        pre = Timing(0.0, 0.0, {})
        hosts = tuple(f"h0-{k}" for k in range(s.initial_hosts))
        cluster = apply_plan(cluster, LeasePlan(lease=hosts), 0.0, self.kind, pre).cluster
        for op in self.names:
            target = select_host(cluster, op, self.placement)
            if target is None:
                raise LeasingError(f"infeasible start: {op} fits on none of the initial hosts")
            cluster = apply_plan(
                cluster, LeasePlan(place=(Placement(op, target),)), 0.0, self.kind, pre
            )
            cluster = cluster.cluster
        self.counters.vm_up += len(hosts)
        self.counters.paid_btus += len(hosts)
        self.btus_seen = dict.fromkeys(hosts, 1)
        self._index(cluster)
        return cluster

    # ------------------------------------------------------------------ monitor
    def _index(self, cluster: Cluster) -> None:
        """Arrays of the active instances (operator index, ready time) for `_capacity`."""
        where = {name: k for k, name in enumerate(self.names)}
        active = [i for i in cluster.instances if i.active]
        self._ops = np.array([where[i.operator] for i in active], dtype=int)
        self._ready = np.array([i.ready_at for i in active], dtype=float)

    def _capacity(self, now: float) -> np.ndarray:
        """Instances of each operator type that are active and have started by `now`, and
        those still serving on a released host until its BTU ends (LeasePlan.drain)."""
        ready = self._ops[self._ready <= now]
        counts = np.bincount(ready, minlength=len(self.names)).astype(float)
        if self._draining:
            self._draining = [d for d in self._draining if d[2] > now]
            for k, start, _ in self._draining:
                if start <= now:
                    counts[k] += 1.0
        return counts

    def _observe(
        self, cluster: Cluster, now: float, od_hist, arrivals: np.ndarray, queue
    ) -> Observation:
        counts = np.bincount(self._ops, minlength=len(self.names))
        status = {
            op: OperatorStatus(
                instances=int(counts[k]),
                duration=od_hist[-1][k],
                slo=float(self.slo[k]),
                scalings=int(self.counters.scalings[k]),
                queue=float(queue[k]),
            )
            for k, op in enumerate(self.names)
        }
        recent = od_hist[-self.placement.trend_window :]
        history = {op: tuple(row[k] for row in recent) for k, op in enumerate(self.names)}
        return Observation(
            now=now,
            monitor_s=self.settings.monitor_s,
            status=status,
            history=history,
            arrivals=arrivals,
            service_rate=dict(zip(self.names, self.mu, strict=True)),
            startup_s=tuple(s for done, s in self._startups if done <= now),
            routing=self.routing_t.T,
        )

    # ------------------------------------------------------------------ run
    def run(self) -> RunMetrics:
        s = self.settings
        n = len(self.names)
        dt = s.monitor_s / s.substeps
        cluster = self._initial()
        self.served: list[tuple[float, ...]] = []  # per tick: items done, and within 1x, 2x, 5x
        flow = _Flow.empty(n)
        ok = np.zeros(len(LEVELS))
        total = 0.0
        od_hist: list[np.ndarray] = []
        per_provision = round(s.provision_s / s.monitor_s)
        intervals = round(s.duration_s / s.monitor_s)
        arr_hist = np.zeros((intervals, n))  # observed arrival rates, one row per monitoring point
        means = np.empty((len(LEVELS), n))  # the interval's mean service time, once per level
        hosts_trace = []
        times = np.arange(intervals * s.substeps) * dt
        load = machines(self.pattern, times).astype(float)
        for tick in range(intervals):
            t0 = tick * s.monitor_s
            slow = np.exp(self.rng.normal(-(s.noise_sigma**2) / 2, s.noise_sigma, n))
            slow = slow * np.where(self.rng.random(n) < s.spike_prob, s.spike_factor, 1.0)
            service = self.slo * slow
            means[:] = service
            for sub in range(s.substeps):
                now = t0 + sub * dt
                self._bill(cluster, now)
                m = load[tick * s.substeps + sub]
                arrive = self.sources * m * dt + self.routing_t @ flow.last_out
                rate = self._capacity(now) * s.concurrency / service
                done, wait, jitter = flow.step(arrive, rate, dt, service)
                limits = self._levels * self.slo - wait  # one row per compliance level
                ok += within(limits, means, s.service_sigma) @ done
                total += float(done.sum())
            now = t0 + s.monitor_s
            od = self._durations(flow, now, service)
            od_hist.append(od)
            arr_hist[tick] = flow.arrived / s.monitor_s
            arrivals = arr_hist[: tick + 1]
            arrivals.flags.writeable = False  # a policy reads the history, never changes it
            self.counters.track_delays(od, self.slo, flow.queue + jitter, s.monitor_s)
            flow.reset_interval()
            seen = flow.queue + jitter
            entering = self._entering_window(cluster, now)
            if entering:
                obs = self._observe(cluster, now, od_hist, arrivals, seen)
                cluster = self._apply(cluster, self.policy.release(obs, cluster, entering), now)
            if (tick + 1) % per_provision == 0:
                obs = self._observe(cluster, now, od_hist, arrivals, seen)
                cluster = self._apply(cluster, self.policy.provision(obs, cluster), now)
            hosts_trace.append((now, len(cluster.hosts), len(cluster.instances), m))
            self.served.append((float(total), *(float(x) for x in ok)))
        again = self.re_lease_count()
        return finish_metrics(self.counters, ok, total, s, self.names, hosts_trace, again)

    def _durations(self, flow: _Flow, now: float, service: np.ndarray) -> np.ndarray:
        """o_d of the interval: mean latency of what was processed; with nothing processed, the
        nominal duration plus the wait the queue implies (infinite capacity-less waits capped)."""
        od = np.array(service, dtype=float)
        got = flow.processed > 0
        od[got] = flow.latency[got] / flow.processed[got]
        rate = self._capacity(now) * self.settings.concurrency / service
        idle = ~got & (flow.queue > 0)
        od[idle] = service[idle] + np.where(
            rate[idle] > 0,
            flow.queue[idle] / np.maximum(rate[idle], 1e-12),
            self.settings.monitor_s,
        )
        return od

    def _entering_window(self, cluster: Cluster, now: float) -> tuple[str, ...]:
        """Hosts whose last `release_window` of the BTU begins in the monitoring interval ending
        at `now` (each host is evaluated once per BTU, checked at every monitoring point)."""
        frac = self.placement.release_window
        out = []
        for h in cluster.hosts:
            if h.ready_at > now:
                continue
            rem = h.remaining_btu(now)
            if rem <= frac * h.kind.btu_s and rem + self.settings.monitor_s > frac * h.kind.btu_s:
                out.append(h.host_id)
        return tuple(out)
