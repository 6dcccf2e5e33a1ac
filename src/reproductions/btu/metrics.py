"""The metrics of the paper's Tables 3-6: BTUs, VM and instance operations, SLA compliance, cost."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reproductions.btu.config import SimSettings


@dataclass
class Counters:
    """Running counts of one simulation (internal to a run)."""

    ops: int
    paid_btus: int = 0
    vm_up: int = 0
    vm_prolong: int = 0
    vm_down: int = 0
    instance_up: int = 0
    instance_down: int = 0
    migrations: int = 0
    scalings: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    delayed_since: list[float | None] = field(default_factory=list)
    elapsed: float = 0.0
    adapt_times: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.scalings = np.zeros(self.ops, dtype=int)
        self.delayed_since = [None] * self.ops

    def track_delays(self, od: np.ndarray, slo: np.ndarray, queue: np.ndarray, step: float) -> None:
        """Time to adapt: a delay episode of an operator type starts when o_d exceeds o_slo with
        items queued, and ends at the first monitoring point with o_d back within o_slo."""
        self.elapsed += step
        for k in range(self.ops):
            start = self.delayed_since[k]
            if start is None and od[k] > slo[k] and queue[k] >= 1:
                self.delayed_since[k] = self.elapsed
            elif start is not None and od[k] <= slo[k]:
                self.adapt_times.append(self.elapsed - start)
                self.delayed_since[k] = None

    def close(self) -> None:
        for k, start in enumerate(self.delayed_since):
            if start is not None:
                self.adapt_times.append(self.elapsed - start)
                self.delayed_since[k] = None


@dataclass(frozen=True)
class RunMetrics:
    """One run's row of Tables 3-6 and the scaling counts."""

    paid_btus: int
    vm_up: int
    vm_prolong: int
    vm_down: int
    compliance: tuple[float, float, float]  # real-time, near real-time, relaxed
    resource_cost: float
    total_cost: tuple[float, float, float]  # resource cost + penalty per delayed item, per level
    time_to_adapt_s: float
    instance_up: int
    instance_down: int
    migrations: int
    items: float
    peak_hosts: int
    re_leases: int = 0  # leases within one BTU after a released host's paid end (a defect)
    trace: tuple[tuple[float, int, int, float], ...] = ()  # (t, hosts, instances, machines)


def finish_metrics(
    c: Counters,
    ok: np.ndarray,
    total: float,
    settings: SimSettings,
    names: tuple[str, ...],
    trace: list[tuple[float, int, int, float]],
    re_leases: int = 0,
) -> RunMetrics:
    """Close the counters: compliance = share of items within k x o_slo; total cost per level =
    paid BTUs x price + penalty x items delayed beyond that level; `re_leases` counted over the
    run's leases and releases."""
    c.close()
    share = ok / total if total > 0 else np.ones_like(ok)
    resource = c.paid_btus * settings.price
    delayed = total - ok
    return RunMetrics(
        paid_btus=c.paid_btus,
        vm_up=c.vm_up,
        vm_prolong=c.vm_prolong,
        vm_down=c.vm_down,
        compliance=tuple(float(x) for x in share),
        resource_cost=float(resource),
        total_cost=tuple(float(resource + settings.penalty * d) for d in delayed),
        time_to_adapt_s=float(np.mean(c.adapt_times)) if c.adapt_times else 0.0,
        instance_up=c.instance_up,
        instance_down=c.instance_down,
        migrations=c.migrations,
        items=float(total),
        peak_hosts=max((h for _, h, _, _ in trace), default=0),
        re_leases=re_leases,
        trace=tuple(trace),
    )
