"""How much a perfect forecaster could save against the fleet sized for the peak (the slack)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from elastream.leasing.hosts import HostType
from reproductions.btu.algorithms import select_host
from reproductions.btu.cluster import Cluster
from reproductions.btu.config import BTUSettings
from reproductions.btu.patterns import Load, machines
from reproductions.btu.policies import Draft
from reproductions.btu.topology import Topology


def hosts_for(
    topology: Topology, level: float, service_rate: np.ndarray, utilisation: float, kind: HostType
) -> int:
    """Hosts that `level` machines need: each operator's steady rate at `utilisation` of its
    instances, packed by Alg. 2 as static_peak packs the peak."""
    rates = topology.steady_rates(float(level))
    draft = Draft(Cluster(demands=topology.demands()), kind, 0.0)
    for k, op in enumerate(topology.names):
        for _ in range(max(1, math.ceil(rates[k] / (service_rate[k] * utilisation) - 1e-9))):
            host = select_host(draft.cluster, op, BTUSettings())
            draft.put(op, host if host is not None else draft.new_host())
    return len(draft.cluster.hosts)


def oracle_btus(need: np.ndarray, times_s: np.ndarray, btu_s: float) -> int:
    """BTUs paid by a perfect forecaster that keeps `need[t]` hosts at every time, leases a host
    when it is first needed and, at the end of each of its BTUs, prolongs it only when it is
    needed during the next BTU (the rule of the lease-ahead policy). Host j (1-based) is needed
    while need >= j."""
    total = 0
    for j in range(1, int(need.max(initial=0)) + 1):
        busy = times_s[need >= j]
        end = -math.inf
        for t in busy:
            if t < end:
                continue
            total += 1  # a new lease at t
            end = t + btu_s
            while ((busy >= end) & (busy < end + btu_s)).any():
                total += 1  # prolonged: needed within the next BTU
                end += btu_s
    return total


@dataclass(frozen=True)
class Slack:
    """Static-peak BTUs against the perfect forecaster's on one pattern and BTU length."""

    static_btus: int
    oracle_btus: int

    @property
    def btus(self) -> int:
        return self.static_btus - self.oracle_btus


def pattern_slack(
    pattern: Load,
    topology: Topology,
    service_rate: np.ndarray,
    kind: HostType,
    duration_s: float,
    step_s: float = 15.0,
    utilisation: float = 0.9,
) -> Slack:
    """The slack of `pattern` for hosts of `kind` over `duration_s`: the fleet sized for the
    peak pays its hosts every BTU; the perfect forecaster pays `oracle_btus`."""
    times = np.arange(0.0, duration_s, step_s)
    levels = np.ceil(machines(pattern, times) * 20 - 1e-9) / 20  # a trace's levels: up to 0.05
    per_level = {
        m: hosts_for(topology, m, service_rate, utilisation, kind) for m in set(levels.tolist())
    }
    need = np.array([per_level[m] for m in levels.tolist()])
    static = int(need.max()) * math.ceil(duration_s / kind.btu_s - 1e-9)
    return Slack(static, oracle_btus(need, times, kind.btu_s))
