"""The guard layer and the static and threshold policies on hand-worked snapshots."""

from dataclasses import replace

import pytest
from support.builders import snapshot, stats

from elastream.base.registry import UnknownNameError
from elastream.control.controller import Controller
from elastream.control.guards import GuardConfig, GuardState, apply_guards
from elastream.control.policy import Decision, PolicyConfigError


def decide(targets, current=4, t=10.0, state=None, **guards):
    state = state or GuardState()
    snap = snapshot(stats("A", replicas=current, pool=(1, 8)), t=t)
    return apply_guards(snap, Decision.of({"A": targets}), state, GuardConfig(**guards))


def test_clamp_to_pool():
    assert decide(20)[0].as_dict() == {"A": 8}
    assert decide(0)[0].as_dict() == {"A": 1}


def test_max_steps():
    assert decide(8, max_step_up=1)[0].as_dict() == {"A": 5}
    assert decide(1, max_step_down=2)[0].as_dict() == {"A": 2}


def test_dead_band_ignores_small_relative_changes():
    assert decide(5, dead_band=0.3)[0].as_dict() == {"A": 4}
    assert decide(6, dead_band=0.3)[0].as_dict() == {"A": 6}


def test_stabilization_scales_down_to_window_max():
    _, state = decide(6, current=4, t=0.0, stabilization_s=30)
    decision, state = decide(2, current=6, t=10.0, state=state, stabilization_s=30)
    assert decision.as_dict() == {"A": 6}  # 6 was recommended 10 s ago
    decision, _ = decide(2, current=6, t=45.0, state=state, stabilization_s=30)
    assert decision.as_dict() == {"A": 2}


def test_scale_down_delay_after_scale_up():
    _, state = decide(6, current=4, t=0.0, scale_down_delay_s=20)
    assert decide(2, current=6, t=10.0, state=state, scale_down_delay_s=20)[0].as_dict() == {"A": 6}
    assert decide(2, current=6, t=25.0, state=state, scale_down_delay_s=20)[0].as_dict() == {"A": 2}


def test_each_guard_window_ends_where_it_says():
    """The boundaries, each exactly hit (found by scripts/mutation_check.py): a recommendation
    `stabilization_s` old is out of the window; a scale-down `scale_down_delay_s` after the
    scale-up goes ahead (and the delay counts from the scale-up's time, not from 0); a change of
    exactly `dead_band` of the current replicas is made."""
    _, state = decide(6, current=4, t=100.0, stabilization_s=30)
    assert decide(2, current=6, t=129.0, state=state, stabilization_s=30)[0].as_dict() == {"A": 6}
    assert decide(2, current=6, t=130.0, state=state, stabilization_s=30)[0].as_dict() == {"A": 2}
    _, state = decide(6, current=4, t=100.0, scale_down_delay_s=20)
    for t, expected in ((110.0, 6), (120.0, 2)):
        down = decide(2, current=6, t=t, state=state, scale_down_delay_s=20)
        assert down[0].as_dict() == {"A": expected}, t
    assert decide(5, current=4, dead_band=0.25)[0].as_dict() == {"A": 5}  # |5 - 4| / 4 = 0.25
    assert decide(3, current=4, dead_band=0.25)[0].as_dict() == {"A": 3}


def test_the_scale_down_delay_counts_from_the_last_change_up_not_a_kept_target():
    """A decision that keeps the replicas (target = current) is no scale-up: the delay still
    counts from the last real one."""
    _, state = decide(6, current=4, t=0.0, scale_down_delay_s=20)
    _, state = decide(6, current=6, t=15.0, state=state, scale_down_delay_s=20)
    assert decide(2, current=6, t=25.0, state=state, scale_down_delay_s=20)[0].as_dict() == {"A": 2}


def test_a_stateful_operators_interval_counts_from_its_last_change():
    """`stateful_interval_s` after a change at t = 100: held at 110 and 129, made at 130."""

    def guard(target, current, t, state):
        snap = snapshot(replace(stats("A", replicas=current, pool=(1, 8)), stateful=True), t=t)
        config = GuardConfig(stateful_interval_s=30)
        return apply_guards(snap, Decision.of({"A": target}), state, config)

    _, state = guard(6, 4, 100.0, GuardState())
    for t, expected in ((110.0, 6), (129.0, 6), (130.0, 2)):
        assert guard(2, 6, t, state)[0].as_dict() == {"A": expected}, t


def test_an_operator_with_no_active_replica_is_raised_into_its_pool():
    """0 active replicas (none started yet): the dead band, relative to the current count, does
    not apply (no division by zero); the target is clamped into the pool as always."""
    assert decide(3, current=0, dead_band=0.5)[0].as_dict() == {"A": 3}
    assert decide(0, current=0, dead_band=0.5)[0].as_dict() == {"A": 1}


def test_static_policy():
    c = Controller.build("static", {"replicas": 3})
    snap = snapshot(stats("A", replicas=1), stats("B", replicas=5))
    assert c.decide(snap, c.initial_state())[0].as_dict() == {"A": 3, "B": 3}


@pytest.mark.parametrize(
    ("queue", "expected"), [(0, 3), (1, 4), (50, 4), (51, 5), (250, 5), (251, 6)]
)
def test_threshold_baseline(queue, expected):
    c = Controller.build("threshold")
    snap = snapshot(stats("A", replicas=4, queue=queue))
    assert c.decide(snap, c.initial_state())[0].as_dict() == {"A": expected}


def test_unknown_policy_and_option_are_named():
    with pytest.raises(UnknownNameError, match="unknown policy 'magic'.*psps"):
        Controller.build("magic")
    with pytest.raises(PolicyConfigError, match="'static'.*unknown option.*speed"):
        Controller.build("static", {"speed": 2})
    with pytest.raises(PolicyConfigError, match="replicas must be >= 1"):
        Controller.build("static", {"replicas": 0})


def test_stateful_rescales_are_rate_limited_and_stateless_ones_are_not():
    def guard(targets, current, t, state, stateful):
        snap = snapshot(stats("A", replicas=current, pool=(1, 8)), t=t)
        if stateful:
            snap = snapshot(replace(snap.operators[0], stateful=True), t=t)
        config = GuardConfig(stateful_interval_s=30)
        return apply_guards(snap, Decision.of({"A": targets}), state, config)

    for stateful, expected in ((True, [6, 6, 6, 2]), (False, [6, 2, 3, 2])):
        state, got, current = GuardState(), [], 4
        for t, target in ((0.0, 6), (10.0, 2), (20.0, 3), (40.0, 2)):
            decision, state = guard(target, current, t, state, stateful)
            current = decision.as_dict()["A"]
            got.append(current)
        assert got == expected, stateful


def test_a_reason_says_what_the_guards_changed_and_nothing_when_they_changed_nothing():
    """Written against the survivor of scripts/mutation_check.py in `guarded`."""
    snap = snapshot(stats("A", replicas=4, pool=(1, 8)), t=10.0)

    def reason(target: int, **guards) -> str:
        raw = Decision.of({"A": target}, {"A": "the policy's"})
        return apply_guards(snap, raw, GuardState(), GuardConfig(**guards))[0].reason("A")

    assert reason(6) == "the policy's"  # kept as asked: no word added
    assert reason(0) == "the policy's"  # lifted to the pool's minimum only: no word either
    assert reason(20) == "the policy's; the pool and guards allow 8"
    assert reason(6, dead_band=0.6) == "the policy's; the pool and guards allow 4"
    assert reason(2, dead_band=0.6) == "the policy's; the guards keep 4"
