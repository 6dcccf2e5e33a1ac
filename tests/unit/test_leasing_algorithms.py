"""Alg. 1-3 and the release procedure on hand-worked inputs."""

import pytest

from elastream.leasing.hosts import HostType, LeasingError
from reproductions.btu.algorithms import (
    OperatorStatus,
    best_downscale,
    host_suitability,
    operator_utility,
    predicted_duration,
    release_procedure,
    select_host,
    up_trigger,
)
from reproductions.btu.cluster import Cluster, Demand, LeasePlan, Placement, apply_plan
from reproductions.btu.config import BTUSettings, CacheFavours

KIND = HostType(cores=4, memory_mb=7168, btu_s=600, price=1.0)  # 4096 shares
DEFAULT = BTUSettings()


# ------------------------------------------------------------------ Alg. 1
def test_trend_is_the_least_squares_line_at_n_plus_one():
    # (1, 0.5), (2, 0.7), (3, 0.9): mean i = 2, mean od = 0.7, beta = 0.4 / 2 = 0.2,
    # alpha = 0.7 - 0.2 * 2 = 0.3, prediction at 4 = 0.3 + 0.8 = 1.1
    assert predicted_duration([0.5, 0.7, 0.9]) == pytest.approx(1.1)
    # (1, 3), (2, 1), (3, 2), (4, 2): mean i 2.5, mean od 2, num = -1.5 + 0.5 + 0 + 0 = -1,
    # den = 5, beta = -0.2, alpha = 2.5, prediction at 5 = 1.5
    assert predicted_duration([3, 1, 2, 2]) == pytest.approx(1.5)
    with pytest.raises(LeasingError, match="at least 2"):
        predicted_duration([1.0])


def test_up_trigger_needs_a_delay_or_a_rising_trend_and_a_long_queue():
    flat = [0.8, 0.8, 0.8]
    assert up_trigger(1.2, flat, slo=1.0, queue=51, threshold=50)  # line 2: od > o_slo
    assert not up_trigger(1.2, flat, slo=1.0, queue=50, threshold=50)  # line 16: not > 50
    assert up_trigger(0.9, [0.5, 0.7, 0.9], slo=1.0, queue=60, threshold=50)  # trend: 1.1 > 1
    assert not up_trigger(0.9, [0.9, 0.7, 0.5], slo=1.0, queue=60, threshold=50)  # falling
    assert not up_trigger(0.9, flat, slo=1.0, queue=10_000, threshold=50)  # no delay at all


# ------------------------------------------------------------------ Alg. 2
def _one_host(cached: bool = False) -> Cluster:
    c = Cluster(demands={"base": Demand(1024, 1024), "a": Demand(512, 2048)})
    place = (Placement("base", "h1"),) + ((Placement("a", "h1"),) if cached else ())
    return apply_plan(c, LeasePlan(lease=("h1",), place=place), 0, KIND).cluster


def test_host_suitability_by_hand():
    # free 3072 shares / 6144 MB; feasibility = min(3072/512, 6144/2048) = 3; after placing:
    # 2560/4096 = 0.625 CPU, 4096/7168 = 0.571429 memory left; difference 0.053571; / 3
    expected = abs(2560 / 4096 - 4096 / 7168) / 3
    assert host_suitability(_one_host(), "h1", "a", DEFAULT) == pytest.approx(expected)
    assert expected == pytest.approx(0.017857, abs=1e-6)


def test_cache_factor_favours_hosts_with_the_image_by_default():
    c = _one_host(cached=True)  # "a" placed once: its image is cached on h1
    # free now 2560 / 4096: feasibility min(5, 2) = 2; left 2048/4096, 2048/7168
    raw = abs(2048 / 4096 - 2048 / 7168) / 2
    assert host_suitability(c, "h1", "a", DEFAULT) == pytest.approx(raw * 0.01)
    runtime = BTUSettings(cache_favours=CacheFavours.UNCACHED)
    assert host_suitability(c, "h1", "a", runtime) == pytest.approx(raw)
    assert host_suitability(_one_host(), "h1", "a", runtime) == pytest.approx(
        abs(2560 / 4096 - 4096 / 7168) / 3 * 0.01
    )


def test_infeasible_host_is_minus_one_and_select_takes_the_lowest_value():
    c = Cluster(demands={"a": Demand(512, 2048), "fill": Demand(3600, 100)})
    c = apply_plan(c, LeasePlan(lease=("full", "free", "cached")), 0, KIND).cluster
    c = apply_plan(
        c, LeasePlan(place=(Placement("fill", "full"), Placement("a", "cached"))), 0, KIND
    )
    c = c.cluster
    # 4096 - 3600 = 496 shares left: feasibility 496 / 512 < 1 (lines 2-5)
    assert host_suitability(c, "full", "a", DEFAULT) == -1.0
    assert select_host(c, "a", DEFAULT) == "cached"  # the image is there: x 0.01
    assert select_host(c, "a", DEFAULT, exclude=frozenset({"cached"})) == "free"
    assert select_host(c, "a", DEFAULT, exclude=frozenset({"cached", "free"})) is None


# ------------------------------------------------------------------ Alg. 3
STATUS = {
    "A": OperatorStatus(instances=4, duration=2.0, slo=1.0, scalings=3, queue=10),
    "B": OperatorStatus(instances=2, duration=0.5, slo=1.0, scalings=1, queue=0),
    "C": OperatorStatus(instances=1, duration=1.0, slo=1.0, scalings=0, queue=0),
}


def test_operator_utility_terms_by_hand():
    a = operator_utility("A", STATUS, DEFAULT)
    assert a.instances == pytest.approx((4 - 1) / (4 - 1))  # line 5
    assert a.delay == pytest.approx(2.0 / 1.0 * (1 + 0.0001))  # line 6
    assert a.scalings == pytest.approx(3 / 4)  # line 7
    assert a.queue_load == 0  # lines 8-12: items waiting
    assert a.value == pytest.approx(1 + 1 - 2.0002 - 0.75)  # line 13
    b = operator_utility("B", STATUS, DEFAULT)
    assert b.instances == pytest.approx(1 / 3)
    assert b.delay == pytest.approx(0.5 * 1.0001)
    assert b.scalings == pytest.approx(1 / 4)
    assert b.queue_load == 100  # empty queue: QL
    assert b.value == pytest.approx(1 + 1 / 3 + 100 - 0.50005 - 0.25)
    assert operator_utility("C", STATUS, DEFAULT).value == -1  # lines 2-4: o# < 2


def test_operator_utility_weights_each_term():
    base = operator_utility("A", STATUS, DEFAULT).value
    for weight, term in (("w1", 1.0), ("w3", -2.0002), ("w4", -0.75)):
        twice = operator_utility("A", STATUS, BTUSettings(**{weight: 2.0})).value
        assert twice - base == pytest.approx(term), weight
    b = operator_utility("B", STATUS, DEFAULT).value
    assert operator_utility("B", STATUS, BTUSettings(w2=2.0)).value - b == pytest.approx(100)
    assert operator_utility("B", STATUS, BTUSettings(queue_load=10)).value == pytest.approx(b - 90)


def test_best_downscale_and_edge_cases():
    assert best_downscale(STATUS, DEFAULT) == "B"
    assert best_downscale(STATUS, DEFAULT, exclude="B") is None  # A is negative, C has one
    same = {k: OperatorStatus(3, 1.0, 1.0, 0, 0) for k in "XY"}
    u = operator_utility("X", same, DEFAULT)
    assert u.instances == 0 and u.scalings == 0  # all equal / no scalings yet: 0, not 0/0
    with pytest.raises(LeasingError, match="no status for operator 'Z'"):
        operator_utility("Z", same, DEFAULT)


# ------------------------------------------------------------------ release procedure
def _two_hosts(room_on_h2: bool) -> Cluster:
    c = Cluster(demands={"b": Demand(100, 500), "a": Demand(100, 500), "big": Demand(100, 5000)})
    place = [Placement("b", "h1"), Placement("b", "h1"), Placement("a", "h1")]
    place += [Placement("b", "h2")] * 3
    if not room_on_h2:
        place += [Placement("big", "h2")]
    return apply_plan(c, LeasePlan(lease=("h1", "h2"), place=tuple(place)), 0, KIND).cluster


def _status(queue_b: float) -> dict[str, OperatorStatus]:
    # b delayed twice its SLO when items wait: 1 + 1 - 2.0002 - 0 < 0
    return {
        "b": OperatorStatus(5, 2.0 if queue_b else 1.0, 1.0, 0, queue_b),
        "a": OperatorStatus(1, 1.0, 1.0, 0, 0),
        "big": OperatorStatus(1, 1.0, 1.0, 0, 0),
    }


def test_release_stops_at_most_20_percent_and_migrates_the_rest():
    c = _two_hosts(room_on_h2=True)
    d = release_procedure(c, "h1", _status(queue_b=0), DEFAULT)
    assert d.release
    on_h1 = [i.instance_id for i in c.on_host("h1")]
    # b has 5 instances and utility > 0: floor(0.2 * 5) = 1 stopped; one b and the a migrate
    assert len(d.stop) == 3 and set(d.stop) == set(on_h1)
    assert sorted(m.operator for m in d.migrate) == ["a", "b"]
    assert {m.host_id for m in d.migrate} == {"h2"}
    # the plan it implies applies cleanly and empties h1
    plan = LeasePlan(stop=d.stop, place=d.migrate, release=("h1",))
    assert [h.host_id for h in apply_plan(c, plan, 570, KIND).cluster.hosts] == ["h2"]


def test_release_with_busy_queue_migrates_everything():
    d = release_procedure(_two_hosts(room_on_h2=True), "h1", _status(queue_b=5), DEFAULT)
    assert d.release and len(d.migrate) == 3  # utility of b is negative: nothing stopped


def test_release_prolongs_when_an_instance_fits_nowhere():
    d = release_procedure(_two_hosts(room_on_h2=False), "h1", _status(queue_b=5), DEFAULT)
    assert not d.release and d.stop == () and d.migrate == ()
