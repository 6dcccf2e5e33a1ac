"""The latency objective: its settings, the per-interval verdict, and the `objective` policy's
latency prediction (docs/policies.md O1-O8) and replica choice, on hand-worked numbers."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import snapshot, stats
from support.sim import one_operator

from elastream.config import ConfigError, make_config
from elastream.control.flow import FlowState
from elastream.control.policies import POLICIES
from elastream.control.policies.objective import (
    batch_point,
    batch_spread,
    burst_factor,
    decide,
    error_quantile,
    error_scales,
    fit_batch,
    forecast_bound,
    forecast_rates,
    log_error,
    measured_batch_s,
    plan,
    planned_rates,
    stations_for,
    step_six,
    widened,
)
from elastream.control.policies.objective_config import ObjectiveConfig, ObjectiveState
from elastream.control.policies.objective_model import (
    BatchModel,
    Station,
    batch_period_s,
    choose_replicas,
    critical_path,
    station_latency,
    transient_wait_s,
    wait_s,
)
from elastream.control.policy import PolicyConfigError
from elastream.model.objective import Objective, ObjectiveTally, judge
from elastream.model.snapshot import Snapshot
from elastream.runner import session
from elastream.runner.session import run_session
from elastream.runtime.sim import SimSettings
from elastream.workloads.trace import Trace

P99_2S = Objective(latency_p99_s=2.0)


def station(
    name="a", preds=(), arrival=1.0, queue=0.0, rho=2.0, pool=(1, 8), own=None, horizon=0.0
):
    return Station(name, tuple(preds), arrival, queue, rho, pool[0], pool[1], own, horizon)


# ----------------------------------------------------------------------------- settings


def test_objective_takes_exactly_one_statistic():
    assert Objective(latency_mean_s=1.5).statistic == "mean"
    assert Objective(latency_p99_s=2).bound_s == 2.0
    for bad in ({}, {"latency_p99_s": 1, "latency_mean_s": 1}):
        with pytest.raises(ValueError, match="exactly one of latency_p99_s and latency_mean_s"):
            Objective(**bad)


def test_run_objective_reaches_the_policy_and_a_missing_one_is_named():
    config = make_config(policy="objective", objective={"latency_p99_s": 2})
    options = config.effective_policy_options()
    assert options["objective"].bound_s == 2.0
    assert (
        make_config(policy="psps", objective={"latency_p99_s": 2}).effective_policy_options() == {}
    )
    with pytest.raises(ConfigError, match="objective: missing; set `objective:"):
        make_config(policy="objective")
    with pytest.raises(PolicyConfigError, match="objective"):
        POLICIES.get("objective").make_config({})


def test_objective_on_an_unknown_operator_is_named():
    config = make_config(
        objective={"latency_p99_s": 2, "operators": {"nope": {"latency_p99_s": 1}}}
    )
    with pytest.raises(ConfigError, match="objective.operators: nope not in pipeline"):
        config.check_objective(one_operator())


# ----------------------------------------------------------------------------- the verdict


def with_latency(snap: Snapshot, p99_ms: float | None, mean_ms: float | None = None) -> Snapshot:
    return Snapshot(
        t=snap.t,
        interval_s=snap.interval_s,
        sources=snap.sources,
        operators=snap.operators,
        latency_ms_mean=mean_ms,
        latency_ms_p99=p99_ms,
        intervals=snap.intervals,
    )


def test_an_interval_is_met_missed_or_not_judged():
    idle = snapshot(stats("a"))
    assert judge(with_latency(idle, 1999.0), P99_2S).met is True
    assert judge(with_latency(idle, 2001.0), P99_2S).met is False
    assert judge(with_latency(idle, 5000.0, 900.0), Objective(latency_mean_s=1)).met is True
    assert judge(idle, P99_2S).met is None  # nothing reached a sink, nothing waited
    stalled = snapshot(stats("a", queue=10))
    assert judge(stalled, P99_2S).met is False  # nothing reached a sink but events waited


def test_an_operator_bound_is_judged_by_littles_law():
    """queue 50 over 100 processed in td = 10 s is 5 s of queueing, plus et 0.1 s."""
    objective = Objective(latency_p99_s=10, operators={"a": {"latency_p99_s": 5}})
    snap = with_latency(
        snapshot(stats("a", queue=50, processed=100, service_time_s=0.1), interval_s=10.0), 1000.0
    )
    assert judge(snap, objective).met is False  # 5.1 s > 5 s
    relaxed = Objective(latency_p99_s=10, operators={"a": {"latency_p99_s": 5.2}})
    assert judge(snap, relaxed).met is True


def test_the_tally_counts_a_fast_forwarded_stretch_once_per_interval():
    tally = ObjectiveTally(P99_2S)
    met = with_latency(snapshot(stats("a")), 100.0)
    stretch = Snapshot(
        t=10,
        interval_s=5,
        sources=(("src", 0),),
        operators=met.operators,
        intervals=4,
        latency_ms_p99=100.0,
    )
    tally(met)
    tally(stretch)
    tally(with_latency(snapshot(stats("a")), 3000.0))
    assert (tally.met, tally.missed, tally.unjudged) == (5, 1, 0)
    assert tally.met_share == pytest.approx(5 / 6)


# ----------------------------------------------------------------------------- prediction


def test_waits_on_hand_worked_queues():
    """M/M/1, λ = 1, ρ = 2: C = 0.5, mean wait 0.5 / (2 − 1) = 0.5 s, p99 ln(0.5/0.01) s (O5).
    M/M/2: a = 0.5, C = (0.125 / 0.75) / (1.5 + 0.125 / 0.75) = 0.1, mean 0.1 / 3, p99 ln 10 / 3."""
    assert wait_s(1.0, 2.0, 1, "mean") == pytest.approx(0.5)
    assert wait_s(1.0, 2.0, 1, "p99") == pytest.approx(math.log(50))
    assert wait_s(1.0, 2.0, 2, "mean") == pytest.approx(0.1 / 3)
    assert wait_s(1.0, 2.0, 2, "p99") == pytest.approx(math.log(10) / 3)
    assert wait_s(0.1, 2.0, 4, "p99") == 0.0  # C < 1 %: 99 % of events do not wait
    assert wait_s(4.0, 2.0, 2, "mean") == math.inf  # λ ≥ rρ


def test_the_transient_wait_over_a_horizon_on_hand_worked_numbers():
    """O11, λ = 60/s on c = 50/s over T = 10 s: a fluid backlog of 10·10 = 100 events plus the
    diffusion term z·√((60 + 50)·10) = 2.5758·33.166 = 85.43 at the p99 (√(2/π)·33.166 = 26.46
    on average), waited out at 50/s: 3.709 s and 2.529 s. Underloaded, the stationary M/M/r
    wait is the smaller and is kept; overloaded without a horizon it is ∞."""
    assert transient_wait_s(60.0, 50.0, 10.0, "p99") == pytest.approx(185.43 / 50, rel=1e-4)
    assert transient_wait_s(60.0, 50.0, 10.0, "mean") == pytest.approx(126.46 / 50, rel=1e-4)
    assert wait_s(60.0, 25.0, 2, "p99", horizon_s=10.0) == pytest.approx(185.43 / 50, rel=1e-4)
    assert wait_s(60.0, 25.0, 2, "p99") == math.inf
    assert wait_s(1.0, 2.0, 2, "p99", horizon_s=30.0) == pytest.approx(math.log(10) / 3)


def test_the_batch_time_on_hand_worked_numbers():
    """O12, a = 0.2 s, b = 0.05 s, c = 1 s, R = 8 tasks: o = 0.6 s. At u = 0.5 the slowest
    share doubles it, D = 0.6 / 0.5 = 1.2 s (< o + c = 1.6 s); at u = 0.8, 0.6 / 0.2 = 3 s
    exceeds the cap and D = 1.6 s; at u ≥ 1 the cap too. A measured D(t) replaces all of it."""
    batch = BatchModel(0.2, 0.05, 1.0, 1.0)
    assert batch.period_s(8, 0.5) == pytest.approx(1.2)
    assert batch.period_s(8, 0.8) == pytest.approx(1.6)
    assert batch.period_s(8, 1.5) == pytest.approx(1.6)
    assert dataclasses.replace(batch, measured_s=0.7).period_s(8, 0.9) == 0.7
    # u is the busiest operator's λ̂ / (r·ρ): a at 1 / (1·2) = 0.5, b at 3 / (2·2) = 0.75
    stations = {"a": station("a"), "b": station("b", preds=("a",), arrival=3.0)}
    r = {"a": 1, "b": 2}
    assert batch_period_s(stations, r, batch) == pytest.approx(min(0.35 / 0.25, 1.35))


def test_each_operator_on_the_path_takes_a_batch_and_waits_one_more():
    """O6 with O12: a -> b at λ = 1, ρ = 2, r = (1, 1): Σ L_i = 1.0 + 1.0 s (mean); with
    a = 0.3 s, b = 0.1 s (R = 2: o = 0.5 s) and u = 0.5, D = 1.0 s; the path takes its two
    operators' batches plus κ = 1/2 waited on average: 2.0 + 2.5·1.0 = 4.5 s."""
    stations = {"a": station("a"), "b": station("b", preds=("a",))}
    batch = BatchModel(0.3, 0.1, 1.0, 0.5)
    latency, path = critical_path(stations, {"a": 1, "b": 1}, "mean", batch)
    assert path == ["a", "b"]
    assert latency == pytest.approx(4.5)
    assert critical_path(stations, {"a": 1, "b": 1}, "mean")[0] == pytest.approx(2.0)


def test_the_batch_fit_on_hand_worked_intervals():
    """O13: 10 batches in td = 5 s give D(t) = 0.5 s; the busiest operator used 2 of its
    2·5 replica-seconds (u = 0.2), so o(t) = 0.5·0.8 = 0.4 s at R = 2 + 1 = 3 tasks. Points
    (4, 0.5), (8, 0.7), (12, 0.9) fit a = 0.3 s, b = 0.05 s; one R only, or a falling line:
    b = 0 and a their mean; a configured b is kept and a fitted around it. With the prior
    b₀ = 0.03 s of weight w = 8: one R gives b = b₀ (a = 0.6 − 0.12 = 0.48 s); the three points
    (Σ(R − R̄)² = 32, Σ(R − R̄)(o − ō) = 1.6) give b = (1.6 + 0.24) / 40 = 0.046 s and
    a = 0.7 − 0.368 = 0.332 s."""
    a = dataclasses.replace(
        stats("a", replicas=2, processed=40, busy_s=2.0), replica_batches=(10, 7)
    )
    b = dataclasses.replace(stats("b", replicas=1, processed=30, busy_s=0.5), replica_batches=(9,))
    snap = snapshot(a, b, interval_s=5.0)
    assert measured_batch_s(snap) == pytest.approx(0.5)
    assert batch_point(snap) == (3, pytest.approx(0.4))
    assert measured_batch_s(snapshot(stats("a", processed=5), interval_s=5.0)) is None
    assert fit_batch([(4, 0.5), (8, 0.7), (12, 0.9)]) == pytest.approx((0.3, 0.05))
    assert fit_batch([(4, 0.5), (4, 0.7)]) == pytest.approx((0.6, 0.0))
    assert fit_batch([(4, 0.9), (8, 0.5)]) == pytest.approx((0.7, 0.0))
    assert fit_batch([(4, 0.5), (8, 0.7)], per_task_s=0.1) == pytest.approx((0.0, 0.1))
    assert fit_batch([]) is None
    assert fit_batch([(4, 0.5), (4, 0.7)], None, 0.03, 8.0) == pytest.approx((0.48, 0.03))
    three = [(4, 0.5), (8, 0.7), (12, 0.9)]
    assert fit_batch(three, None, 0.03, 8.0) == pytest.approx((0.332, 0.046))


def test_the_choice_weighs_a_replica_against_the_batch_it_lengthens():
    """O14, one operator, λ = 30/s, ρ = 40/s, mean bound 4 s, a = 0.5 s, b = 0.2 s, c = 1 s,
    κ = 1/2. r = 1: u = 0.75, D = min(0.7 / 0.25, 1.7) = 1.7 s, L = 1/(40 − 30) + 1.5·1.7 =
    2.65 s (the M/M/1 sojourn 0.1 s): kept with one replica. Bound 2.5 s: r = 2 (u = 0.375,
    C = 0.45 / 2.2, D = 0.9 / 0.625 = 1.44 s) gives 0.2045 / 50 + 0.025 + 2.16 = 2.189 s; r = 3
    (D = 1.1 / 0.75 = 1.467 s) over 2.2 s: two. Bound 2.0 s: none keeps it, and the least
    latency, r = 2, is taken rather than the pool's 8."""
    one = {"a": station(arrival=30.0, rho=40.0)}
    batch = BatchModel(0.5, 0.2, 1.0, 0.5)
    assert critical_path(one, {"a": 1}, "mean", batch)[0] == pytest.approx(2.65)
    assert choose_replicas(one, 4.0, "mean", batch) == {"a": 1}
    assert critical_path(one, {"a": 2}, "mean", batch)[0] == pytest.approx(2.18909, abs=1e-5)
    assert critical_path(one, {"a": 3}, "mean", batch)[0] > 2.2
    assert choose_replicas(one, 2.5, "mean", batch) == {"a": 2}
    assert choose_replicas(one, 2.0, "mean", batch) == {"a": 2}


def test_decide_explains_long_batches_by_the_batch_time_not_by_a_burst():
    """O15 with O12/O13: one operator at 20/s on ρ = 40/s with 10 batches in td = 10 s (D(t) =
    1 s) and a measured p99 of 2.1 s: the model with the measured D explains it (L = 0.22 s +
    (1 + 1)·1 s), so φ = 1, β is not calibrated, and the plan stays at one replica; without
    batch counts the same latency reads as a burst (β > 1; the floor of O16 at 0.3·B, below
    the 2.1 s measured)."""
    config = ObjectiveConfig(objective=Objective(latency_p99_s=5.0), margin=0.0, burst_floor=0.3)
    snap = one_op_snapshot(replicas=1, emitted=200, processed=200, busy_s=5.0, p99_ms=2100.0)
    batched = dataclasses.replace(
        snap, operators=(dataclasses.replace(snap.operators[0], replica_batches=(10,)),)
    )
    state = ObjectiveState()
    for _ in range(3):
        decision, state = decide(batched, state, config)
    assert not state.bursts and state.spreads == (1.0, 1.0)  # O15 instead of O8
    assert decision.as_dict() == {"op": 1}
    assert "D=" in decision.detail("op") and "β=1.00" in decision.detail("op")
    plain_state = ObjectiveState()
    for _ in range(3):
        _, plain_state = decide(snap, plain_state, config)
    assert max(plain_state.bursts) > 1.0


def test_station_latency_adds_the_drain_of_the_queue():
    """O4: 10 queued events over 1 replica of ρ = 2 take 5 s, + 0.5 s wait + 0.5 s service."""
    assert station_latency(station(queue=10), 1, "mean") == pytest.approx(6.0)
    assert station_latency(station(queue=10), 2, "mean") == pytest.approx(2.5 + 0.1 / 3 + 0.5)
    assert station_latency(station(arrival=0, queue=0), 0, "mean") == 0.0
    assert station_latency(station(), 0, "mean") == math.inf


def test_the_critical_path_is_the_slowest_branch():
    """src -> a -> {b, c}: the path through b (its queue) is the critical one (O6)."""
    stations = {
        "a": station("a"),
        "b": station("b", preds=("a",), queue=4),
        "c": station("c", preds=("a",)),
    }
    latency, path = critical_path(stations, {"a": 1, "b": 1, "c": 1}, "mean")
    assert path == ["a", "b"]
    assert latency == pytest.approx(1.0 + 3.0)


# ----------------------------------------------------------------------------- the choice


def test_one_operator_gets_the_smallest_count_meeting_the_bound():
    """λ = 1, ρ = 2, mean bound 0.6 s: r = 1 gives 1.0 s, r = 2 gives 0.533 s."""
    assert choose_replicas({"a": station()}, 0.6, "mean") == {"a": 2}
    assert choose_replicas({"a": station()}, 1.0, "mean") == {"a": 1}


def test_two_operators_hand_worked_greedy():
    """a -> b, both λ = 1, ρ = 2, b holds 4 events, mean bound 2 s. From (1, 1) = 1.0 + 3.0 s
    the greedy adds to b (gain 1.467 s), then a (0.467 s against b's 0.364 s), then b: (2, 3)
    = 0.533 + 1.170 s. Of the other totals of 5, (1, 4) = 2.0007 s and (3, 2) = 2.036 s miss."""
    stations = {"a": station("a"), "b": station("b", preds=("a",), queue=4)}
    chosen = choose_replicas(stations, 2.0, "mean")
    assert chosen == {"a": 2, "b": 3}
    assert critical_path(stations, chosen, "mean")[0] == pytest.approx(
        0.5 + 0.1 / 3 + 1.16970, 1e-4
    )
    for other in ({"a": 1, "b": 4}, {"a": 3, "b": 2}):
        assert critical_path(stations, other, "mean")[0] > 2.0


def test_an_operator_bound_raises_its_start():
    stations = {"a": station("a", own=0.55), "b": station("b", preds=("a",))}
    assert choose_replicas(stations, 10.0, "mean") == {"a": 2, "b": 1}


def test_an_unreachable_bound_stops_at_the_pools():
    assert choose_replicas({"a": station(queue=1000, pool=(1, 3))}, 1.0, "p99") == {"a": 3}


@st.composite
def chains(draw):
    n = draw(st.integers(1, 3))
    stations = {}
    for i in range(n):
        rho = draw(st.floats(2.0, 50.0))
        low = draw(st.integers(1, 2))
        stations[f"o{i}"] = station(
            f"o{i}",
            preds=(f"o{i - 1}",) if i else (),
            arrival=draw(st.floats(0.0, 3.0)) * rho,
            queue=draw(st.floats(0.0, 100.0)),
            rho=rho,
            pool=(low, draw(st.integers(low, 6))),
            horizon=draw(st.sampled_from([0.0, 5.0, 30.0])),
        )
    return stations


@st.composite
def batch_models(draw):
    """None (no batch term), or O12 with a few hand-picked a, b, c and κ."""
    if draw(st.booleans()):
        return None
    return BatchModel(
        draw(st.sampled_from([0.0, 0.3, 2.0])),
        draw(st.sampled_from([0.0, 0.05, 0.4])),
        draw(st.sampled_from([0.5, 1.0])),
        draw(st.sampled_from([0.5, 1.0])),
    )


@settings(max_examples=500, deadline=None)
@given(chains(), st.floats(0.05, 20.0), st.sampled_from(["p99", "mean"]), batch_models())
def test_the_chosen_count_is_the_smallest_whose_predicted_latency_meets_the_bound(
    stations, bound, statistic, batch
):
    """Brute force over every count in the pools: when some meet the bound, the choice's total
    is the smallest total that meets it, and its own counts meet it (with the batch time of
    O12 in the latency, O14's cases)."""
    names = list(stations)
    ranges = [range(stations[n].low, stations[n].high + 1) for n in names]

    def latency(r):
        return critical_path(stations, r, statistic, batch)[0]

    feasible = [
        sum(counts)
        for counts in itertools.product(*ranges)
        if latency(dict(zip(names, counts, strict=True))) <= bound
    ]
    chosen = choose_replicas(stations, bound, statistic, batch)
    if feasible:
        assert latency(chosen) <= bound
        assert sum(chosen.values()) == min(feasible)


# ----------------------------------------------------------------------------- the policy


def test_a_backlog_beyond_the_pools_gets_the_fastest_recovery():
    """O10, a -> b, td = 10 s, ρ = 20/s each, pools of 4, x = 10/s, a holds 200 events, mean
    bound 2 s, stationary waits only. Spread over B the backlog asks b for 10 + 200/2 = 110/s
    > 4·20: no count keeps 2 s, and step 5 alone leaves a at 1 replica (10 s to drain it). The
    fallback stretches the bound: b is stable only for k > 100/70 = 1.43, and a's drain
    10/r_a s needs r_a = 4; at k = 1.6 (λ̂_b = 72.5/s) L = 2.55 + 0.15 s ≤ 3.2 s holds."""
    a = stats(
        "a", frm={"src": 100}, received=100, processed=100, busy_s=5.0, queue=200, pool=(1, 4)
    )
    b = stats("b", frm={"a": 100}, received=100, processed=100, busy_s=5.0, pool=(1, 4))
    snap = snapshot(a, b, interval_s=10.0, sources={"src": 100})
    config = ObjectiveConfig(objective=Objective(latency_mean_s=2.0), transient=False)
    flow = FlowState(
        true_rate=(("a", 20.0), ("b", 20.0)),
        selectivity=((("src", "a"), 1.0), (("a", "b"), 1.0)),
    )
    stations = stations_for(snap, flow, {"src": 10.0}, config)
    assert stations["b"].arrival == pytest.approx(110.0)
    assert choose_replicas(stations, 2.0, "mean") == {"a": 1, "b": 4}
    chosen, _, k = plan(snap, flow, {"src": 10.0}, config, 2.0, 1.0)
    assert chosen == {"a": 4, "b": 4}
    assert 100 / 70 < k < 1.6


def test_step_six_scales_out_at_once_and_in_only_with_margin():
    assert step_six(current=2, up=4, hold=5) == 5  # up: straight to what holds for the horizon
    assert step_six(current=5, up=3, hold=4) == 4  # in: not below what holds with margin
    assert step_six(current=5, up=3, hold=6) == 5  # the horizon needs more: stay
    assert step_six(current=3, up=3, hold=1) == 3


def one_op_snapshot(*, replicas, emitted, processed, busy_s, queue=0, td=10.0, p99_ms=None):
    op = stats(
        "op",
        replicas=replicas,
        frm={"src": emitted},
        received=emitted,
        processed=processed,
        busy_s=busy_s,
        queue=queue,
        pool=(1, 10),
    )
    return Snapshot(
        t=td, interval_s=td, sources=(("src", emitted),), operators=(op,), latency_ms_p99=p99_ms
    )


def test_decide_sizes_for_the_measured_true_rate_and_the_bound():
    """200 events in 10 s processed in 5 busy seconds: ρ = 40/s, λ̂ = 20/s. p99 ≤ 0.2 s:
    r = 1 is 0.025 + ln(0.5/0.01)/20 = 0.221 s; r = 2: 0.025 + ln(C/0.01)/60 with C = 1/21."""
    config = ObjectiveConfig(objective=Objective(latency_p99_s=0.2), margin=0.0)
    snap = one_op_snapshot(replicas=1, emitted=200, processed=200, busy_s=5.0)
    decision, _ = decide(snap, ObjectiveState(), config)
    assert decision.as_dict() == {"op": 2}
    assert "ρ=40.0/s" in decision.detail("op")
    relaxed = ObjectiveConfig(objective=Objective(latency_p99_s=0.25), margin=0.0)
    assert decide(snap, ObjectiveState(), relaxed)[0].as_dict() == {"op": 1}


def test_decide_scales_out_before_a_forecast_rise():
    """A steady rise of 5/s per interval up to 30/s on ρ = 40/s, mean bound 0.15 s. At the
    30/s just observed one replica keeps it (M/M/1 sojourn 1 / (40 − 30) = 0.1 s), but Holt
    forecasts ≈ 35/s for the next interval (1 / 5 = 0.2 s), so two are planned now; without
    a forecast (too short a history) one."""

    def last_decision(min_history: int) -> dict[str, int]:
        config = ObjectiveConfig(
            objective=Objective(latency_mean_s=0.15), margin=0.0, min_history=min_history
        )
        state = ObjectiveState()
        for rate in (5, 10, 15, 20, 25, 30):
            n = rate * 10
            snap = one_op_snapshot(replicas=1, emitted=n, processed=n, busy_s=n / 40)
            decision, state = decide(snap, state, config)
        return decision.as_dict()

    assert station_latency(station(arrival=30, rho=40), 1, "mean") == pytest.approx(0.1)
    assert last_decision(min_history=4) == {"op": 2}
    assert last_decision(min_history=50) == {"op": 1}


def test_the_point_forecast_when_the_next_decision_acts_within_the_bound():
    """O17: T = td + a against (1 − m)·(B − h). B = 10 s, m = 0.3: td = 5 s ≤ 7 s plans on the
    point, td = 10 s on the point widened by its measured errors (O18); h = 2 s: 5 ≤ 5.6, but
    with a = 1 s, 6 > 5.6."""
    p99_10s = Objective(latency_p99_s=10.0)
    assert forecast_bound(5.0, ObjectiveConfig(objective=p99_10s)) == "point"
    assert forecast_bound(10.0, ObjectiveConfig(objective=p99_10s)) == "errors"
    assert forecast_bound(5.0, ObjectiveConfig(objective=p99_10s, overhead_s=2.0)) == "point"
    late = ObjectiveConfig(objective=p99_10s, overhead_s=2.0, actuation_s=1.0)
    assert forecast_bound(5.0, late) == "errors"
    fixed = ObjectiveConfig(objective=p99_10s, bound="upper")
    assert forecast_bound(5.0, fixed) == "upper"


def test_after_a_spike_the_point_plans_the_rate_and_the_edge_the_spike():
    """A rate of 10/s with one 80/s interval: the forecast errors of the spike widen the upper
    edge of the forecaster's interval far above 10/s for the intervals after it, while the
    point comes back to about 10/s; with td = 5 s and B = 10 s `auto` plans that. With td =
    30 s `auto` widens the point by the measured errors of O18, none given here: the point."""
    history = {"src": (10.0,) * 8 + (80.0,) + (10.0,) * 4}
    p99_10s = Objective(latency_p99_s=10.0)
    edge = planned_rates(history, 5.0, ObjectiveConfig(objective=p99_10s, bound="upper"), 5.0)
    auto = planned_rates(history, 5.0, ObjectiveConfig(objective=p99_10s), 5.0)
    point = planned_rates(history, 30.0, ObjectiveConfig(objective=p99_10s, bound="point"), 30.0)
    slow = planned_rates(history, 30.0, ObjectiveConfig(objective=p99_10s), 30.0)
    assert edge[0]["src"] > 40.0
    assert 10.0 <= auto[0]["src"] < 15.0
    assert slow[0]["src"] == point[0]["src"]


def test_a_forecast_error_is_measured_against_the_forecast_plus_one_replicas_rate():
    """O18 with c = 40/s: 100/s seen where 60/s was forecast is e = ln(140 / 100); widening a
    point of 30/s by it plans 70·1.4 − 40 = 58/s, and an error of 0 plans the point."""
    e = log_error(100.0, 60.0, 40.0)
    assert e == pytest.approx(math.log(1.4))
    assert widened(30.0, e, 40.0) == pytest.approx(58.0)
    assert widened(30.0, 0.0, 40.0) == pytest.approx(30.0)
    assert log_error(0.0, -5.0, 40.0) == 0.0  # a negative forecast counts as 0


def test_the_widened_plan_goes_no_higher_than_the_largest_rate_seen_plus_one_replicas_rate():
    """O19 with c = 38/s: an error of ln 2.2 widens a point of 95/s to 133·2.2 − 38 = 254.6/s;
    with 100/s the largest rate seen the plan is 100 + 38 = 138/s. A point of 10/s widens to
    48·2.2 − 38 = 67.6/s, under that ceiling; a point above the ceiling is planned as it is."""
    e = math.log(2.2)
    assert widened(95.0, e, 38.0) == pytest.approx(254.6)
    assert widened(95.0, e, 38.0, 138.0) == pytest.approx(138.0)
    assert widened(10.0, e, 38.0, 138.0) == pytest.approx(67.6)
    assert widened(150.0, e, 38.0, 138.0) == pytest.approx(150.0)


def test_the_plan_after_a_spike_is_capped_by_the_history_it_forecasts_from():
    """O18 then O19 through the forecast: a naive forecast of 95/s (the last rate) with the error
    ln 2.2 measured at the spike's onset and c = 38/s plans 100 + 38 = 138/s, the history's
    peak (100/s) plus one replica's rate, not 254.6/s; at 10/s again it plans 67.6/s."""
    config = ObjectiveConfig(objective=P99_2S, forecaster="naive", bound="errors")
    errors, scales = {"src": (math.log(2.2),)}, {"src": 38.0}
    high = {"src": (10.0,) * 8 + (100.0, 100.0, 95.0)}
    low = {"src": (*high["src"], 10.0)}
    for history, expected in ((high, 138.0), (low, 67.6)):
        plans, _ = forecast_rates(history, 5.0, config, (5.0,), errors, scales)
        assert plans[0]["src"] == pytest.approx(expected)


def test_one_spike_widens_the_plan_only_until_enough_errors_outnumber_it():
    """Q of O18 at level 0.995 is the k-th largest error, k = ⌊0.005·n⌋: among 150 errors a
    single spike is the largest (k = 0), among 200 the second largest (k = 1) is covered, and
    a spike that recurs three times among 400 (k = 2) is."""
    assert error_quantile([0.0] * 149 + [1.0], 0.995) == 1.0
    assert error_quantile([0.0] * 199 + [1.0], 0.995) == 0.0
    assert error_quantile([0.0] * 397 + [1.0, 0.9, 0.8], 0.995) == 0.8
    assert error_quantile([-0.5] * 10, 0.995) == 0.0  # over-forecasts never narrow the point
    assert error_quantile([], 0.995) == 0.0


def test_the_error_scale_is_the_source_rate_that_fills_one_replica_of_the_slowest_operator():
    """c_p of O18 = min_i ρ_i / s_{p→i}: a (ρ = 200/s) passes half its events to b (ρ = 40/s),
    so one replica of b is full at 80 events/s of the source, one of a at 200/s: c = 80/s."""
    a = stats("a", frm={"src": 100}, received=100, processed=100, emitted=50, busy_s=0.5)
    b = stats("b", frm={"a": 50}, received=50, processed=50, busy_s=1.25)
    snap = snapshot(a, b, interval_s=1.0, sources={"src": 100})
    flow = FlowState(
        selectivity=((("src", "a"), 1.0), (("a", "b"), 0.5)),
        true_rate=(("a", 200.0), ("b", 40.0)),
    )
    assert error_scales(snap, flow, ObjectiveConfig(objective=P99_2S)) == {"src": 80.0}


def test_decide_widens_the_plan_by_a_measured_rise_and_forgets_it_among_enough_errors():
    """The naive forecast of 20/s on ρ = 40/s (c = 40/s), td = 10 s: one interval of 60/s
    is the error e = ln(100 / 60); the interval after it plans (20 + 40)·100/60 − 40 = 60/s.
    200 intervals of 20/s later that error is one of 204 (k = 1): the plan is 20/s again."""
    config = ObjectiveConfig(objective=P99_2S, forecaster="naive")
    state = ObjectiveState()

    def interval(rate: int) -> str:
        nonlocal state
        n = rate * 10
        snap = one_op_snapshot(replicas=2, emitted=n, processed=n, busy_s=n / 40)
        decision, state = decide(snap, state, config)
        return decision.detail("op")

    for rate in (20,) * 6 + (60,):
        interval(rate)
    assert "λ̂=60.0/s" in interval(20)
    for _ in range(199):
        interval(20)
    assert "λ̂=20.0/s" in interval(20)
    errors = dict(state.errors)["src"]  # measured from the fifth interval on
    assert len(errors) == 204 and sorted(errors, reverse=True)[:2] == [math.log(100 / 60), 0.0]


def test_a_latency_within_the_margin_neither_calibrates_nor_holds_the_replicas():
    """Eight replicas of ρ = 40/s at 20/s measure p99 = 1.2 s against B = 2 s: within the
    scale-in margin (1 − m)·B = 1.4 s, so β = 1 and the plan goes down to one replica (its
    p99 0.025 + ln(0.5 / 0.01) / 20 = 0.22 s). With the floor of before (0.3·B = 0.6 s) the
    same latency inverts at the eight replicas that ran to β_max = 4 (the model's p99 at 80/s
    on eight is far below 1.2 s), and the plan keeps two replicas for 80/s: at u = 1 only the
    transient wait of O11 over T = 10 s holds, 0.025 + 2.576·√(160·10) / 80 = 1.31 s ≤ 1.4 s
    (one replica: (80 − 40)·10 events queue, over 10 s)."""

    def last(**options: float) -> tuple[int, str]:
        config = ObjectiveConfig(objective=P99_2S, **options)
        state = ObjectiveState()
        for _ in range(6):
            snap = one_op_snapshot(
                replicas=8, emitted=200, processed=200, busy_s=5.0, p99_ms=1200.0
            )
            decision, state = decide(snap, state, config)
        return decision.as_dict()["op"], decision.detail("op")

    assert station_latency(station(arrival=20, rho=40), 1, "p99") == pytest.approx(
        0.025 + math.log(50) / 20
    )
    replicas, reason = last()
    assert replicas == 1 and "β=1.00" in reason
    assert transient_wait_s(80.0, 80.0, 10.0, "p99") + 0.025 == pytest.approx(1.313, abs=1e-3)
    replicas, reason = last(burst_floor=0.3)
    assert replicas == 2 and "β=4.00" in reason


def test_burst_factor_inverts_the_model_on_the_measured_latency():
    """With the replicas that ran and the rates seen, the model's p99 is L(1); a measured p99
    above it gives the factor β > 1 at which the model predicts what was measured (O8; the
    floor of O16 off, so that 300 ms calibrates)."""
    config = ObjectiveConfig(objective=P99_2S, burst_floor=0.0)
    snap = one_op_snapshot(replicas=2, emitted=200, processed=200, busy_s=5.0, p99_ms=10.0)
    flow = FlowState(true_rate=(("op", 40.0),), selectivity=((("src", "op"), 1.0),))
    assert burst_factor(snap, flow, [{"op": 0}], config) == 1.0  # measured below the model
    measured = one_op_snapshot(replicas=2, emitted=200, processed=200, busy_s=5.0, p99_ms=300.0)
    beta = burst_factor(measured, flow, [{"op": 0}], config)
    wait = wait_s(20.0 * beta, 40.0, 2, "p99")
    assert 1.0 < beta < config.burst_max
    assert wait + 1 / 40 == pytest.approx(0.3, rel=1e-6)


def test_a_latency_far_below_the_bound_calibrates_no_burst():
    """O16: with a floor f = 0.3 and B = 2 s, a measured p99 below 0.6 s gives β = 1 even
    though the model (two replicas of ρ = 40/s at 20/s: W = ln(0.1 / 0.01) / 60 = 0.038 s, plus
    1/ρ = 0.025 s) explains only 63 ms; at 0.61 s the model is inverted as in O8:
    W(20·β) + 0.025 = 0.61. With h = 1 s the floor is 0.3·(2 − 1) = 0.3 s of ℓ − h. The
    default floor is 1 − m = 0.7: nothing below 1.4 s calibrates."""
    flow = FlowState(true_rate=(("op", 40.0),), selectivity=((("src", "op"), 1.0),))

    def beta(p99_ms: float, **options: float) -> float | None:
        config = ObjectiveConfig(objective=P99_2S, **({"burst_floor": 0.3} | options))
        snap = one_op_snapshot(replicas=2, emitted=200, processed=200, busy_s=5.0, p99_ms=p99_ms)
        return burst_factor(snap, flow, [{"op": 0}], config)

    assert ObjectiveConfig(objective=P99_2S).floor == pytest.approx(0.7)
    assert ObjectiveConfig(objective=P99_2S, margin=0.2).floor == pytest.approx(0.8)
    assert beta(1390.0, burst_floor=None) == 1.0
    assert beta(1410.0, burst_floor=None) > 1.0
    assert beta(300.0) == 1.0
    assert beta(590.0) == 1.0
    above = beta(610.0)
    assert above is not None and 1.0 < above < 4.0
    assert wait_s(20.0 * above, 40.0, 2, "p99") + 0.025 == pytest.approx(0.61, rel=1e-6)
    assert beta(300.0, burst_floor=0.0) > 1.0  # without the floor, O8 alone
    assert beta(1290.0, overhead_s=1.0) == 1.0  # ℓ − h = 0.29 s < 0.3 s
    assert beta(1310.0, overhead_s=1.0) > 1.0


def test_bursts_and_batch_spreads_are_kept_over_their_own_windows():
    """β is planned on the largest of the last `burst_window` (5) intervals and φ on the
    largest of the last `spread_window` (10): an interval that measured nothing unexplained
    (β(t) = φ(t) = 1) pushes a β of 3 measured five intervals before out of its window, while
    a φ of 2 measured nine intervals before stays in its own."""
    config = ObjectiveConfig(objective=P99_2S)
    snap = one_op_snapshot(replicas=1, emitted=200, processed=200, busy_s=5.0, p99_ms=90.0)
    state = ObjectiveState(
        queues=((("op", 0),),),
        replicas=(("op", 1),),
        bursts=(3.0, 1.0, 1.0, 1.0, 1.0),
    )
    decision, after = decide(snap, state, config)
    assert after.bursts == (1.0,) * 5
    assert "β=1.00" in decision.detail("op")
    kept = decide(snap, state, config.model_copy(update={"burst_window": 10}))
    assert kept[1].bursts == (3.0, *(1.0,) * 5)
    assert "β=3.00" in kept[0].detail("op")
    op = dataclasses.replace(snap.operators[0], replica_batches=(10,))
    batched = dataclasses.replace(snap, operators=(op,))
    spreads = (2.0, *(1.0,) * 8)
    _, after = decide(batched, dataclasses.replace(state, spreads=spreads), config)
    assert after.spreads == (*spreads, 1.0)


def test_on_a_micro_batch_engine_the_unexplained_latency_is_the_batches_spread():
    """O15: 10 batches in td = 10 s (D(t) = 1 s), two replicas of ρ = 40/s at 20/s, κ = η = 1:
    the model's p99 is W + 1/ρ + (1 + κ)·D = 0.038 + 0.025 + 2 = 2.063 s (C(2, 0.5) = 0.1, so
    W = ln(0.1 / 0.01) / (80 − 20)). Measured 2.0 s: φ = 1; 3.063 s: φ = (3.063 − 0.063) / 2 =
    1.5; 30 s: φ capped at β_max = 4."""
    config = ObjectiveConfig(objective=P99_2S)
    flow = FlowState(true_rate=(("op", 40.0),), selectivity=((("src", "op"), 1.0),))
    batch = BatchModel(0.5, 0.0, 1.0, 1.0)

    def spread(p99_ms: float) -> float | None:
        snap = one_op_snapshot(replicas=2, emitted=200, processed=200, busy_s=5.0, p99_ms=p99_ms)
        op = dataclasses.replace(snap.operators[0], replica_batches=(10, 10))
        return batch_spread(dataclasses.replace(snap, operators=(op,)), flow, [{}], config, batch)

    wait = math.log(10) / 60
    assert spread(2000.0) == 1.0
    assert spread(1000 * (3.0 + wait + 0.025)) == pytest.approx(1.5)
    assert spread(30000.0) == config.burst_max
    doubled = dataclasses.replace(batch, spread=1.5)
    assert doubled.period_s(4, 0.5) == pytest.approx(1.5 * batch.period_s(4, 0.5))


# ----------------------------------------------------------------------------- a real run


def test_a_simulated_run_marks_every_interval_and_sums_them_up(tmp_path, monkeypatch):
    """The simulator's per-interval p99 is judged in intervals.csv and summed in summary.json;
    an overload interval is missed."""
    trace = Trace(np.array([50.0] * 6 + [400.0] * 2 + [50.0] * 8), step_s=5.0)
    monkeypatch.setattr(session, "prepare_workload", lambda c, p, trace_=None: trace)
    config = make_config(
        policy="objective",
        objective={"latency_p99_s": 1.0},
        interval_s=5.0,
        event_timeout_s=None,
        queue_capacity=None,
        drain_s=30,
        engine="sim",
        out=tmp_path / "run",
        history=tmp_path / "h.sqlite",
    )
    _, paths = run_session(
        one_operator(pool=(1, 4)), config, title="t", quiet=True, sim=SimSettings(measure_cpu=False)
    )
    rows = pd.read_csv(paths["intervals"])
    summary = json.loads(paths["summary"].read_text())["objective"]
    judged = rows["objective_met"].dropna()
    assert summary["intervals_met"] == int((judged == 1).sum())
    assert summary["intervals_missed"] == int((judged == 0).sum()) >= 1  # the 400/s burst
    assert (rows.loc[rows["objective_met"] == 0, "latency_ms_p99"].fillna(1e9) > 1000).all()
    assert summary["met_share"] == pytest.approx(summary["intervals_met"] / len(judged))
    assert "Latency objective: p99 ≤ 1 s" in paths["report"].read_text()


def test_the_live_table_shows_the_verdict_and_the_share_so_far():
    import io

    from rich.console import Console

    from elastream.control.policy import Decision
    from elastream.report.live import LiveTable

    pipeline = one_operator()
    live = LiveTable(pipeline, console=Console(file=io.StringIO(), width=300), objective=P99_2S)
    snap = one_op_snapshot(replicas=1, emitted=10, processed=10, busy_s=0.1, p99_ms=100.0)
    live(snap, Decision.of({"op": 1}))
    assert "objective p99 ≤ 2 s: met (met in 100.0% of intervals)" in live.header(snap)
    late = one_op_snapshot(replicas=1, emitted=10, processed=10, busy_s=0.1, p99_ms=2500.0)
    live(late, Decision.of({"op": 1}))
    assert "objective p99 ≤ 2 s: MISSED (met in 50.0% of intervals)" in live.header(late)
    assert "objective" not in LiveTable(pipeline).header(late)
