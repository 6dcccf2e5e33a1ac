"""The BTU paper's host layer: operator instances on leased hosts, and lease plans applied in
order (lease -> stop -> place -> counts -> release); the apparatus of the reproduction."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from elastream.leasing.hosts import Host, HostType, LeasingError


@dataclass(frozen=True)
class Demand:
    """What one instance of an operator type reserves on its host (Table 2: o_cpu, o_memory)."""

    cpu_shares: float
    memory_mb: float

    def __post_init__(self) -> None:
        if self.cpu_shares <= 0 or self.memory_mb <= 0:
            raise LeasingError(f"demand must be positive, got {self}")


@dataclass(frozen=True)
class Instance:
    """An operator instance (replica) placed on a host; it processes once `ready_at` has passed."""

    instance_id: str
    operator: str
    host_id: str
    ready_at: float
    active: bool = True


@dataclass(frozen=True)
class Cluster:
    """Leased hosts and the instances placed on them (a value: every change returns a new one)."""

    hosts: tuple[Host, ...] = ()
    instances: tuple[Instance, ...] = ()
    demands: Mapping[str, Demand] = field(default_factory=dict)
    next_id: int = 0

    # Indexes built once per cluster value (it never changes; a change returns a new value), so
    # that a policy's many look-ups cost a dict access instead of a scan of every instance.
    @cached_property
    def _hosts_by_id(self) -> dict[str, Host]:
        out: dict[str, Host] = {}
        for h in self.hosts:
            out.setdefault(h.host_id, h)
        return out

    @cached_property
    def _by_host(self) -> dict[str, tuple[Instance, ...]]:
        return _grouped(self.instances, lambda i: i.host_id)

    @cached_property
    def _by_operator(self) -> dict[str, tuple[Instance, ...]]:
        return _grouped(self.instances, lambda i: i.operator)

    @cached_property
    def _free(self) -> dict[str, tuple[float, float]]:
        return {}  # filled per host on first use (free_raw)

    def host(self, host_id: str) -> Host:
        h = self._hosts_by_id.get(host_id)
        if h is None:
            raise LeasingError(f"unknown host {host_id!r}")
        return h

    def demand(self, operator: str) -> Demand:
        if operator not in self.demands:
            raise LeasingError(f"unknown operator {operator!r}: no resource demand declared")
        return self.demands[operator]

    def on_host(self, host_id: str) -> tuple[Instance, ...]:
        return self._by_host.get(host_id, ())

    def of_operator(self, operator: str) -> tuple[Instance, ...]:
        return self._by_operator.get(operator, ())

    def count(self, operator: str) -> int:
        """o#: the instances of `operator` (starting ones included)."""
        return len(self._by_operator.get(operator, ()))

    def free_raw(self, host_id: str) -> tuple[float, float]:
        """h_cpu*, h_memory*: the CPU shares and memory not reserved by instances on the host."""
        free = self._free.get(host_id)
        if free is None:
            free = self._free[host_id] = self._free_of(host_id)
        return free

    def _free_of(self, host_id: str) -> tuple[float, float]:
        h = self.host(host_id)
        cpu, mem = h.kind.cpu_shares, h.kind.memory_mb
        for inst in self.on_host(host_id):
            d = self.demand(inst.operator)
            cpu -= d.cpu_shares
            mem -= d.memory_mb
        return cpu, mem

    def fits(self, host_id: str, operator: str) -> bool:
        """The rule of the host layer: an instance runs only where a leased host has room for it."""
        cpu, mem = self.free_raw(host_id)
        d = self.demand(operator)
        return cpu >= d.cpu_shares - 1e-9 and mem >= d.memory_mb - 1e-9


@dataclass(frozen=True)
class Placement:
    """One instance of `operator` on `host_id`; `migrated_from` names the instance it replaces."""

    operator: str
    host_id: str
    migrated_from: str | None = None


@dataclass(frozen=True)
class LeasePlan:
    """What Execute applies, in this order: lease hosts -> stop instances -> place instances ->
    set instance counts -> release emptied hosts -> mark hosts to prolong."""

    lease: tuple[str, ...] = ()  # ids of new hosts
    stop: tuple[str, ...] = ()  # instance ids (scale-down; migrations stop their source here)
    place: tuple[Placement, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)  # active instances per operator
    release: tuple[str, ...] = ()  # host ids; they must be empty once the plan is applied
    prolong: tuple[str, ...] = ()  # host ids decided to stay for another BTU (billed at its end)
    # released hosts keep serving with the instances stopped on them until their paid BTU ends
    # (the moved instances start on their targets meanwhile: make before break)
    drain: bool = False

    @property
    def empty(self) -> bool:
        return not (
            self.lease or self.stop or self.place or self.counts or self.release or self.prolong
        )


@dataclass(frozen=True)
class Timing:
    """Delays of the Execute step: VM boot, instance start with and without a cached image."""

    host_boot_s: float = 45.0
    start_cached_s: float = 7.5
    image_download_s: Mapping[str, float] = field(default_factory=dict)  # per operator image

    def instance_start(self, host: Host, operator: str) -> float:
        pull = 0.0 if operator in host.images else self.image_download_s.get(operator, 0.0)
        return self.start_cached_s + pull


@dataclass(frozen=True)
class Applied:
    """A plan's effect: the new cluster and what was done (for the metrics)."""

    cluster: Cluster
    leased: tuple[Host, ...] = ()
    released: tuple[Host, ...] = ()
    started: tuple[Instance, ...] = ()
    stopped: tuple[Instance, ...] = ()
    migrations: int = 0


def _lease(cluster: Cluster, plan: LeasePlan, kind: HostType, now: float, timing: Timing):
    known = {h.host_id for h in cluster.hosts}
    new = []
    for hid in plan.lease:
        if hid in known:
            raise LeasingError(f"host {hid!r} is already leased")
        known.add(hid)
        new.append(Host(hid, kind, lease_start=now, ready_at=now + timing.host_boot_s))
    return replace(cluster, hosts=cluster.hosts + tuple(new)), tuple(new)


def _stop(cluster: Cluster, plan: LeasePlan):
    ids = set(plan.stop)
    unknown = ids - {i.instance_id for i in cluster.instances}
    if unknown:
        raise LeasingError(f"cannot stop unknown instance(s) {sorted(unknown)}")
    stopped = tuple(i for i in cluster.instances if i.instance_id in ids)
    kept = tuple(i for i in cluster.instances if i.instance_id not in ids)
    return replace(cluster, instances=kept), stopped


def _place(cluster: Cluster, plan: LeasePlan, now: float, timing: Timing, stopped_ids: set[str]):
    started = []
    migrations = 0
    for p in plan.place:
        host = cluster.host(p.host_id)
        if p.host_id in plan.release:
            raise LeasingError(f"cannot place {p.operator} on host {p.host_id!r}: it is released")
        if not cluster.fits(p.host_id, p.operator):
            raise LeasingError(
                f"infeasible instance: host {p.host_id!r} has no room for {p.operator}"
            )
        if p.migrated_from is not None:
            if p.migrated_from not in stopped_ids:
                raise LeasingError(
                    f"migration source {p.migrated_from!r} is not stopped by the plan"
                )
            migrations += 1
        ready = max(now, host.ready_at) + timing.instance_start(host, p.operator)
        inst = Instance(f"i{cluster.next_id}", p.operator, p.host_id, ready_at=ready)
        new_host = replace(host, images=host.images | {p.operator})
        cluster = replace(
            cluster,
            instances=(*cluster.instances, inst),
            hosts=tuple(new_host if h.host_id == host.host_id else h for h in cluster.hosts),
            next_id=cluster.next_id + 1,
        )
        started.append(inst)
    return cluster, tuple(started), migrations


def _set_counts(cluster: Cluster, counts: Mapping[str, int]) -> Cluster:
    instances = list(cluster.instances)
    for op, k in counts.items():
        idx = [n for n, i in enumerate(instances) if i.operator == op]
        if k < 0 or k > len(idx):
            raise LeasingError(
                f"operator {op!r}: {k} active instances requested, "
                f"{len(idx)} placed on leased hosts with room"
            )
        for rank, n in enumerate(idx):
            instances[n] = replace(instances[n], active=rank < k)
    return replace(cluster, instances=tuple(instances))


def _release(cluster: Cluster, plan: LeasePlan):
    released = []
    for hid in plan.release:
        host = cluster.host(hid)
        if cluster.on_host(hid):
            raise LeasingError(f"cannot release host {hid!r}: instances still run on it")
        released.append(host)
    for hid in plan.prolong:
        if hid in plan.release:
            raise LeasingError(f"host {hid!r} cannot be both released and prolonged")
        cluster.host(hid)  # must be leased
    ids = set(plan.release)
    hosts = tuple(h for h in cluster.hosts if h.host_id not in ids)
    return replace(cluster, hosts=hosts), tuple(released)


def apply_plan(
    cluster: Cluster, plan: LeasePlan, now: float, kind: HostType, timing: Timing = Timing()
) -> Applied:
    """Execute a plan in order (lease -> stop -> place -> counts -> release); raise on any
    infeasible step, leaving the caller's cluster untouched."""
    cluster, leased = _lease(cluster, plan, kind, now, timing)
    cluster, stopped = _stop(cluster, plan)
    stopped_ids = {i.instance_id for i in stopped}
    cluster, started, migrations = _place(cluster, plan, now, timing, stopped_ids)
    cluster = _set_counts(cluster, plan.counts)
    cluster, released = _release(cluster, plan)
    return Applied(cluster, leased, released, started, stopped, migrations)


def _grouped(
    instances: Iterable[Instance], key: Callable[[Instance], str]
) -> dict[str, tuple[Instance, ...]]:
    """The instances by `key`, each group in the instances' order."""
    out: dict[str, list[Instance]] = {}
    for i in instances:
        out.setdefault(key(i), []).append(i)
    return {k: tuple(v) for k, v in out.items()}
