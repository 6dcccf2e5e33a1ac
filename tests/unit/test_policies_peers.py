"""The ds2, dabs and lagaware policies on hand-worked snapshots (numbers worked in the comments)."""

import pytest
from support.builders import snapshot, stats

from elastream.control.controller import Controller
from elastream.control.guards import GuardConfig
from elastream.control.policies.dabs import DabsConfig, DabsState, linear_forecast
from elastream.control.policies.dabs import decide as dabs_decide
from elastream.control.policies.ds2 import Ds2Config, FlowState, propagate, update_flow
from elastream.control.policies.ds2 import decide as ds2_decide
from elastream.control.policies.lagaware import Holt, LagAwareConfig, LagAwareState
from elastream.control.policies.lagaware import decide as lagaware_decide
from elastream.control.policies.proactive import ProactiveConfig, ProactiveState
from elastream.control.policies.proactive import decide as proactive_decide
from elastream.control.policy import PolicyConfigError
from elastream.prediction.forecasting import forecast
from elastream.prediction.series import Series


def chain(queue_a=0, queue_b=0, busy_a=8.0, busy_b=20.0, et_a=None):
    # td = 10 s, the source sent 1000 events (100/s). A processed 800 in 8 busy seconds
    # (ρ_A = 100/s) and sent 400 to B (s_{A,B} = 400/800 = 0.5); B processed 400 in 20 busy
    # seconds (ρ_B = 20/s).
    a = stats(
        "A",
        replicas=2,
        received=1000,
        frm={"src": 1000},
        processed=800,
        emitted=400,
        queue=queue_a,
        busy_s=busy_a,
        service_time_s=et_a,
    )
    b = stats(
        "B", replicas=3, received=400, frm={"A": 400}, processed=400, queue=queue_b, busy_s=busy_b
    )
    return snapshot(a, b, interval_s=10.0, sources={"src": 1000})


# ---------------------------------------------------------------- ds2


def test_ds2_true_rates_and_selectivity_at_target_utilization():
    decision, state = ds2_decide(chain(), FlowState(), Ds2Config(target_utilization=0.8))
    # D_A = 1.0 · 100 = 100/s -> ⌈100 / (100 · 0.8)⌉ = ⌈1.25⌉ = 2
    # D_B = 0.5 · 100 = 50/s  -> ⌈50 / (20 · 0.8)⌉ = ⌈3.125⌉ = 4
    assert decision.as_dict() == {"A": 2, "B": 4}
    assert dict(state.true_rate) == pytest.approx({"A": 100.0, "B": 20.0})
    assert dict(state.selectivity) == pytest.approx({("src", "A"): 1.0, ("A", "B"): 0.5})


def test_ds2_catch_up_flows_downstream():
    snap = chain(queue_a=400, queue_b=100)
    decision, _ = ds2_decide(snap, FlowState(), Ds2Config(target_utilization=0.8, catch_up_s=20))
    # c_A = 400 / 20 = 20/s -> D_A = 120/s -> ⌈120 / 80⌉ = ⌈1.5⌉ = 2
    # c_B = 100 / 20 = 5/s  -> D_B = 0.5 · 120 + 5 = 65/s -> ⌈65 / 16⌉ = ⌈4.06⌉ = 5
    assert decision.as_dict() == {"A": 2, "B": 5}
    # Without catch-up the queues are ignored: 100/s -> 1 replica of A, 50/s -> 3 of B.
    assert ds2_decide(snap, FlowState(), Ds2Config())[0].as_dict() == {"A": 1, "B": 3}


def test_ds2_falls_back_to_et_then_last_known_values():
    # No busy time measured: ρ_A = 1 / et_A = 1 / 0.05 = 20/s -> D_A = 100 -> 5 replicas.
    decision, state = ds2_decide(chain(busy_a=0.0, et_a=0.05), FlowState(), Ds2Config())
    assert decision.as_dict()["A"] == 5
    # Next interval A processed nothing and sent nothing: its ρ (20/s) and s_{A,B} (0.5) are kept.
    a = stats("A", received=2000, frm={"src": 2000}, processed=0, queue=2000)
    b = stats("B", frm={"A": 0}, processed=0)
    decision, _ = ds2_decide(
        snapshot(a, b, interval_s=10.0, sources={"src": 2000}), state, Ds2Config()
    )
    # D_A = 200/s -> ⌈200 / 20⌉ = 10; D_B = 0.5 · 200 = 100/s at ρ_B = 20/s (kept) -> 5.
    assert decision.as_dict() == {"A": 10, "B": 5}


def test_propagate_through_split_and_join_is_fig5():
    # Fig. 5 of seed 000: O1 splits 70/30, O2 sends 40% of its output to O4, O3 all of it.
    ops = (
        stats("O1", frm={"src": 100}, processed=100),
        stats("O2", frm={"O1": 70}, processed=70),
        stats("O3", frm={"O1": 30}, processed=30),
        stats("O4", frm={"O2": 28, "O3": 30}, processed=58),
    )
    snap = snapshot(*ops, sources={"src": 100})
    demand = propagate(snap, update_flow(snap, FlowState()), {"src": 10.0})
    # D_4 = 0.4 · 0.7 · 10 + 1.0 · 0.3 · 10 = 5.8 events/s (θ_4 = 0.58)
    assert demand == pytest.approx({"O1": 10.0, "O2": 7.0, "O3": 3.0, "O4": 5.8})


def test_ds2_rejects_bad_options():
    with pytest.raises(PolicyConfigError, match="target_utilization"):
        Controller.build("ds2", {"target_utilization": 1.5})
    with pytest.raises(PolicyConfigError, match="catch_up_s"):
        Controller.build("ds2", {"catch_up_s": 0})


def test_ds2_guarded_scale_down_waits_for_the_stabilization_window():
    controller = Controller.build("ds2", guards=GuardConfig(stabilization_s=25))
    state = controller.initial_state()
    big = snapshot(
        stats("A", replicas=1, frm={"src": 500}, processed=500, busy_s=10.0),
        t=10.0,
        interval_s=10.0,
        sources={"src": 500},
    )
    decision, state = controller.decide(big, state)
    assert decision.as_dict() == {"A": 1}  # D = 50/s at ρ = 50/s
    rise = snapshot(
        stats("A", replicas=1, frm={"src": 2000}, processed=500, busy_s=10.0),
        t=20.0,
        interval_s=10.0,
        sources={"src": 2000},
    )
    decision, state = controller.decide(rise, state)
    assert decision.as_dict() == {"A": 4}  # 200/s at 50/s: scale-ups are never held back
    fall = snapshot(
        stats("A", replicas=4, frm={"src": 500}, processed=500, busy_s=10.0),
        t=30.0,
        interval_s=10.0,
        sources={"src": 500},
    )
    decision, state = controller.decide(fall, state)
    assert decision.as_dict() == {"A": 4}  # wants 1, but 4 was recommended 10 s ago


# ---------------------------------------------------------------- dabs


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((7.0,), 7.0),
        ((10.0, 20.0, 30.0), 40.0),  # exact line: slope 10, next point 40
        ((10.0, 30.0, 20.0), 30.0),  # k̄ = 1, x̄ = 20, b = 10 / 2 = 5 -> 20 + 5 · (3 - 1) = 30
        ((30.0, 10.0), 0.0),  # b = -20 -> 20 - 20 · 1.5 = -10, floored at 0
    ],
)
def test_linear_forecast(values, expected):
    assert linear_forecast(values) == pytest.approx(expected)


def run_dabs(rates, config, queue=0):
    # One operator A fed by `src` (td = 1 s); each interval A processed 30 events in 3 busy s.
    state = DabsState()
    decision = None
    for k, rate in enumerate(rates):
        a = stats("A", frm={"src": rate}, processed=30, queue=queue, busy_s=3.0)
        decision, state = dabs_decide(
            snapshot(a, t=k + 1.0, interval_s=1.0, sources={"src": rate}), state, config
        )
    return decision, state


def test_dabs_regression_plus_pending_over_capacity():
    decision, state = run_dabs([10, 20, 30], DabsConfig(window=5), queue=10)
    # x̂ = 40/s (exact line), L = 40 + 10 / 1 = 50/s, κ = 30 / 3 = 10/s -> ⌈50 / 10⌉ = 5
    assert decision.as_dict() == {"A": 5}
    assert dict(state.history)["src"] == (10.0, 20.0, 30.0)


def test_dabs_window_keeps_the_last_n_rates():
    decision, state = run_dabs([10, 30, 20], DabsConfig(window=2))
    # Only (30, 20) remain: b = -10, x̂ = 25 - 10 · 1.5 = 10/s -> ⌈10 / 10⌉ = 1
    assert dict(state.history)["src"] == (30.0, 20.0)
    assert decision.as_dict() == {"A": 1}
    decision, _ = run_dabs([10, 30, 20], DabsConfig(window=3))
    assert decision.as_dict() == {"A": 3}  # x̂ = 30/s -> ⌈30 / 10⌉


def test_dabs_rejects_empty_window():
    with pytest.raises(PolicyConfigError, match="window"):
        Controller.build("dabs", {"window": 0})


# ---------------------------------------------------------------- lagaware


def test_holt_update_by_hand():
    h = Holt(100.0).update(200.0, alpha=0.6, beta=0.3)
    # ℓ = 0.6 · 200 + 0.4 · (100 + 0) = 160; b = 0.3 · (160 - 100) + 0.7 · 0 = 18
    assert (h.level, h.trend) == pytest.approx((160.0, 18.0))
    h = h.update(150.0, alpha=0.6, beta=0.3)
    # ℓ = 0.6 · 150 + 0.4 · (160 + 18) = 161.2; b = 0.3 · 1.2 + 0.7 · 18 = 12.96
    assert (h.level, h.trend, h.forecast) == pytest.approx((161.2, 12.96, 174.16))


def one_op(rate, t, queue=0):
    # td = 10 s, A has ρ = 1000 events / 10 busy s = 100/s.
    a = stats("A", frm={"src": rate}, processed=1000, queue=queue, busy_s=10.0)
    return snapshot(a, t=t, interval_s=10.0, sources={"src": rate})


def test_lagaware_extrapolates_a_rise():
    config = LagAwareConfig(alpha=1.0, beta=1.0, target_utilization=0.9)
    decision, state = lagaware_decide(one_op(1000, 10.0), LagAwareState(), config)
    assert decision.as_dict() == {"A": 2}  # first rate 100/s -> ⌈100 / 90⌉ = 2
    decision, _ = lagaware_decide(one_op(2000, 20.0), state, config)
    # α = β = 1: ℓ = 200, b = 200 - 100 = 100, P = max(200, 300) = 300/s -> ⌈300 / 90⌉ = 4
    assert decision.as_dict() == {"A": 4}


def test_lagaware_never_plans_below_the_observed_rate_but_keeps_a_falling_trend():
    config = LagAwareConfig()  # α = 0.6, β = 0.3, u = 1
    _, state = lagaware_decide(one_op(1000, 10.0), LagAwareState(), config)
    decision, state = lagaware_decide(one_op(2000, 20.0), state, config)
    # forecast ℓ + b = 160 + 18 = 178 < 200 observed -> P = 200/s -> ⌈200 / 100⌉ = 2
    assert decision.as_dict() == {"A": 2}
    decision, _ = lagaware_decide(one_op(1500, 30.0), state, config)
    # forecast 174.16 > 150 observed -> P = 174.16/s -> ⌈1.74⌉ = 2 (the observed rate gives 2 too)
    assert decision.detail("A").startswith("D=174.2/s")
    assert decision.as_dict() == {"A": 2}


def test_lagaware_drains_queues_within_the_horizon_and_passes_the_drain_downstream():
    snap = chain(queue_a=400, queue_b=100)
    decision, _ = lagaware_decide(snap, LagAwareState(), LagAwareConfig(target_utilization=0.8))
    # H = td / 2 = 5 s. D_A = 100 + 400 / 5 = 180/s -> ⌈180 / (100 · 0.8)⌉ = ⌈2.25⌉ = 3
    # D_B = 0.5 · 180 + 100 / 5 = 110/s -> ⌈110 / (20 · 0.8)⌉ = ⌈6.875⌉ = 7
    assert decision.as_dict() == {"A": 3, "B": 7}
    config = LagAwareConfig(target_utilization=0.8, drain_s=40)
    decision, _ = lagaware_decide(snap, LagAwareState(), config)
    # H = 40 s: D_A = 110 -> ⌈1.375⌉ = 2; D_B = 55 + 2.5 = 57.5 -> ⌈3.59⌉ = 4
    assert decision.as_dict() == {"A": 2, "B": 4}


def test_lagaware_rejects_bad_options():
    with pytest.raises(PolicyConfigError, match="alpha"):
        Controller.build("lagaware", {"alpha": 0})
    with pytest.raises(PolicyConfigError, match="drain_s"):
        Controller.build("lagaware", {"drain_s": -1})


# ---------------------------------------------------------------- proactive


def run_proactive(rates, config):
    state, decision = ProactiveState(), None
    for k, rate in enumerate(rates):
        decision, state = proactive_decide(one_op(rate, 10.0 * (k + 1)), state, config)
    return decision


def test_holt_forecaster_by_hand():
    fit = forecast(Series([100.0, 200.0, 150.0]), "holt", 2, {"alpha": 0.6, "beta": 0.3})
    # start ℓ = 100, b = 100. x = 200: error 200 - 200 = 0; ℓ = 0.6·200 + 0.4·200 = 200,
    # b = 0.3·100 + 0.7·100 = 100. x = 150: error 150 - 300 = -150; ℓ = 90 + 0.4·300 = 210,
    # b = 0.3·10 + 0.7·100 = 73. Point: 283, 356. σ = std(0, -150) = 106.07;
    # spread: σ·1 and σ·√(1 + (0.6·1.3)²) = σ·1.26823; z(0.95) = 1.64485.
    assert fit.point == pytest.approx([283.0, 356.0])
    assert fit.upper - fit.point == pytest.approx([174.47, 221.26], abs=0.01)
    steady = forecast(Series([5.0, 7.0, 9.0, 11.0]), "holt", 3)
    assert steady.point == pytest.approx([13.0, 15.0, 17.0])  # a line is continued exactly
    assert steady.upper == pytest.approx(steady.point)  # no error seen: no spread


def test_proactive_plans_the_forecast_peak_of_the_lead_before_it_arrives():
    config = ProactiveConfig(min_history=3, lead_s=20, bound="point")
    # src rises 100, 120, 140/s; A: ρ = 100/s. Holt (0.6, 0.3) from ℓ = 100, b = 20 follows the
    # line exactly: ℓ = 140, b = 20; the lead of 2 intervals peaks at 180/s -> ⌈1.8⌉ = 2
    decision = run_proactive([1000, 1200, 1400], config)
    assert decision.detail("A").startswith("D=180.0/s")
    assert decision.as_dict() == {"A": 2}
    # ds2 (and psps) size for the 140/s just seen: also 2 replicas, but from D = 140
    ds2, _ = ds2_decide(one_op(1400, 30.0), FlowState(), Ds2Config())
    assert ds2.detail("A").startswith("D=140.0/s")


def test_proactive_uses_the_observed_rate_until_it_has_history_and_never_plans_below_it():
    config = ProactiveConfig(min_history=3)
    assert run_proactive([1000, 3000], config).detail("A").startswith("D=300.0/s")
    # falling: the forecast (below 50/s) never plans below the observed 50/s
    decision = run_proactive([3000, 2000, 1000, 500], config)
    assert decision.detail("A").startswith("D=50.0/s")


def test_proactive_names_a_bad_forecaster():
    with pytest.raises(PolicyConfigError, match="unknown forecast model 'nope'"):
        Controller.build("proactive", {"forecaster": "nope"})
