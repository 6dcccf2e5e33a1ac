"""The host planner of a slot-leased engine (Spark executors as hosts): lease on demand, release
only in the last part of a BTU and only when the rest hold the decision, cap at the slots up."""

import pytest
from support.builders import linear_pipeline

from elastream.config import make_config
from elastream.control.controller import Controller
from elastream.control.hosting import EXECUTOR, SlotHosts, fit
from elastream.control.mape import run_mape
from elastream.control.policy import Decision, Lease
from elastream.leasing.hosts import Host, HostType
from elastream.model.pipeline import pipeline_from_dict
from elastream.runner.engines import build_engine
from elastream.runner.workload import prepare_workload

KIND = HostType(cores=2, btu_s=60.0, price=1.0)
PLANNER = SlotHosts(KIND, min_hosts=1, max_hosts=3, release_window=0.05)
FLOORS = {"a": 1, "b": 1}


def host(name: str, start: float, ready: float | None = None) -> Host:
    return Host(name, KIND, lease_start=start, ready_at=start if ready is None else ready)


def test_a_decision_beyond_the_slots_up_leases_hosts_and_is_capped_until_they_boot():
    plan = PLANNER.plan(Decision.of({"a": 3, "b": 2}), [host("h1", 0.0)], 10.0, FLOORS)
    assert plan.leases == (Lease(EXECUTOR, 2),)  # 5 replicas need 3 hosts of 2 slots
    assert plan.replicas.as_dict() == {"a": 1, "b": 1}  # only h1's 2 slots are up
    assert "capped at 1 by 2 host slots" in plan.replicas.reason("a")

    booting = [host("h1", 0.0), host("h2", 10.0, ready=float("inf")), host("h3", 10.0, 14.0)]
    later = PLANNER.plan(Decision.of({"a": 3, "b": 2}), booting, 13.0, FLOORS)
    assert later.leases == ()  # already leased, two are still booting
    assert later.replicas.as_dict() == {"a": 1, "b": 1}
    up = PLANNER.plan(Decision.of({"a": 3, "b": 2}), booting, 15.0, FLOORS)
    assert up.replicas.as_dict() == {"a": 2, "b": 2}  # h1 and h3 up: 4 slots


def test_never_more_than_max_hosts():
    plan = PLANNER.plan(Decision.of({"a": 9, "b": 9}), [host("h1", 0.0)], 1.0, FLOORS)
    assert plan.leases == (Lease(EXECUTOR, 2),)


@pytest.mark.parametrize(
    ("now", "released"),
    [
        (30.0, ()),  # mid-BTU: paid until 60 anyway, kept
        (56.0, ()),  # 4 s left: outside the last 5 % (3 s)
        (57.5, ("h2",)),  # inside h2's window
        (117.5, ("h2",)),  # the window of its second BTU
    ],
)
def test_a_surplus_host_is_released_only_in_the_last_part_of_its_btu(now, released):
    hosts = [host("h1", 0.0 - 20.0), host("h2", 0.0)]  # h1's BTU ends at 40, 100, ...
    plan = PLANNER.plan(Decision.of({"a": 1, "b": 1}), hosts, now, FLOORS)
    assert tuple(h for lease in plan.leases for h in lease.hosts) == released
    if released:
        assert plan.leases == (Lease(EXECUTOR, -1, released),)


def test_a_window_narrower_than_the_interval_is_not_skipped_by_every_interval():
    # BTUs end at 63.5 and 64, 123.5 and 124, ...: their 3-s windows hold no 5-s interval's end,
    # in any BTU. The last interval's end before a BTU ends (60, 120, ...) releases the surplus.
    hosts = [host("h1", 3.5), host("h2", 4.0)]
    ends = [5.0 * k for k in range(1, 49)]  # four minutes of 5-s intervals
    one = Decision.of({"a": 1, "b": 1})
    with_interval = [now for now in ends if PLANNER.plan(one, hosts, now, FLOORS, 5.0).leases]
    assert with_interval == [60.0, 120.0, 180.0, 240.0]
    assert PLANNER.plan(one, hosts, 60.0, FLOORS, 5.0).leases == (Lease(EXECUTOR, -1, ("h1",)),)
    assert not [now for now in ends if PLANNER.plan(one, hosts, now, FLOORS).leases]


def test_the_host_whose_btu_ends_first_goes_first_and_never_below_the_need():
    hosts = [host("h1", 0.0), host("h2", 1.0), host("h3", 1.5)]  # BTUs end 60, 61, 61.5
    plan = PLANNER.plan(Decision.of({"a": 1, "b": 1}), hosts, 59.9, FLOORS)
    assert plan.leases == (Lease(EXECUTOR, -2, ("h1", "h2")),)  # 2 replicas: 1 host is enough
    assert plan.replicas.as_dict() == {"a": 1, "b": 1}
    busy = PLANNER.plan(Decision.of({"a": 2, "b": 2}), hosts, 59.9, FLOORS)
    assert busy.leases == (Lease(EXECUTOR, -1, ("h1",)),)  # 4 replicas need two of them


def test_min_hosts_are_kept_even_in_their_window():
    plan = PLANNER.plan(Decision.of({"a": 1, "b": 1}), [host("h1", 0.0)], 59.0, FLOORS)
    assert plan.leases == ()


def test_fit_trims_the_largest_operator_first_and_never_below_a_floor():
    decision = Decision.of({"a": 4, "b": 2, "c": 3}, {"a": "ds2"})
    assert fit(decision, 9, {}) is decision
    trimmed = fit(decision, 6, {})
    assert trimmed.as_dict() == {"a": 2, "b": 2, "c": 2}
    assert trimmed.reason("a").startswith("ds2; capped at 2")
    assert fit(decision, 2, {"a": 2, "b": 2, "c": 1}).as_dict() == {"a": 2, "b": 2, "c": 1}


def test_a_lease_names_what_it_releases():
    with pytest.raises(ValueError, match="names every host"):
        Lease(EXECUTOR, -2, ("h1",))
    with pytest.raises(ValueError, match="named by the engine"):
        Lease(EXECUTOR, 1, ("h1",))
    with pytest.raises(ValueError, match="count 0"):
        Lease(EXECUTOR, 0)
    with pytest.raises(ValueError, match="min_hosts"):
        SlotHosts(KIND, min_hosts=3, max_hosts=2)


def test_a_run_with_hosts_on_an_engine_without_them_is_refused(tmp_path):
    pipeline = pipeline_from_dict(linear_pipeline(2))
    config = make_config(out=tmp_path, duration=5.0)
    workload = prepare_workload(config, pipeline)
    engine = build_engine(pipeline, config, workload, engine="sim")
    with pytest.raises(TypeError, match="cannot lease hosts"):
        run_mape(engine, Controller.build("static"), stages=[PLANNER])
