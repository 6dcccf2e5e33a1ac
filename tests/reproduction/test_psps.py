"""PSPS Eq. 1-4 against the paper's worked examples (Table II, Fig. 5) and Alg. 2 via guards."""

import pytest
from support.builders import snapshot, stats

from elastream.control.controller import Controller
from elastream.control.policies import psps
from elastream.control.policies.psps import PspsConfig, PspsState, predict


def table_ii(pool=(1, 12)):
    # Table II (a), td = 1000 ms: λ_G(t) = 100 events enter O1. The paper gives no pool sizes;
    # pools of 12 leave room for Table II (b)'s 9 replicas of O3.
    o1 = stats(
        "O1",
        received=100,
        frm={"src": 100},
        processed=140,
        queue=0,
        service_time_s=0.0166,
        pool=pool,
    )
    o2 = stats(
        "O2", received=117, frm={"O1": 117}, processed=120, queue=7, service_time_s=0.025, pool=pool
    )
    o3 = stats(
        "O3", received=90, frm={"O2": 90}, processed=90, queue=20, service_time_s=0.100, pool=pool
    )
    return snapshot(o1, o2, o3, interval_s=1.0, sources={"src": 100})


def test_table_ii_thetas_predictions_and_replicas():
    pred, _ = predict(table_ii(), PspsState(), PspsConfig())
    assert pred["O1"].theta == pytest.approx(1.0)
    assert pred["O2"].theta == pytest.approx(0.833, abs=0.005)
    assert pred["O3"].theta == pytest.approx(0.625, abs=0.005)
    assert [pred[o].arrivals for o in ("O1", "O2", "O3")] == [100, 84, 63]
    assert [pred[o].backlog for o in ("O1", "O2", "O3")] == [0, 7, 20]
    assert [pred[o].total for o in ("O1", "O2", "O3")] == [100, 91, 83]
    assert [pred[o].replicas for o in ("O1", "O2", "O3")] == [2, 3, 9]


def test_fig5_theta_of_join_is_058():
    # O1 splits 70/30 to O2 and O3; O2 sends 40% of its output to O4, O3 all of it.
    o1 = stats("O1", frm={"src": 100}, processed=100)
    o2 = stats("O2", frm={"O1": 70}, processed=70)
    o3 = stats("O3", frm={"O1": 30}, processed=30)
    o4 = stats("O4", frm={"O2": 28, "O3": 30}, processed=58)
    pred, _ = predict(snapshot(o1, o2, o3, o4, sources={"src": 100}), PspsState(), PspsConfig())
    assert pred["O2"].theta == pytest.approx(0.7)
    assert pred["O3"].theta == pytest.approx(0.3)
    assert pred["O4"].theta == pytest.approx(0.58)


def test_fig3_same_load_different_et():
    # Fig. 3: same λ̂, different et -> 2, 1, 4 replicas (λ̂ = 100, td = 1 s).
    ops = [
        stats(n, replicas=2, frm={"src": 100}, processed=100, service_time_s=et)
        for n, et in (("O1", 0.02), ("O2", 0.01), ("O3", 0.04))
    ]
    pred, _ = predict(snapshot(*ops, sources={"src": 100}), PspsState(), PspsConfig())
    assert [pred[n].replicas for n in ("O1", "O2", "O3")] == [2, 1, 4]


def test_unknown_theta_and_et_fall_back_to_last_known():
    first = snapshot(
        stats("A", frm={"src": 50}, processed=50, service_time_s=0.02),
        stats("B", frm={"A": 25}, processed=25, service_time_s=0.04),
        sources={"src": 50},
    )
    _, state = predict(first, PspsState(), PspsConfig())
    # Next interval: A processed nothing (μ_A = 0) and B measured no et.
    second = snapshot(
        stats("A", frm={"src": 100}, processed=0, queue=100, service_time_s=0.02),
        stats("B", frm={"A": 0}, processed=0, service_time_s=None),
        sources={"src": 100},
    )
    pred, _ = predict(second, state, PspsConfig())
    assert pred["B"].theta == pytest.approx(0.5)  # last θ^A_B kept
    assert pred["B"].replicas == 2  # ceil(50 * 0.04 / 1)
    assert pred["A"].replicas == 4  # ceil((100 + 100) * 0.02 / 1)


def test_guards_pass_table_ii_replicas_through_a_large_pool():
    controller = Controller.build("psps")
    decision, _ = controller.decide(table_ii(), controller.initial_state())
    assert decision.as_dict() == {"O1": 2, "O2": 3, "O3": 9}  # Table II (b)
    assert "λ̂=83" in decision.detail("O3")
    assert psps.POLICY.name == "psps"


def test_guards_clamp_psps_to_a_smaller_pool():
    controller = Controller.build("psps")
    decision, _ = controller.decide(table_ii(pool=(1, 8)), controller.initial_state())
    assert decision.as_dict() == {"O1": 2, "O2": 3, "O3": 8}  # O3 wants 9, pool max is 8
