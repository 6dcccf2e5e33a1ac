"""The local decision: Algs. 2, 3, 4 (count), 8 and 11, and the threshold naming."""

import math

import pytest
from pydantic import ValidationError

from elastream.decentral.decision import (
    Action,
    DecisionConfig,
    apply_proba,
    decide,
    duplication_count,
    get_probability,
)

CFG = DecisionConfig()  # C = 500, r = 0.7, up 0.8, down 0.6


def test_get_probability_follows_alg2():
    # 7 instances each at 450 tuples: L = 3150, L / (r C) = 9, n_diff = 2, p = 2/7
    assert get_probability(500, 0.7, 450, 7) == pytest.approx(2 / 7)
    # n_diff is floored: 9.9 - 7 -> 2
    assert get_probability(500, 0.7, 495, 7) == pytest.approx(math.floor(495 * 7 / 350 - 7) / 7)
    # below target the factor is negative and at least -1
    assert get_probability(500, 0.7, 100, 4) == pytest.approx(math.floor(400 / 350 - 4) / 4)
    assert get_probability(500, 0.7, 0, 5) == -1.0


@pytest.mark.parametrize(("load", "n_t"), [(-1.0, 3), (10.0, 0)])
def test_get_probability_rejects_bad_input(load, n_t):
    with pytest.raises(ValueError, match="load|n_t"):
        get_probability(500, 0.7, load, n_t)


def test_apply_proba_and_duplication_count():
    assert apply_proba(0.3, 0.29) == 1 and apply_proba(0.3, 0.3) == 0
    assert duplication_count(2.25, 0.2) == 3 and duplication_count(2.25, 0.3) == 2
    assert duplication_count(0.0, 0.0) == 0 and duplication_count(-0.5, 0.0) == 0
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        apply_proba(0.5, 1.0)


def test_expected_duplications_match_n_diff():
    # siblings deciding independently on the same (l_t, n_t) create n_diff instances on average
    p = get_probability(500, 0.7, 1400, 3)  # L = 4200 -> 12 needed, n_diff = 9, p = 3
    draws = [i / 1000 for i in range(1000)]
    mean = sum(duplication_count(p, u) for u in draws) / len(draws)
    assert mean * 3 == pytest.approx(9)
    p = get_probability(500, 0.7, 500, 7)  # L = 3500 -> 10 needed, n_diff = 3, p = 3/7
    mean = sum(duplication_count(p, u) for u in draws) / len(draws)
    assert mean * 7 == pytest.approx(3, abs=0.01)


def test_alg11_thresholds_and_keeper():
    out = decide(CFG, load=450, n_t=7, is_keeper=False, u=0.0)  # ratio 0.9 >= 0.8
    assert out.action is Action.SCALE_OUT and out.count == 1
    inside = decide(CFG, load=350, n_t=7, is_keeper=False, u=0.0)  # ratio 0.7 in the dead band
    assert inside.action is Action.NONE
    down = decide(CFG, load=100, n_t=7, is_keeper=False, u=0.0)  # ratio 0.2 <= 0.6
    assert down.action is Action.SCALE_IN and down.count == 1
    assert decide(CFG, load=100, n_t=7, is_keeper=True, u=0.0).action is Action.NONE
    # deletion probability is -p: with p = -5/7 a draw of 0.8 keeps the instance
    assert decide(CFG, load=100, n_t=7, is_keeper=False, u=0.8).action is Action.NONE


def test_threshold_naming_is_validated():
    # the paper's symbols taken literally (up = 0.6, down = 0.8) have no dead band: rejected
    with pytest.raises(ValidationError, match="thres_down < target_ratio < thres_up"):
        DecisionConfig(thres_up=0.6, thres_down=0.8)
    with pytest.raises(ValidationError, match="extra"):
        DecisionConfig(top=0.8)


def test_damping_scales_the_factor_by_view_age():
    cfg = DecisionConfig(damping_age=10)
    fresh = decide(cfg, load=1400, n_t=3, is_keeper=False, u=0.0, age=0)
    half = decide(cfg, load=1400, n_t=3, is_keeper=False, u=0.0, age=5)
    old = decide(cfg, load=1400, n_t=3, is_keeper=False, u=0.0, age=50)
    assert fresh.action is Action.NONE
    assert half.count == 2 and old.count == 3  # p = 1.5 (1 + draw), then exactly 3


def test_damping_leaves_scale_in_alone():
    cfg = DecisionConfig(damping_age=10)
    fresh = decide(cfg, load=100, n_t=7, is_keeper=False, u=0.5, age=0)
    assert fresh.action is Action.SCALE_IN  # -p = 5/7 > 0.5 whatever the view's age
    with pytest.raises(ValueError, match="age"):
        decide(cfg, load=1400, n_t=3, is_keeper=False, u=0.0, age=-1)


def test_pending_siblings_do_not_inflate_the_load_estimate():
    # 5 siblings in the view, but the load (450 each) was shared by the 3 that had started:
    # L = 1350 -> 3.86 needed, n_diff = floor(3.86 - 5) = -2: no scale-out (the paper: L = 2250,
    # n_diff = 1, p = 0.2)
    assert get_probability(500, 0.7, 450, 5) == pytest.approx(1 / 5)
    assert get_probability(500, 0.7, 450, 5, n_shared=3) == pytest.approx(-2 / 5)
    cfg = DecisionConfig(pending_steps=2)
    assert decide(cfg, load=450, n_t=5, is_keeper=False, u=0.0, n_shared=3).action is Action.NONE
    assert decide(cfg, load=450, n_t=5, is_keeper=False, u=0.0).action is Action.SCALE_OUT
    with pytest.raises(ValueError, match="n_shared <= n_t"):
        get_probability(500, 0.7, 450, 5, n_shared=6)
