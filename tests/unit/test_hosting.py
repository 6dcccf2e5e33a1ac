"""The host planner of a slot-leased engine (Spark executors as hosts): lease on demand, release
only in the last part of a BTU and only when the rest held every decision of the BTU before, or
will by the lulls seen (or, by VISP's rule, hold this interval's), cap at the slots up;
re-leases counted."""

import pytest
from support.builders import linear_pipeline, snapshot

from elastream.config import make_config
from elastream.control.controller import Controller
from elastream.control.features import LeasedHosts
from elastream.control.hosting import EXECUTOR, SlotHosts, fit
from elastream.control.mape import run_mape
from elastream.control.policy import Decision, Lease, Plan
from elastream.leasing.hosts import Host, HostType, re_leases
from elastream.leasing.needs import NeedRecord
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


class TwoHosts:
    """An engine that only lists its leased hosts (what `SlotHosts.refine` reads)."""

    features = (LeasedHosts,)

    def __init__(self, hosts: list[Host]) -> None:
        self.pipeline = pipeline_from_dict(linear_pipeline(2))
        self.leased = hosts

    def hosts(self) -> tuple[Host, ...]:
        return tuple(self.leased)

    def lease(self, leases) -> None:
        raise AssertionError("the test enacts nothing")

    def place(self, placement) -> None:
        raise AssertionError("the test enacts nothing")


def released_at(rule: str, replicas: dict[float, int], ends: list[float], default: int = 2):
    """The interval ends at which a stage of `rule` releases one of two hosts (both leased at 0,
    up, BTU 60 s, 2 slots each: 2 replicas need one host, 4 need both; nothing is enacted, so
    both stay listed), the decision `replicas[t]` replicas (`default` where not given)."""
    engine = TwoHosts([host("h1", 0.0), host("h2", 0.0)])
    stage = SlotHosts(KIND, min_hosts=1, max_hosts=3, release=rule)
    stage.begin(engine)
    out = []
    for t in ends:
        decision = Decision.of({"op1": replicas.get(t, default) - 1, "op2": 1})
        plan = stage.refine(Plan(decision), snapshot(t=t, interval_s=5.0), engine)
        if any(lease.count < 0 for lease in plan.leases):
            out.append(t)
    return out


ENDS = [5.0 * k for k in range(1, 49)]  # four minutes of 5-s intervals; BTUs end at 60, 120, ...


def test_a_host_needed_within_the_btu_before_is_kept_for_the_next():
    # Both hosts needed at 80 and 85 s only. The windows (the last interval before a BTU ends):
    # 55-60, 115-120, 175-180, 235-240 s. VISP's rule releases in every one; the last BTU's rule
    # not at 55 (its record spans 0-55 s, less than a BTU), at 60 (0-60 s: one host), not at
    # 115 or 120 (the BTUs 55-115 and 60-120 hold 80 s), again from 175 (115-175 s: one host).
    burst = {80.0: 4, 85.0: 4}
    assert released_at("now", burst, ENDS) == [55.0, 60.0, 115.0, 120.0, 175.0, 180.0, 235.0, 240.0]
    assert released_at("last_btu", burst, ENDS) == [60.0, 175.0, 180.0, 235.0, 240.0]


def test_a_dip_in_the_release_window_releases_no_host_the_btu_needed():
    # Both hosts needed all along but in the windows' intervals (one host there): VISP's rule
    # releases at the dip; the last BTU's rule keeps the host whose BTU needed it.
    dips = {t: 2 for t in (55.0, 60.0, 115.0, 120.0, 175.0, 180.0, 235.0, 240.0)}
    assert released_at("now", dips, ENDS, default=4)[:1] == [55.0]
    assert released_at("last_btu", dips, ENDS, default=4) == []


def test_a_host_is_released_in_a_lulls_first_window_when_the_lulls_seen_outlast_the_next_btu():
    # Both hosts needed at 95-150 s only (start 90 s): the lull before lasted 90 s. VISP's rule
    # releases in every window of the lulls; the last BTU's rule waits until a whole BTU has not
    # needed the host (60 s: 0-60; 235 s: 175-235); the lulls rule also releases at 60 (the
    # lull has lasted a BTU) and at 175, 25 s into the lull after 150, since the lull seen (90 s)
    # outlasts 25 + 5 (the window's rest: the 5-s interval, wider than 5 % of 60) + 60, not at
    # 180 (90 < 30 + 65), and again from 235 (the lull has lasted 85 s, more than a BTU).
    level = {5.0 * k: 4 for k in range(19, 31)}
    assert released_at("now", level, ENDS) == [55.0, 60.0, 175.0, 180.0, 235.0, 240.0]
    assert released_at("last_btu", level, ENDS) == [60.0, 235.0, 240.0]
    assert released_at("lulls", level, ENDS) == [60.0, 175.0, 235.0, 240.0]


def test_no_host_is_released_in_lulls_shorter_than_the_next_btu():
    # Both hosts needed for 35 s, then one for 35 s, and again (busy 40-70, 110-140, 180-210 s):
    # VISP's rule releases in the windows that fall in a lull (175, 235, 240 s) and the host is
    # needed again within 5-40 s; the lulls seen (35 s) never outlast a window's rest and a BTU.
    bursts = {5.0 * k: 4 for k in (*range(8, 15), *range(22, 29), *range(36, 43))}
    assert released_at("now", bursts, ENDS) == [175.0, 235.0, 240.0]
    assert released_at("lulls", bursts, ENDS) == []
    assert released_at("last_btu", bursts, ENDS) == []


def test_the_need_record_forecasts_by_the_lulls_it_has_seen():
    def record(memory_btus: int, busy: tuple[int, ...] = (100, 110, 250)) -> NeedRecord:
        r = NeedRecord(btu_s=60.0, memory_btus=memory_btus)
        for end in range(10, 310, 10):  # 10-s intervals; 3 hosts in those ending at `busy`
            r.add(float(end), 10.0, 3 if end in busy else 1)
        return r

    # one host: busy 90-110 and 240-250; lulls seen 0-90 (90 s) and 110-240 (130 s); at 300 s
    # the current one is 50 s old, less than a BTU: it must last 50 + the horizon more
    assert record(10).lulls_allow(300.0, 1, horizon_s=40.0)  # 90 >= 50 + 40
    assert not record(10).lulls_allow(300.0, 1, horizon_s=45.0)  # 90 < 50 + 45
    assert record(10).lulls_allow(300.0, 3, horizon_s=1e6)  # never needed more than 3: 300 s
    # a memory of two BTUs keeps 180-300 s: the lull seen counts from 180 (60 s, cut: shorter)
    assert record(2).lulls_allow(300.0, 1, horizon_s=10.0)  # 60 >= 50 + 10
    assert not record(2).lulls_allow(300.0, 1, horizon_s=15.0)
    # a dip below the current lull's age says nothing of it: 3 hosts also at 200 s makes a 40-s
    # lull (200-240) and ends the 90-s one (110-190); at 300 s (age 50) the lulls that reached
    # 50 s are 0-90 and 110-190 (80 s): 80 >= 50 + 30, not >= 50 + 35
    dip = record(10, busy=(100, 110, 200, 250))
    assert dip.lulls_allow(300.0, 1, horizon_s=30.0)
    assert not dip.lulls_allow(300.0, 1, horizon_s=35.0)
    # no lull ended yet and the current one younger than a BTU: no forecast, no release
    young = NeedRecord(btu_s=60.0)
    young.add(50.0, 50.0, 1)
    assert not young.lulls_allow(50.0, 1, horizon_s=0.0)


def test_the_need_record_forecasts_by_the_most_of_the_last_btu():
    record = NeedRecord(btu_s=60.0)
    for t, need in [(5.0, 1), (10.0, 3), (40.0, 2), (60.0, 1)]:
        record.add(t, 5.0, need)
    assert record.peak(55.0) is None  # the record starts at 0: less than one BTU at 55 s
    assert record.peak(60.0) == 3
    record.add(75.0, 5.0, 1)  # 10 s is now more than a BTU ago (75 - 60 = 15)
    assert record.peak(75.0) == 2


def test_a_lease_within_a_btu_after_a_released_hosts_paid_end_is_a_re_lease():
    # released at 58 (leased at 0: paid until 60) and at 130 (leased at 10: paid until 130)
    released = [(0.0, 58.0), (10.0, 130.0)]
    assert re_leases(released, [0.0, 10.0], 60.0) == 0  # the leases before the releases
    assert re_leases(released, [0.0, 10.0, 119.0], 60.0) == 1  # 119 < 60 + 60
    assert re_leases(released, [0.0, 10.0, 120.0], 60.0) == 0  # a BTU after the paid end
    assert re_leases(released, [0.0, 10.0, 70.0, 140.0, 150.0], 60.0) == 2  # each release once
