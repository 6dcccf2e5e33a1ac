"""Our forecast policy: sizing from the forecast rate, and prolong-or-release by the forecast."""

from dataclasses import replace

import numpy as np

from elastream.leasing.hosts import HostType
from reproductions.btu.algorithms import OperatorStatus
from reproductions.btu.cluster import Cluster, Demand, LeasePlan, Placement, apply_plan
from reproductions.btu.policies import ForecastPolicy, Observation

KIND = HostType(cores=4, memory_mb=7168, btu_s=600, price=1.0)


def _cluster() -> Cluster:
    c = Cluster(demands={"a": Demand(1024, 1000)})
    place = (Placement("a", "h1"), Placement("a", "h2"), Placement("a", "h2"))
    return apply_plan(c, LeasePlan(lease=("h1", "h2"), place=place), 0, KIND).cluster


def _obs(rates: list[float], queue: float = 0.0) -> Observation:
    # one instance serves 10 items/s; the policy sizes for 90 % utilisation
    return Observation(
        now=570,
        monitor_s=15,
        status={"a": OperatorStatus(3, 0.5, 1.0, 0, queue)},
        history={"a": (0.5, 0.5)},
        arrivals=np.array(rates, dtype=float)[:, None],
        service_rate={"a": 10.0},
    )


def test_release_when_the_forecast_needs_one_instance():
    plan = ForecastPolicy(KIND).release(_obs([5.0] * 40), _cluster(), ("h2",))
    # peak 5/s -> ceil(5 / 9) = 1 instance kept: both on h2 are surplus, h1's stays
    assert plan.release == ("h2",) and len(plan.stop) == 2 and plan.place == ()


def test_migrate_what_is_needed_and_release():
    plan = ForecastPolicy(KIND).release(_obs([15.0] * 40), _cluster(), ("h2",))
    # flat 15/s (no trend) -> 2 needed: one on h2 stops, the other migrates to h1 (room for 3 more)
    assert plan.release == ("h2",)
    assert len(plan.stop) == 2 and [p.host_id for p in plan.place] == ["h1"]
    assert plan.place[0].migrated_from in plan.stop


def test_prolong_when_the_last_btu_peak_needs_the_host():
    c = apply_plan(
        _cluster(), LeasePlan(place=(Placement("a", "h1"),) * 3), 0, KIND
    ).cluster  # h1 full
    plan = ForecastPolicy(KIND).release(_obs([5.0] * 30 + [50.0] + [5.0] * 9), c, ("h2",))
    # a 50/s peak within the last BTU: ceil(50 / 9) = 6 = all instances: nothing can go
    assert plan.prolong == ("h2",) and plan.release == () and plan.stop == ()


def test_provision_sizes_for_the_forecast_at_most_two_per_interval():
    plan = ForecastPolicy(KIND).provision(_obs([20.0] * 40), _cluster())
    # 20/s -> ceil(20 / 9) = 3 = current: nothing to do
    assert plan.empty
    plan = ForecastPolicy(KIND).provision(_obs([20.0] * 39 + [60.0]), _cluster())
    # last rate 60/s -> 7 needed, 3 placed: +2 this interval (max_step), on h1 (room for 3)
    assert [p.host_id for p in plan.place] == ["h1", "h1"] and plan.lease == ()


def test_static_peak_leases_for_the_peak_once_and_fills_the_hosts():
    from reproductions.btu.policies import StaticPeakPolicy

    policy = StaticPeakPolicy(KIND, {"a": 60.0})  # 60/s at 10/s each, 90 %: 7 instances
    first = _obs([5.0])
    c = Cluster(demands={"a": Demand(1024, 1000)})
    c = apply_plan(c, LeasePlan(lease=("h1",)), 0, KIND).cluster
    plan = policy.provision(replace(first, now=60), c)
    assert len(plan.lease) == 1  # 4 per host by CPU: h1 + one more host
    assert len(plan.place) == 8  # 7 needed, and the eighth fills the paid room
    later = apply_plan(c, plan, 60, KIND).cluster
    assert policy.provision(replace(first, now=120), later).empty
    assert policy.release(first, later, ("h1",)).prolong == ("h1",)
