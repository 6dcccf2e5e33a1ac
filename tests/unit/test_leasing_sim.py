"""Patterns (Eq. 6), topology, forecaster, policies and the simulator's bookkeeping."""

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from elastream.leasing.hosts import HostType, LeasingError
from reproductions.btu.algorithms import OperatorStatus
from reproductions.btu.cluster import Cluster, Demand, LeasePlan, Placement, apply_plan
from reproductions.btu.config import SimSettings
from reproductions.btu.experiment import run_grid
from reproductions.btu.forecast import forecast, holt, window_peak
from reproductions.btu.metrics import Counters
from reproductions.btu.patterns import Pattern, machines, random_walk
from reproductions.btu.policies import BTUPolicy, Observation, ThresholdPolicy
from reproductions.btu.sim import Simulation, within
from reproductions.btu.topology import manufacturing

KIND = HostType(cores=4, memory_mb=7168, btu_s=600, price=1.0)


def test_random_walk_follows_eq_6():
    free = random_walk(20_000, seed=7, start=0, lo=-(10**9), hi=10**9)
    steps = np.diff(np.concatenate([[0], free]))
    assert set(np.unique(steps)) <= {-1, 0, 1}
    shares = [np.mean(steps == k) for k in (-1, 0, 1)]
    assert shares == pytest.approx([0.4, 0.2, 0.4], abs=0.015)
    bounded = random_walk(2_000, seed=7)
    assert bounded.min() >= 1 and bounded.max() <= 8
    assert np.array_equal(random_walk(50, seed=3), random_walk(50, seed=3))


def test_stepwise_and_two_level_levels():
    t = np.array([0, 240, 480, 720, 960, 1200])
    assert machines(Pattern.STEPWISE, t).tolist() == [2, 5, 8, 5, 2, 5]
    assert machines(Pattern.TWO_LEVEL, t).tolist() == [2, 2, 8, 8, 2, 2]
    with pytest.raises(LeasingError, match="non-negative"):
        machines(Pattern.STEPWISE, np.array([-1.0]))


def test_topology_rates_follow_the_outgoing_ratios():
    topo = manufacturing()
    r = dict(zip(topo.names, topo.steady_rates(1.0), strict=True))
    s1, s2, s3 = 5 / 0.48, 1 / 0.48, 10 / 0.48  # Table 1 replayed every 480 ms
    assert r["O1"] == pytest.approx(s2)
    assert r["O3"] == r["O4"] == r["O5"] == pytest.approx(s2)  # 1:3, one item to each
    assert r["O7"] == pytest.approx(3 * s2)
    assert r["O9"] == pytest.approx(s2)  # 3:1
    assert r["O8"] == pytest.approx(s1 / 50 + s3 / 100 + s2 / 300)
    assert len(topo.operators) == 9


def test_holt_extrapolates_a_line_and_the_peak_window():
    y = np.array([1.0, 3.0, 5.0, 7.0])
    level, trend = holt(y, alpha=1.0, beta=1.0)
    assert level[0] == 7.0 and trend[0] == 2.0
    assert forecast(y, 3, 1.0, 1.0)[0] == 13.0
    assert forecast(-y, 10, 1.0, 1.0)[0] == 0.0  # rates never go negative
    assert window_peak(np.array([[1, 9], [5, 2], [3, 4]]), 2).tolist() == [5, 4]
    with pytest.raises(LeasingError, match="empty"):
        holt(np.array([]), 0.5, 0.1)


def test_lognormal_within_is_a_cdf():
    mean = np.array([1.0, 1.0, 1.0])
    p = within(np.array([0.0, 1.0, 100.0]), mean, 0.25)
    assert p[0] == 0 and p[2] == pytest.approx(1.0)
    assert p[1] == pytest.approx(0.5497, abs=1e-3)  # P(S <= mean) = Phi(sigma / 2)


def _obs(**queues: float) -> Observation:
    status = {op: OperatorStatus(1, 0.5, 1.0, 0, q) for op, q in queues.items()}
    return Observation(now=60, monitor_s=15, status=status, history={})


def _cluster(ops: dict[str, int]) -> Cluster:
    c = Cluster(demands=dict.fromkeys(ops, Demand(1024, 1000)))
    place = tuple(Placement(op, "h1") for op, n in ops.items() for _ in range(n))
    return apply_plan(c, LeasePlan(lease=("h1",), place=place), 0, KIND).cluster


def test_threshold_baseline_steps_and_on_demand_leasing():
    policy = ThresholdPolicy(KIND)
    plan = policy.provision(_obs(a=300, b=60, c=0), _cluster({"a": 1, "b": 1, "c": 2}))
    assert [p.operator for p in plan.place] == ["a", "a", "b"]  # +2 above 250, +1 above 50
    assert len(plan.stop) == 1  # -1 below 1 item
    assert len(plan.lease) == 1  # h1 is full (4 x 1024 shares): one new host takes all three
    assert {p.host_id for p in plan.place} == {plan.lease[0]}
    empty = policy.provision(_obs(a=0), _cluster({"a": 1}))
    assert empty.empty  # the last instance of a type stays
    two = apply_plan(_cluster({"a": 1}), LeasePlan(lease=("h2",)), 0, KIND).cluster
    plan = policy.provision(_obs(a=0), two)
    assert plan.release == ("h2",)  # a host with no instance goes at once


def test_btu_policy_reuses_room_before_leasing():
    hot = Observation(
        now=60,
        monitor_s=15,
        status={
            "a": OperatorStatus(2, 3.0, 1.0, 0, 500),  # delayed, long queue: Alg. 1 fires
            "b": OperatorStatus(2, 0.5, 1.0, 0, 0),  # idle: Alg. 3 utility > 0
        },
        history={"a": (3.0, 3.0), "b": (0.5, 0.5)},
    )
    full = _cluster({"a": 2, "b": 2})  # 4 x 1024 shares: h1 is full
    plan = BTUPolicy(KIND).provision(hot, full)
    assert plan.lease == () and len(plan.stop) == 1 and [p.operator for p in plan.place] == ["a"]
    busy = Observation(
        now=60,
        monitor_s=15,
        status={**hot.status, "b": OperatorStatus(2, 3.0, 1.0, 0, 500)},
        history={"a": (3.0, 3.0), "b": (3.0, 3.0)},
    )
    plan = BTUPolicy(KIND).provision(busy, full)
    # both fire, nobody to spare: one new host, and Alg. 2 puts the second instance on it too
    assert len(plan.lease) == 1 and plan.stop == ()
    assert {p.host_id for p in plan.place} == set(plan.lease)


def test_delay_episodes_give_the_time_to_adapt():
    c = Counters(ops=1)
    slo = np.array([1.0])
    for od, q in ((0.9, 0), (2.0, 10), (3.0, 50), (1.5, 5), (0.8, 0), (0.9, 0)):
        c.track_delays(np.array([od]), slo, np.array([q]), 15.0)
    assert c.adapt_times == [45.0]  # delayed from the 2nd to the 5th monitoring point


SHORT = SimSettings(duration_s=1200, btu_s=300, price=0.5)


@pytest.mark.parametrize("policy", [BTUPolicy, ThresholdPolicy])
def test_simulation_is_seeded_and_its_books_balance(policy):
    a = Simulation(Pattern.TWO_LEVEL, policy, seed=4, settings=SHORT).run()
    b = Simulation(Pattern.TWO_LEVEL, policy, seed=4, settings=SHORT).run()
    assert a == b
    assert a.paid_btus == a.vm_up + a.vm_prolong
    assert a.resource_cost == a.paid_btus * 0.5
    assert a.compliance[0] <= a.compliance[1] <= a.compliance[2] <= 1
    assert a.total_cost[0] >= a.total_cost[1] >= a.total_cost[2] >= a.resource_cost
    # every host alive at the end was paid at least up to now: BTUs >= peak hosts
    assert a.paid_btus >= a.peak_hosts


def test_threshold_dynamics_do_not_depend_on_the_btu():
    runs = [
        Simulation(
            Pattern.STEPWISE,
            ThresholdPolicy,
            seed=2,
            settings=SHORT.model_copy(update={"btu_s": b}),
        ).run()
        for b in (300, 600)
    ]
    assert runs[0].compliance == runs[1].compliance
    assert runs[0].instance_up == runs[1].instance_up
    assert runs[0].paid_btus > runs[1].paid_btus  # the same leases, billed in shorter units


def test_settings_name_what_is_inconsistent():
    with pytest.raises(ValueError, match="boot_min_s"):
        SimSettings(boot_min_s=70, boot_max_s=60)
    with pytest.raises(ValueError, match="provision_s .* not a multiple of monitor_s"):
        SimSettings(provision_s=50)
    with pytest.raises(ValueError, match="extra"):
        SimSettings(btu=600)


@pytest.mark.parametrize("drain", [True, False])
def test_a_drained_release_serves_until_the_btu_ends(drain):
    """Plan.drain: the instance stopped on a released host keeps serving until the host's paid
    BTU ends while its moved copy starts on the target (make before break); without drain the
    capacity drops at the decision."""
    sim = Simulation(Pattern.STEPWISE, lambda kind: ThresholdPolicy(kind), seed=1)
    cluster = apply_plan(
        Cluster(demands=manufacturing().demands()),
        LeasePlan(lease=("a", "b"), place=(Placement("O1", "a"),)),
        0.0,
        sim.kind,
    ).cluster
    sim._index(cluster)
    o1 = sim.names.index("O1")
    old = cluster.instances[0]
    now = 580.0  # 20 s before host a's first 600 s BTU ends
    plan = LeasePlan(
        stop=(old.instance_id,),
        place=(Placement("O1", "b", migrated_from=old.instance_id),),
        release=("a",),
        drain=drain,
    )
    sim.btus_seen = {"a": 1, "b": 1}  # as run() keeps them
    after = sim._apply(cluster, plan, now)
    assert [h.host_id for h in after.hosts] == ["b"]
    moved = after.instances[0]
    assert moved.ready_at > now + 1.0  # an instance start takes 7.5 s at least
    for t in (now + 1.0, 599.0, 600.0, 640.0):
        serving = float(moved.ready_at <= t) + float(drain and t < 600.0)
        assert sim._capacity(t)[o1] == serving, t


def test_the_grid_is_the_same_in_a_process_pool_as_one_run_after_the_other():
    base = SimSettings(duration_s=240)
    args = ([1, 2], [Pattern.STEPWISE], ["threshold", "ahead"], base)
    alone = run_grid(*args)
    with ProcessPoolExecutor(max_workers=2) as pool:
        pooled = run_grid(*args, mapper=pool.map)
    assert pooled == alone
    assert set(alone) == {("stepwise", a, m) for a in ("threshold", "ahead") for m in (10, 30, 60)}
    assert all(len(cell.runs) == 2 for cell in alone.values())


def test_every_policy_meets_the_same_interference_for_one_seed():
    """Common random numbers: boot times come from their own stream, so a policy that leases
    more does not shift the interference the next ticks draw."""
    sims = [
        Simulation(Pattern.STEPWISE, p, seed=3, settings=SHORT)
        for p in (BTUPolicy, ThresholdPolicy)
    ]
    runs = [sim.run() for sim in sims]
    assert runs[0].vm_up != runs[1].vm_up  # the two lease differently ...
    noise = [sim.rng.bit_generator.state for sim in sims]
    boots = [sim.boot_rng.bit_generator.state for sim in sims]
    assert noise[0] == noise[1]  # ... and drew the same interference
    assert boots[0] != boots[1]


def test_a_lease_within_one_btu_of_a_released_hosts_paid_end_is_a_re_lease():
    """Host a (leased at 0, BTU 600 s) is released at 580 s: paid to 600 s. A lease at 700 s
    falls within the BTU that prolonging a would have paid (600-1200 s): one re-lease. The next
    lease, at 1300 s, has no release left to match: none."""
    sim = Simulation(Pattern.STEPWISE, lambda kind: ThresholdPolicy(kind), seed=1)
    cluster = apply_plan(
        Cluster(demands=manufacturing().demands()), LeasePlan(lease=("a", "b")), 0.0, sim.kind
    ).cluster
    sim.btus_seen = {"a": 1, "b": 1}
    cluster = sim._apply(cluster, LeasePlan(release=("a",)), 580.0)
    cluster = sim._apply(cluster, LeasePlan(lease=("c",)), 700.0)
    assert sim.re_lease_count() == 1
    cluster = sim._apply(cluster, LeasePlan(lease=("d",)), 1300.0)
    assert sim.re_lease_count() == 1


def test_the_start_up_of_a_leased_host_is_observed_once_it_serves():
    """A host leased at 100 s boots (a time drawn from the seed) and its first instance, whose
    image is not cached, starts 7.5 s + the download after that: the start-up is measured from
    the lease to that instance serving, and stamped with when it is known."""
    sim = Simulation(Pattern.STEPWISE, lambda kind: ThresholdPolicy(kind), seed=1)
    cluster = Cluster(demands=manufacturing().demands())
    sim.btus_seen = {}
    after = sim._apply(cluster, LeasePlan(lease=("a",), place=(Placement("O1", "a"),)), 100.0)
    ready = after.instances[0].ready_at
    assert after.host("a").ready_at < ready  # the start follows the boot
    assert sim._startups == [(ready, ready - 100.0)]
    pull = manufacturing().operators[0].image_mb / sim.settings.pull_mb_per_s
    assert ready - after.host("a").ready_at == pytest.approx(7.5 + pull)
