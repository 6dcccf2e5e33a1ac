"""Host layer: BTU billing, the order a plan is applied in, and the room rule."""

import pytest

from elastream.leasing.hosts import Host, HostType, LeasingError, billed_btus, lease_cost
from elastream.leasing.provider import HostProvider, InMemoryProvider
from reproductions.btu.cluster import Cluster, Demand, LeasePlan, Placement, Timing, apply_plan

KIND = HostType(cores=4, memory_mb=7168, btu_s=600, price=1.0)
BIG = Demand(2048, 3000)  # two fit on a host by CPU and memory
SMALL = Demand(100, 500)


def _cluster() -> Cluster:
    return Cluster(demands={"big": BIG, "small": SMALL})


def test_a_started_btu_is_paid_in_full():
    assert billed_btus(0, 0, 600) == 1  # leasing pays the first BTU up front
    assert billed_btus(0, 60, 600) == 1  # released one minute in: still one BTU
    assert billed_btus(0, 600, 600) == 1  # released exactly at the end
    assert billed_btus(0, 601, 600) == 2  # one second into the next
    assert billed_btus(100, 1900, 600) == 3
    assert lease_cost(0, 1250, HostType(btu_s=600, price=3.0)) == 9.0


def test_billing_rejects_bad_input():
    with pytest.raises(LeasingError, match="before it starts"):
        billed_btus(10, 5, 600)
    with pytest.raises(LeasingError, match="BTU length"):
        billed_btus(0, 5, 0)


def test_btu_clock_and_release_window():
    h = Host("h", KIND, lease_start=100, ready_at=130)
    assert h.btu_end(100) == 700
    assert h.btu_end(701) == 1300
    assert h.remaining_btu(670) == 30
    assert h.in_release_window(670, 0.05)  # last 5 % of 600 s = 30 s
    assert not h.in_release_window(669, 0.05)


def test_plan_leases_before_it_places():
    plan = LeasePlan(lease=("h1",), place=(Placement("big", "h1"), Placement("big", "h1")))
    out = apply_plan(_cluster(), plan, now=10, kind=KIND, timing=Timing(host_boot_s=40))
    assert [h.host_id for h in out.leased] == ["h1"]
    assert len(out.cluster.on_host("h1")) == 2
    # an instance starts once its host is booted: boot 40 s + start (no download configured)
    assert {i.ready_at for i in out.started} == {10 + 40 + Timing().start_cached_s}


def test_an_instance_only_runs_where_a_leased_host_has_room():
    full = apply_plan(
        _cluster(), LeasePlan(lease=("h1",), place=(Placement("big", "h1"),) * 2), 0, KIND
    ).cluster
    with pytest.raises(LeasingError, match="no room for big"):
        apply_plan(full, LeasePlan(place=(Placement("big", "h1"),)), 0, KIND)
    with pytest.raises(LeasingError, match="unknown host 'h9'"):
        apply_plan(full, LeasePlan(place=(Placement("small", "h9"),)), 0, KIND)


def test_plan_stops_before_it_places_so_a_migration_reuses_the_room():
    c = apply_plan(
        _cluster(), LeasePlan(lease=("h1", "h2"), place=(Placement("big", "h1"),) * 2), 0, KIND
    )
    victim = c.cluster.on_host("h1")[0].instance_id
    plan = LeasePlan(
        stop=(victim,), place=(Placement("big", "h2", migrated_from=victim),), release=()
    )
    out = apply_plan(c.cluster, plan, 5, KIND)
    assert out.migrations == 1
    assert len(out.cluster.on_host("h1")) == 1 and len(out.cluster.on_host("h2")) == 1


def test_counts_are_set_after_placement_and_cannot_exceed_placed_instances():
    plan = LeasePlan(lease=("h1",), place=(Placement("small", "h1"),) * 3, counts={"small": 2})
    out = apply_plan(_cluster(), plan, 0, KIND).cluster
    assert [i.active for i in out.of_operator("small")] == [True, True, False]
    with pytest.raises(LeasingError, match="'small': 4 active instances requested, 3 placed"):
        apply_plan(out, LeasePlan(counts={"small": 4}), 0, KIND)


def test_release_comes_last_and_needs_an_empty_host():
    c = apply_plan(_cluster(), LeasePlan(lease=("h1",), place=(Placement("small", "h1"),)), 0, KIND)
    only = c.cluster.on_host("h1")[0].instance_id
    with pytest.raises(LeasingError, match="instances still run on it"):
        apply_plan(c.cluster, LeasePlan(release=("h1",)), 0, KIND)
    out = apply_plan(c.cluster, LeasePlan(stop=(only,), release=("h1",)), 60, KIND)
    assert out.cluster.hosts == () and [h.host_id for h in out.released] == ["h1"]
    with pytest.raises(LeasingError, match="it is released"):
        apply_plan(
            c.cluster,
            LeasePlan(stop=(only,), place=(Placement("small", "h1"),), release=("h1",)),
            0,
            KIND,
        )


def test_image_cache_shortens_the_second_start():
    timing = Timing(host_boot_s=0, start_cached_s=5, image_download_s={"small": 20})
    first = apply_plan(
        _cluster(), LeasePlan(lease=("h1",), place=(Placement("small", "h1"),)), 0, KIND, timing
    )
    second = apply_plan(
        first.cluster, LeasePlan(place=(Placement("small", "h1"),)), 100, KIND, timing
    )
    assert first.started[0].ready_at == 25  # download + start
    assert second.started[0].ready_at == 105  # cached


def test_unknown_operator_and_bad_demand_are_named():
    with pytest.raises(LeasingError, match="unknown operator 'nope'"):
        apply_plan(_cluster(), LeasePlan(lease=("h1",), place=(Placement("nope", "h1"),)), 0, KIND)
    with pytest.raises(LeasingError, match="demand must be positive"):
        Demand(-1, 10)


def test_in_memory_provider_bills_per_started_btu():
    p = InMemoryProvider(boot_s=30)
    assert isinstance(p, HostProvider)
    h = p.lease("a", KIND, now=0)
    assert h.ready_at == 30
    p.lease("b", KIND, now=100)
    assert p.cost(now=599) == 2.0  # a: 1st BTU; b: 1st
    assert p.cost(now=650) == 3.0  # a's 2nd BTU started at 600
    rec = p.release("a", now=650)
    assert rec.cost == 2.0
    assert [x.host_id for x in p.hosts(650)] == ["b"]
    with pytest.raises(LeasingError, match="unknown host 'a'"):
        p.release("a", now=700)


def test_prolong_names_a_leased_host_that_is_not_released():
    c = apply_plan(_cluster(), LeasePlan(lease=("h1",)), 0, KIND).cluster
    assert apply_plan(c, LeasePlan(prolong=("h1",)), 570, KIND).cluster.hosts == c.hosts
    with pytest.raises(LeasingError, match="both released and prolonged"):
        apply_plan(c, LeasePlan(release=("h1",), prolong=("h1",)), 570, KIND)
    with pytest.raises(LeasingError, match="unknown host 'h2'"):
        apply_plan(c, LeasePlan(prolong=("h2",)), 570, KIND)
