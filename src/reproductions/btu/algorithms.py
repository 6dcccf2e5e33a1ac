"""The paper's Algorithms 1-3 and its host release procedure (Fig. 5), as pure functions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elastream.leasing.hosts import LeasingError
from reproductions.btu.cluster import Cluster, Instance, Placement
from reproductions.btu.config import BTUSettings, CacheFavours


# ----------------------------------------------------------------------------- Algorithm 1
def predicted_duration(history: Sequence[float]) -> float:
    """Alg. 1 lines 5-9: least-squares line through (i, od_i), i = 1..N, evaluated at N + 1.

    `history` is od_1..od_N oldest first, so N + 1 is the next observation. (The paper names od_1
    the newest; extrapolating to N + 1 would then predict the past, so we order by time.)"""
    n = len(history)
    if n < 2:
        raise LeasingError(f"Alg. 1 trend needs at least 2 durations, got {n}")
    obs_mean = (n + 1) / 2.0  # line 5
    dur_mean = sum(history) / n  # line 6
    num = sum((i - obs_mean) * (d - dur_mean) for i, d in enumerate(history, start=1))
    den = sum((i - obs_mean) ** 2 for i in range(1, n + 1))
    beta = num / den  # line 7
    alpha = dur_mean - beta * obs_mean  # line 8
    return alpha + beta * (n + 1)  # line 9


def up_trigger(
    duration: float, history: Sequence[float], slo: float, queue: float, threshold: float
) -> bool:
    """Alg. 1: scale up when od > o_slo (line 2) or the trend predicts it (line 10), and only
    when more than scalingThreshold items wait (line 16)."""
    if slo <= 0:
        raise LeasingError(f"SLO must be positive, got {slo}")
    upscaling = duration > slo  # lines 2-4
    if not upscaling and len(history) >= 2:
        upscaling = predicted_duration(history) > slo  # lines 5-12
    return upscaling and queue > threshold  # lines 13-19


# ----------------------------------------------------------------------------- Algorithm 2
def host_suitability(cluster: Cluster, host_id: str, operator: str, settings: BTUSettings) -> float:
    """Alg. 2: -1 when the host cannot take one more instance; otherwise lower is better."""
    host = cluster.host(host_id)
    cpu_free, mem_free = cluster.free_raw(host_id)
    d = cluster.demand(operator)
    feasibility = min(cpu_free / d.cpu_shares, mem_free / d.memory_mb)  # line 2
    if feasibility < 1:  # lines 3-5
        return -1.0
    remaining_cpu = cpu_free - d.cpu_shares  # line 6
    remaining_mem = mem_free - d.memory_mb  # line 7
    difference = abs(remaining_cpu / host.kind.cpu_shares - remaining_mem / host.kind.memory_mb)
    suitability = difference / feasibility  # lines 8-9
    cached = operator in host.images
    if cached == (settings.cache_favours is CacheFavours.CACHED):  # lines 10-12
        suitability *= settings.cache_factor
    return suitability


def select_host(
    cluster: Cluster, operator: str, settings: BTUSettings, exclude: frozenset[str] = frozenset()
) -> str | None:
    """Upscaling procedure (Fig. 4), first step: the feasible host with the lowest Alg. 2 value."""
    best, best_value = None, math.inf
    for h in cluster.hosts:
        if h.host_id in exclude:
            continue
        value = host_suitability(cluster, h.host_id, operator, settings)
        if 0 <= value < best_value:
            best, best_value = h.host_id, value
    return best


# ----------------------------------------------------------------------------- Algorithm 3
@dataclass(frozen=True)
class OperatorStatus:
    """What Alg. 3 reads about one operator type."""

    instances: int  # o#
    duration: float  # o_d
    slo: float  # o_slo
    scalings: int  # o_s, up and down
    queue: float  # o_queue


@dataclass(frozen=True)
class Utility:
    """Alg. 3's terms and their weighted sum (line 13); -1 when o# < 2 (lines 2-4)."""

    instances: float
    queue_load: float
    delay: float
    scalings: float
    value: float


def operator_utility(
    operator: str, status: Mapping[str, OperatorStatus], settings: BTUSettings
) -> Utility:
    """Alg. 3: suitability of `operator` for downscaling; higher is better, negative forbids it."""
    if operator not in status:
        raise LeasingError(f"Alg. 3: no status for operator {operator!r}")
    s = status[operator]
    if s.instances < 2:  # lines 2-4
        return Utility(0.0, 0.0, 0.0, 0.0, -1.0)
    counts = [x.instances for x in status.values()]
    lo, hi = min(counts), max(counts)
    instances = (s.instances - lo) / (hi - lo) if hi > lo else 0.0  # line 5 (0 when all equal)
    delay = s.duration / s.slo * (1 + settings.penalty)  # line 6
    total = sum(x.scalings for x in status.values())
    scalings = s.scalings / total if total > 0 else 0.0  # line 7
    queue_load = settings.queue_load if s.queue < 1 else 0.0  # lines 8-12
    value = (
        1
        + settings.w1 * instances
        + settings.w2 * queue_load
        - settings.w3 * delay
        - settings.w4 * scalings
    )  # line 13
    return Utility(instances, queue_load, delay, scalings, value)


def best_downscale(
    status: Mapping[str, OperatorStatus], settings: BTUSettings, exclude: str | None = None
) -> str | None:
    """The operator type with the highest positive Alg. 3 utility (None when none is positive)."""
    best, best_value = None, 0.0
    for op in status:
        if op == exclude:
            continue
        value = operator_utility(op, status, settings).value
        if value > best_value:
            best, best_value = op, value
    return best


# ----------------------------------------------------------------------------- release procedure
@dataclass(frozen=True)
class ReleaseDecision:
    """Fig. 5 for one host: release (stopping and migrating its instances) or prolong."""

    host_id: str
    release: bool
    stop: tuple[str, ...] = ()
    migrate: tuple[Placement, ...] = ()


def release_procedure(
    cluster: Cluster,
    host_id: str,
    status: Mapping[str, OperatorStatus],
    settings: BTUSettings,
    exclude: frozenset[str] = frozenset(),
) -> ReleaseDecision:
    """Fig. 5, phase 1 (simulation): mark instances of types with a positive Alg. 3 utility for
    release (at most `release_share` of the type's instances, at least one), plan a migration of
    every other instance with the upscaling procedure on the other hosts (`exclude` and `host_id`
    omitted); prolong the host when an instance fits nowhere."""
    on_host = cluster.on_host(host_id)
    stop: list[str] = []
    keep = []
    for op in sorted({i.operator for i in on_host}):
        mine = [i for i in on_host if i.operator == op]
        n_stop = 0
        if operator_utility(op, status, settings).value > 0:
            cap = max(1, math.floor(settings.release_share * status[op].instances))
            n_stop = min(len(mine), cap)
        stop += [i.instance_id for i in mine[:n_stop]]
        keep += mine[n_stop:]
    sim = Cluster(cluster.hosts, cluster.instances, cluster.demands, cluster.next_id)
    sim = _without(sim, {i.instance_id for i in on_host})
    moves = []
    skip = exclude | {host_id}
    for inst in keep:
        target = select_host(sim, inst.operator, settings, skip)
        if target is None:
            return ReleaseDecision(host_id, release=False)
        sim = _with_placeholder(sim, inst.operator, target)
        moves.append(Placement(inst.operator, target, migrated_from=inst.instance_id))
    stops = tuple(stop) + tuple(m.migrated_from for m in moves if m.migrated_from)
    return ReleaseDecision(host_id, release=True, stop=stops, migrate=tuple(moves))


def _without(cluster: Cluster, ids: set[str]) -> Cluster:
    kept = tuple(i for i in cluster.instances if i.instance_id not in ids)
    return Cluster(cluster.hosts, kept, cluster.demands, cluster.next_id)


def _with_placeholder(cluster: Cluster, operator: str, host_id: str) -> Cluster:
    inst = Instance(f"sim{cluster.next_id}", operator, host_id, ready_at=math.inf)
    return Cluster(cluster.hosts, (*cluster.instances, inst), cluster.demands, cluster.next_id + 1)
