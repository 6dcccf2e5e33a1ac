"""The lease-ahead policy on hand-worked cases: its forecaster, leasing ahead of the boot time,
releasing only when the next BTU does not need the host, and the slack of a perfect forecaster."""

import numpy as np
import pytest

from elastream.leasing.hosts import HostType, LeasingError
from reproductions.btu.ahead import (
    AheadPolicy,
    decide_provision,
    decide_release,
    diffusive_rise,
    find_period,
    forecast_peak,
    hosts_needed,
    instances_needed,
    lead_s,
    max_rise,
    need_record,
    planned_arrivals,
    release_rates,
    rise_quantile,
    seasonal_peak,
)
from reproductions.btu.algorithms import OperatorStatus
from reproductions.btu.cluster import Cluster, Demand, LeasePlan, Placement, apply_plan
from reproductions.btu.config import AheadSettings, BTUSettings
from reproductions.btu.experiment import Cell
from reproductions.btu.metrics import RunMetrics
from reproductions.btu.policies import Draft, Observation, fill_by_waiting, pool_wait
from reproductions.btu.slack import oracle_btus
from reproductions.btu.tables import ahead_verdict, trace_outcome

KIND = HostType(cores=4, memory_mb=7168, btu_s=600, price=1.0)  # 4 instances of "a" per host
SETTINGS = AheadSettings()  # lead: 60 + 30 + 60 s = 10 samples of 15 s; BTU: 40 samples
BTU = BTUSettings()


def square(periods: float, low: float = 5.0, high: float = 60.0, half: int = 8) -> np.ndarray:
    """A square wave: `half` samples low, `half` high, for `periods` periods (one column)."""
    n = int(periods * 2 * half)
    return np.where((np.arange(n) // half) % 2 == 1, high, low)[:, None]


def cluster(per_host: tuple[int, ...]) -> Cluster:
    """Hosts h1, h2, ... holding that many instances of "a" each (placed long ago)."""
    c = Cluster(demands={"a": Demand(1024, 1000)})
    hosts = tuple(f"h{k + 1}" for k in range(len(per_host)))
    place = tuple(Placement("a", h) for h, n in zip(hosts, per_host, strict=True) for _ in range(n))
    return apply_plan(c, LeasePlan(lease=hosts, place=place), 0, KIND).cluster


def obs(rates: np.ndarray, instances: int, queue: float = 0.0) -> Observation:
    """One operator "a" of 10 items/s per instance, observed every 15 s."""
    return Observation(
        now=3000.0,
        monitor_s=15.0,
        status={"a": OperatorStatus(instances, 0.5, 1.0, 0, queue)},
        history={"a": (0.5, 0.5)},
        arrivals=np.asarray(rates, dtype=float).reshape(len(rates), 1),
        service_rate={"a": 10.0},
    )


# ----------------------------------------------------------------------------- forecaster
def test_the_period_of_a_square_wave_is_found_and_a_random_walk_has_none():
    assert find_period(square(4), min_lag=8, min_corr=0.8) == 16
    walk = np.cumsum(np.random.default_rng(3).choice([-1.0, 0.0, 1.0], 200)) + 50
    assert find_period(walk[:, None], min_lag=8, min_corr=0.8) is None
    assert find_period(square(1.5), min_lag=8, min_corr=0.8) is None  # not two periods yet


def test_max_rise_is_the_largest_rise_within_the_horizon():
    y = np.array([1.0, 2.0, 5.0, 3.0, 4.0])[:, None]
    # t=0: max(2, 5) - 1 = 4; t=1: max(5, 3) - 2 = 3; t=2: -1; t=3: 1
    assert max_rise(y, 2)[0] == 4.0
    assert max_rise(y, 1)[0] == 3.0  # 2 -> 5
    assert max_rise(np.array([[7.0]]), 5)[0] == 0.0


def test_the_diffusive_rise_scales_short_rises_by_the_square_root_of_the_horizon():
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2], dtype=float)[:, None]  # a step every 4 samples
    assert max_rise(y, 16)[0] == 2.0  # the most it rose within 16 samples (all it has seen)
    # one sample rose by 1: sqrt(16 / 1) x 1 = 4 (eight samples rose by 2: only 2 sqrt(2))
    assert diffusive_rise(y, 16)[0] == pytest.approx(4.0)
    assert diffusive_rise(np.full((9, 1), 3.0), 16)[0] == 0.0  # a flat load: no rise


def test_seasonal_peak_looks_one_period_back():
    y = square(3.5)  # 56 samples: the last 8 are low, the next 8 are high
    assert seasonal_peak(y, 16, 1)[0] == 60.0  # sample 56 is like sample 40: high
    assert seasonal_peak(square(3.25), 16, 4)[0] == 5.0  # mid-way through a low half
    # in that low half, 10 samples ahead reach the next high half
    assert seasonal_peak(square(3.25), 16, 10)[0] == 60.0


def test_forecast_picks_seasonal_with_head_room_on_a_periodic_load():
    got = forecast_peak(square(3.5), 10, SETTINGS)
    assert got.model == "seasonal(16)"
    assert got.rates[0] == pytest.approx(60.0 * 1.3)  # 30 % head-room on a point forecast


def test_forecast_without_season_is_last_plus_largest_rise_capped_at_the_peak_seen():
    y = np.array([5.0] * 30 + [8.0, 11.0, 14.0] + [5.0] * 7)[:, None]
    got = forecast_peak(y, 10, SETTINGS)
    assert got.model == "naive+rise"
    assert got.rates[0] == 14.0  # 5 + 9 (5 -> 14 within 3 samples), capped at 14
    flat = forecast_peak(np.full((40, 1), 5.0), 10, SETTINGS)
    assert flat.rates[0] == 5.0


def test_a_release_forecast_takes_the_naive_peak_where_the_seasonal_one_is_lower():
    """Mid-way through a low half of the square wave (5/s, highs of 60/s every 16 samples), 4
    samples ahead: the seasonal forecast is 5 x 1.3 = 6.5/s; the naive one is 5 plus the
    largest rise within 4 samples, 55, capped at the 60 seen. Leasing ahead plans on the
    seasonal one; a release's forecast (a released host costs a BTU to bring back) on both."""
    got = forecast_peak(square(3.25), 4, SETTINGS)
    assert got.model == "seasonal(16)"
    assert got.rates[0] == pytest.approx(6.5)
    both = forecast_peak(square(3.25), 4, SETTINGS, every_model=True)
    assert both.model == "seasonal(16), naive+rise"
    assert both.rates[0] == 60.0


def test_a_prior_is_the_forecast_while_warming_up_and_the_cap_after():
    prior = np.array([50.0])
    warm = forecast_peak(np.full((3, 1), 5.0), 10, SETTINGS, prior)
    assert warm.model == "prior" and warm.rates[0] == 50.0
    capped = forecast_peak(square(3.5), 10, SETTINGS, prior)
    assert capped.rates[0] == 50.0  # the seasonal 78 is above the known peak


# ----------------------------------------------------------------------------- provision
def test_leases_ahead_of_the_boot_when_the_forecast_sees_the_peak_coming():
    """Now 5/s (one instance would do) but the next 8 samples are high: 60 x 1.3 = 78/s at
    90 % of 10/s each = 9 instances; h1 holds 4, so two hosts are leased now (4 + 4 + 1) and
    the paid room is filled (3 more): 8 placed, nothing released."""
    plan = decide_provision(obs(square(3.5), 4), cluster((4,)), KIND, SETTINGS, BTU)
    assert len(plan.lease) == 2
    assert len(plan.place) == 8 and {p.host_id for p in plan.place} == set(plan.lease)
    assert plan.release == () and plan.stop == ()


def test_no_lease_for_a_flat_load_and_paid_room_is_filled():
    plan = decide_provision(obs(np.full(40, 15.0), 1), cluster((1,)), KIND, SETTINGS, BTU)
    # 15/s -> ceil(15 / 9) = 2 instances; h1 has room for 4: +1 needed, +2 filling it
    assert plan.lease == () and len(plan.place) == 3
    assert plan.release == ()


def test_planned_arrivals_carry_the_sources_through_the_routing():
    """a -> b (2 items per a item) -> c (one per two b items): a's outside 10/s means 20/s at b
    and 10/s at c, whatever b and c were seen to receive (throttled at the start: 3 and 1; a
    drain burst later: 30 and 4); without a routing the observed rates are planned on."""
    routing = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 0.5], [0.0, 0.0, 0.0]])
    seen = np.array([[10.0, 3.0, 1.0], [10.0, 30.0, 4.0]])
    o = Observation(0.0, 15.0, {}, {}, arrivals=seen, routing=routing)
    assert planned_arrivals(o, 960) == pytest.approx(np.array([[10.0, 20.0, 10.0]] * 2))
    assert planned_arrivals(Observation(0.0, 15.0, {}, {}, arrivals=seen), 960) == pytest.approx(
        seen
    )
    assert planned_arrivals(o, 1) == pytest.approx(np.array([[10.0, 20.0, 10.0]]))  # the last


def test_a_downstream_type_is_sized_for_the_flow_its_upstream_will_send():
    """a (outside 18/s) -> b, one b item per a item, b seen at 1/s while a catches up: sized at
    90 % of 10/s, a needs 2 instances (it has them) and b 2 for the 18/s that a will send, so
    one b goes on h1's free place; planned on b's observed 1/s, b keeps its one instance."""
    c = Cluster(demands={"a": Demand(1024, 1000), "b": Demand(1024, 1000)})
    place = (Placement("a", "h1"), Placement("a", "h1"), Placement("b", "h1"))
    c = apply_plan(c, LeasePlan(lease=("h1",), place=place), 0, KIND).cluster
    status = {"a": OperatorStatus(2, 0.5, 1.0, 0, 0), "b": OperatorStatus(1, 0.5, 1.0, 0, 0)}
    seen = np.tile([18.0, 1.0], (40, 1))
    routing = np.array([[0.0, 1.0], [0.0, 0.0]])
    rate = {"a": 10.0, "b": 10.0}
    no_fill = SETTINGS.model_copy(update={"fill": False})
    told = Observation(3000.0, 15.0, status, {}, seen, rate, routing=routing)
    plan = decide_provision(told, c, KIND, no_fill, BTU)
    assert [p.operator for p in plan.place] == ["b"] and plan.lease == ()
    blind = Observation(3000.0, 15.0, status, {}, seen, rate)
    assert decide_provision(blind, c, KIND, no_fill, BTU).empty


def test_provision_never_releases_even_when_idle():
    plan = decide_provision(obs(np.full(40, 1.0), 8), cluster((4, 4)), KIND, SETTINGS, BTU)
    assert plan.empty  # hosts go only at the end of their BTU (decide_release)


# ----------------------------------------------------------------------------- release
def test_prolong_when_the_next_btu_needs_the_host():
    """Flat 5/s now, but the seasonal forecast over the next BTU (40 samples) reaches 78/s:
    9 instances, more than h1's 4: h2 is kept."""
    plan = decide_release(obs(square(3.5), 8), cluster((4, 4)), ("h2",), KIND, SETTINGS, BTU)
    assert plan.prolong == ("h2",) and plan.release == () and plan.stop == ()


def test_release_when_the_next_btu_needs_only_what_stays():
    plan = decide_release(obs(np.full(40, 5.0), 8), cluster((4, 4)), ("h2",), KIND, SETTINGS, BTU)
    # 5/s -> 1 instance: h2's four are surplus and stop; h1 keeps its four
    assert plan.release == ("h2",) and len(plan.stop) == 4 and plan.place == ()


def test_release_moves_what_is_needed_to_the_hosts_that_stay():
    c = cluster((1, 3))
    plan = decide_release(obs(np.full(40, 25.0), 4), c, ("h2",), KIND, SETTINGS, BTU)
    # 25/s -> ceil(25 / 9) = 3 needed: one of h2's three stops, two move to h1 (room for 3)
    assert plan.release == ("h2",)
    assert len(plan.stop) == 3 and [p.host_id for p in plan.place] == ["h1", "h1"]
    assert all(p.migrated_from in plan.stop for p in plan.place)


def test_release_stops_filled_instances_to_make_room_for_needed_ones():
    """h1 is full of filled instances of "b" (not needed); the needed "a" on h2 moves there."""
    c = Cluster(demands={"a": Demand(1024, 1000), "b": Demand(1024, 1000)})
    place = (*(Placement("b", "h1") for _ in range(4)), Placement("a", "h2"))
    c = apply_plan(c, LeasePlan(lease=("h1", "h2"), place=place), 0, KIND).cluster
    o = Observation(
        now=3000.0,
        monitor_s=15.0,
        status={"a": OperatorStatus(1, 0.5, 1.0, 0, 0), "b": OperatorStatus(4, 0.5, 1.0, 0, 0)},
        history={},
        arrivals=np.full((40, 2), 5.0),
        service_rate={"a": 10.0, "b": 10.0},
    )
    plan = decide_release(o, c, ("h2",), KIND, SETTINGS, BTU)
    assert plan.release == ("h2",)
    assert [p.host_id for p in plan.place] == ["h1"] and plan.place[0].operator == "a"
    stopped = {i.instance_id: i.operator for i in c.instances if i.instance_id in plan.stop}
    assert sorted(stopped.values()) == ["a", "b"]  # one b makes room, the a moves


def test_no_release_before_the_history_spans_the_release_horizon():
    """At 3,000 s h2 has nothing of its BTU left (leased at 0, BTU 600 s), so a release must
    hold for the next BTU: 40 samples of 15 s. With 39 samples of history the rises over that
    horizon have not been seen: h2 is prolonged; with 40 the flat 5/s releases it."""
    c = cluster((4, 4))
    short = decide_release(obs(np.full(39, 5.0), 8), c, ("h2",), KIND, SETTINGS, BTU)
    assert short.prolong == ("h2",) and short.release == ()
    whole = decide_release(obs(np.full(40, 5.0), 8), c, ("h2",), KIND, SETTINGS, BTU)
    assert whole.release == ("h2",)


def test_no_history_prolongs_every_host():
    empty = obs(np.zeros((0, 1)), 2)
    plan = decide_release(empty, cluster((1, 1)), ("h1", "h2"), KIND, SETTINGS, BTU)
    assert plan.prolong == ("h1", "h2")


def test_the_policy_is_pure_and_checks_its_prior():
    policy = AheadPolicy(KIND)
    o, c = obs(square(3.5), 4), cluster((4,))
    assert policy.provision(o, c) == policy.provision(o, c)
    bad = AheadPolicy(KIND, AheadSettings(peak_rates={"other": 1.0}))
    with pytest.raises(LeasingError, match="no rate for a"):
        bad.provision(o, c)


# ----------------------------------------------------------------------------- slack
def test_oracle_btus_release_only_when_the_next_btu_is_free():
    t = np.arange(0.0, 3600.0, 60.0)  # one hour, a sample a minute, BTU of 10 min
    # host 2 needed in minutes 0-4 and 30-34: released at 10 (10-20 free), leased again at 30
    need = np.where((t % 1800) < 300, 2, 1)
    assert oracle_btus(need, t, 600.0) == 6 + 2
    # needed in minutes 0-4 and 15-19: at 10 the next BTU (10-20) needs it: prolonged
    need = np.where((t < 300) | ((t >= 900) & (t < 1200)), 2, 1)
    assert oracle_btus(need, t, 600.0) == 6 + 2
    assert oracle_btus(np.full(t.size, 3), t, 600.0) == 18  # a flat need: the fixed fleet


# ----------------------------------------------------------------------------- fill
def test_pool_wait_is_the_m_m_1_wait_of_the_pool():
    assert pool_wait(5.0, 1, 10.0) == pytest.approx(5.0 / (10.0 * 5.0))  # rho 0.5: 0.1 s
    assert pool_wait(5.0, 2, 10.0) == pytest.approx(5.0 / (20.0 * 15.0))
    assert pool_wait(10.0, 1, 10.0) == float("inf")  # cannot keep up


def test_paid_room_goes_where_an_instance_saves_the_most_waiting():
    """Two types of equal size and SLO, two hosts with one free place each: "a" (18 items/s on 2
    instances of 10/s, rho 0.9) gains far more from a third instance than "b" (1 item/s on
    four): both free places go to "a" (the second one still saves more there than on "b")."""
    c = Cluster(demands={"a": Demand(1024, 1000), "b": Demand(1024, 1000)})
    place = (Placement("a", "h1"), Placement("a", "h1"), Placement("b", "h1"))
    c = apply_plan(c, LeasePlan(lease=("h1", "h2"), place=place), 0, KIND).cluster
    c = apply_plan(c, LeasePlan(place=(Placement("b", "h2"),) * 3), 0, KIND).cluster
    o = Observation(
        now=60.0,
        monitor_s=15.0,
        status={"a": OperatorStatus(2, 0.5, 1.0, 0, 0), "b": OperatorStatus(4, 0.5, 1.0, 0, 0)},
        history={},
        arrivals=np.zeros((1, 2)),
        service_rate={"a": 10.0, "b": 10.0},
    )
    draft = Draft(c, KIND, 60.0)
    fill_by_waiting(draft, np.array([18.0, 1.0]), o, BTU)
    assert [p.operator for p in draft.place] == ["a", "a"]  # h1 and h2 had one free place each
    assert draft.cluster.count("a") == 4 and draft.cluster.count("b") == 4
    # with "b" loaded and "a" idle, the same room goes to "b"
    draft = Draft(c, KIND, 60.0)
    fill_by_waiting(draft, np.array([0.1, 39.0]), o, BTU)
    assert [p.operator for p in draft.place] == ["b", "b"]


def test_the_lease_ahead_forecast_expects_a_steeper_rise_than_the_release_one():
    """A load flat at 20/s that just jumped to 28/s, the known peak 80/s: the release forecast
    (28 + the largest rise seen, 8 = 36/s) needs 4 instances, which h1 holds; leasing ahead
    expects the jump of one sample to go on for the lead time (8 x sqrt(10) = 25.3: 53/s, 6
    instances) and leases a second host now."""
    settings = AheadSettings(peak_rates={"a": 80.0})
    rates = np.array([20.0] * 30 + [28.0])
    assert forecast_peak(rates[:, None], 10, settings, np.array([80.0])).rates[0] == 36.0
    plan = decide_provision(obs(rates, 4), cluster((4,)), KIND, settings, BTU)
    assert len(plan.lease) == 1 and plan.release == ()


# ----------------------------------------------------------------------------- verdict
def _run(btus: int, comp: tuple[float, float, float], cost: float) -> RunMetrics:
    return RunMetrics(
        btus, btus, 0, 0, comp, float(btus), (cost + 1, cost, cost - 1), 0.0, 0, 0, 0, 1e6, 5
    )


def test_the_verdict_names_the_numbers_of_each_case():
    fleet = _run(60, (0.49, 0.97, 0.98), 65.0)
    grid = {
        ("p", "static_peak", 10): Cell((fleet,)),
        ("p", "ahead", 10): Cell((fleet,)),
        ("q", "static_peak", 10): Cell((fleet,)),
        ("q", "ahead", 10): Cell((_run(58, (0.49, 0.971, 0.98), 63.0),)),
        ("r", "static_peak", 10): Cell((fleet,)),
        ("r", "ahead", 10): Cell((_run(57, (0.488, 0.97, 0.98), 62.0),)),
    }
    assert "no slack" in ahead_verdict(grid, "p", 10, 0)
    assert (
        ahead_verdict(grid, "p", 10, 3)
        == "slack 3 BTUs not taken: ahead keeps the peak fleet (same runs)"
    )
    won = ahead_verdict(grid, "q", 10, 10)
    assert won.startswith("beats static_peak: 2.0 of 10 BTUs") and "+0.000 / +0.100 / +0.000" in won
    lost = ahead_verdict(grid, "r", 10, 10)
    assert lost.startswith("slack 10 BTUs, not beaten: 3.0 of 10") and "-0.200 / +0.000" in lost


def test_a_trace_cell_says_whether_ahead_serves_no_worse_and_at_what_cost():
    fleet = _run(60, (0.49, 0.97, 0.98), 65.0)
    grid = {
        ("t", "static_peak", 10): Cell((fleet,)),
        ("t", "ahead", 10): Cell((_run(75, (0.49, 0.971, 0.98), 80.0),)),
        ("u", "static_peak", 10): Cell((fleet,)),
        ("u", "ahead", 10): Cell((_run(45, (0.5, 0.97, 0.979), 50.0),)),
    }
    assert trace_outcome(grid, "t", 10) == "no worse at 1.25x the cost"  # 75 / 60 BTUs
    assert trace_outcome(grid, "u", 10) == "worse at 0.75x the cost"  # 5x: 0.979 < 0.98


# ----------------------------------------------------------------------------- paid BTU
def _ramp_history(steps: int = 10, step: float = 2.0) -> np.ndarray:
    """30 samples at 10/s, a ramp of `steps` samples of +`step`, back to 10/s for 20 samples
    (by default to 30/s: the largest rise within 10 or more samples is 20, within 7 it is 14)."""
    ramp = [10.0 + step * k for k in range(1, steps + 1)]
    return np.array([10.0] * 30 + ramp + [10.0] * 20)


def _in_window(rates: np.ndarray, startup: tuple[float, ...]) -> Observation:
    """Host h2 (leased at 0, BTU 600 s) 30 s before its paid BTU ends; start-ups measured."""
    o = obs(rates, 8)
    return Observation(
        now=570.0,
        monitor_s=o.monitor_s,
        status=o.status,
        history=o.history,
        arrivals=o.arrivals,
        service_rate=o.service_rate,
        startup_s=startup,
    )


def test_release_rates_cover_the_paid_rest_the_next_btu_and_the_lease_ahead_margin():
    """Worked by hand on a ramp of 41 samples of +0.5 (10 -> 30.5): with 30 s of the BTU paid
    the horizon is 30 s + the 600 s BTU = 42 samples, within which the largest rise is the
    whole ramp, 20.5 (the level reached, 30.5, caps 10 + 20.5); the lead is the longest start-up
    measured, 45 s, plus the 60 s provisioning interval = 7 samples, within which the rise is
    3.5: 10 + 20.5 + 3.5 = 34/s. With nothing of the BTU left the horizon is 40 samples: 20 of
    the ramp, 33.5/s."""
    settings = AheadSettings(rise_quantile=1.0)
    o = _in_window(_ramp_history(41, 0.5), (30.0, 45.0))
    got = release_rates(o, 30.0, KIND, settings)
    assert got.model == "naive+rise+lead margin"
    assert got.rates[0] == pytest.approx(34.0)
    assert release_rates(o, 0.0, KIND, settings).rates[0] == pytest.approx(33.5)
    # the lead comes from what was measured: one start-up of 15 s gives 75 s = 5 samples
    quick = _in_window(_ramp_history(41, 0.5), (15.0,))
    assert release_rates(quick, 30.0, KIND, settings).rates[0] == pytest.approx(33.0)
    assert lead_s(settings, (30.0, 45.0)) == 105.0 and lead_s(settings) == 60 + 30 + 60


def test_a_release_leaves_room_for_a_drain_burst_the_flow_does_not_show():
    """a (outside 10/s) -> b, one b item per a item, flat but for one sample where b received
    25/s (a draining a backlog): the flow plans 10/s at b, but a release plans on the larger
    of the flow and what b received: the largest rise within the 42-sample horizon is 15 (10 ->
    25, capped at the 25 seen) and within the 7-sample lead another 15: 10 + 15 + 15 = 40/s
    at b, 10/s at a (no rise)."""
    seen = np.tile([10.0, 10.0], (41, 1))
    seen[20, 1] = 25.0
    status = {"a": OperatorStatus(2, 0.5, 1.0, 0, 0), "b": OperatorStatus(2, 0.5, 1.0, 0, 0)}
    o = Observation(
        now=570.0,
        monitor_s=15.0,
        status=status,
        history={},
        arrivals=seen,
        service_rate={"a": 10.0, "b": 10.0},
        startup_s=(45.0,),
        routing=np.array([[0.0, 1.0], [0.0, 0.0]]),
    )
    assert planned_arrivals(o, 960)[20] == pytest.approx([10.0, 10.0])
    got = release_rates(o, 30.0, KIND, AheadSettings(rise_quantile=1.0))
    assert got.rates == pytest.approx([10.0, 40.0])


def test_a_host_is_prolonged_when_the_paid_rest_and_next_btu_may_need_it():
    """44/s at 90 % of 10/s each needs ceil(44 / 9) = 5 instances; h1 holds 4, so h2 stays.
    On a flat 10/s history the need is ceil(10 / 9) = 2: h2 goes, its instances stopped."""
    settings = AheadSettings(rise_quantile=1.0)
    kept = decide_release(
        _in_window(_ramp_history(), (45.0,)), cluster((4, 4)), ("h2",), KIND, settings, BTU
    )
    assert kept.prolong == ("h2",) and kept.release == ()
    flat = decide_release(
        _in_window(np.full(60, 10.0), (45.0,)), cluster((4, 4)), ("h2",), KIND, settings, BTU
    )
    assert flat.release == ("h2",) and len(flat.stop) == 4 and flat.place == ()


def test_rise_quantile_is_a_quantile_of_the_rises_within_the_horizon():
    y = np.array([0.0, 1.0, 5.0, 5.0, 2.0, 3.0])
    # rises within 2 samples for t = 0..3: max(1, 5) - 0, max(5, 5) - 1, max(5, 2) - 5, 3 - 5
    rises = np.array([5.0, 4.0, 0.0, -2.0])
    assert rise_quantile(y[:, None], 2, 1.0)[0] == 5.0
    assert rise_quantile(y[:, None], 2, 0.5)[0] == pytest.approx(np.quantile(rises, 0.5))


def test_the_wait_target_sizes_a_pool_by_its_m_m_1_wait():
    """10/s at 10/s an instance: by utilisation (90 %) 2 instances; their pool's M/M/1 wait is
    10 / (20 (20 - 10)) = 0.05 s, above 3 % of the 1 s SLO; 3 instances wait 10 / (30 x 20) =
    0.0167 s: 3."""
    o = obs(np.full(5, 10.0), 1)
    assert instances_needed(np.array([10.0]), {"a": 0.0}, o, AheadSettings()) == {"a": 2}
    got = instances_needed(np.array([10.0]), {"a": 0.0}, o, AheadSettings(wait_target=0.03))
    assert got == {"a": 3}


def _bursts(
    since_last: int, lulls: tuple[int, ...] = (41, 47, 43, 45, 40, 48, 42, 46)
) -> np.ndarray:
    """400 samples of 5/s with bursts of two samples at 60/s (7 instances: two hosts), the
    lulls between them 40-48 samples long (no period), the last burst `since_last` samples
    before the end (one column, oldest first)."""
    tail: list[float] = [5.0] * since_last
    k = 0
    while len(tail) < 400:
        tail += [60.0, 60.0] + [5.0] * lulls[k % len(lulls)]
        k += 1
    return np.array(tail[:400][::-1])


def test_the_need_record_holds_the_hosts_each_sample_needed():
    o = obs(_bursts(10), 8)
    needs = hosts_needed(o.arrivals, o, cluster((4, 4)), KIND, SETTINGS)
    assert needs.tolist() == [2 if r == 60.0 else 1 for r in o.arrivals[:, 0]]  # ceil(60/9)=7
    record = need_record(o, cluster((4, 4)), KIND, SETTINGS)
    assert record.needs[-1] == (2985.0, 3000.0, 1) and len(record.needs) == 400  # ten BTUs


def test_a_host_stays_while_the_lulls_seen_end_within_its_next_btu():
    """The forecast at its lowest rise quantiles sees only 5/s and would release h2; but the
    current lull is 150 s old and every lull seen (600-720 s) ended within 150 s + the next
    BTU (600 s): h2 stays. Once the lull has lasted a BTU (45 samples, 675 s) it goes."""
    low = SETTINGS.model_copy(update={"rise_quantile": 0.1, "release_quantile": 0.1})
    forecast_only = low.model_copy(update={"release_lulls": False})
    c = cluster((4, 4))
    plan = decide_release(obs(_bursts(10), 8), c, ("h2",), KIND, forecast_only, BTU)
    assert plan.release == ("h2",)
    plan = decide_release(obs(_bursts(10), 8), c, ("h2",), KIND, low, BTU)
    assert plan.release == () and plan.prolong == ("h2",)
    plan = decide_release(obs(_bursts(45), 8), c, ("h2",), KIND, low, BTU)
    assert plan.release == ("h2",)


def test_the_hosts_needed_count_the_instances_the_wait_target_adds():
    """mu = 10/s, SLO 1 s, wait target 0.015 s: at 5/s two instances wait 5 / (20 x 15) =
    0.0167 s, three 0.0067 s; at 20/s four wait 20 / (40 x 20) = 0.025 s, five 0.0133 s. Four
    instances a host: 3 -> one host, 5 -> two (by utilisation alone: 1 and 3 instances, one)."""
    waiting = SETTINGS.model_copy(update={"wait_target": 0.015})
    o = obs(np.array([0.0, 5.0, 20.0]), 8)
    c = cluster((4, 4))
    assert hosts_needed(o.arrivals, o, c, KIND, waiting).tolist() == [1, 1, 2]
    assert hosts_needed(o.arrivals, o, c, KIND, SETTINGS).tolist() == [1, 1, 1]
    rows = [instances_needed(r, {"a": 0.0}, o, waiting)["a"] for r in o.arrivals]
    assert rows == [1, 3, 5]  # the release's own sizing, one row at a time
