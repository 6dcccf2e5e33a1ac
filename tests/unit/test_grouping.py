"""Groupings, including PSPS Alg. 1 (load balancing)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elastream.model.grouping import assign, key_hash, load_balancing, round_robin, shuffle
from elastream.model.pipeline import Grouping


def test_alg1_picks_least_loaded_replica_and_charges_et_over_td():
    # U = [0.5, 0.125, 0.375], each event adds et/td = 0.125 (exact in binary).
    out, u = load_balancing(4, [0.5, 0.125, 0.375], service_time_s=0.125, td_s=1.0)
    assert out == [1, 1, 1, 2]  # .125 -> .25 -> .375 (tie with replica 2: lower index) -> .5
    assert u == [0.5, 0.5, 0.5]


def test_alg1_equal_loads_give_round_robin():
    out, _ = load_balancing(6, [0.0, 0.0, 0.0], service_time_s=0.01, td_s=1.0)
    assert out == [0, 1, 2, 0, 1, 2]


def test_alg1_saturated_replicas_fall_back_to_round_robin():
    out, u = load_balancing(5, [1.0, 1.2], service_time_s=0.5, td_s=1.0, rr_start=1)
    assert out == [1, 0, 1, 0, 1]
    assert u == [1.0, 1.2]  # unchanged


def test_other_groupings():
    assert round_robin(5, 2) == [0, 1, 0, 1, 0]
    assert shuffle(50, 4, seed=7) == shuffle(50, 4, seed=7)
    assert set(shuffle(200, 4, seed=7)) == {0, 1, 2, 3}
    keys = ["a", "b", "a", "c"]
    hashed = key_hash(keys, 3)
    assert hashed[0] == hashed[2]
    assert assign(Grouping.KEY_HASH, keys, 3) == hashed
    with pytest.raises(ValueError, match="replicas must be >= 1"):
        assign(Grouping.ROUND_ROBIN, keys, 0)


def test_alg1_gives_a_slower_replica_fewer_events():
    # Replica 1 takes twice as long per event: its U grows by 0.2 per event, replica 0's by 0.1.
    out, u = load_balancing(6, [0.0, 0.0], service_time_s=[0.1, 0.2], td_s=1.0)
    assert out.count(0) == 4 and out.count(1) == 2
    assert u == pytest.approx([0.4, 0.4])


def one_by_one(n, utilization, service_time_s, td_s, rr_start=0):
    """PSPS Alg. 1 as the paper states it, event by event: the reference for the merge form."""
    u = [max(0.0, float(x)) for x in utilization]
    ets = (
        [float(service_time_s)] * len(u)
        if isinstance(service_time_s, int | float)
        else [float(e) for e in service_time_s]
    )
    steps = [e / td_s if td_s > 0 else 0.0 for e in ets]
    out, rr = [], rr_start
    for _ in range(n):
        m = min(range(len(u)), key=lambda j: (u[j], j))
        if u[m] >= 1.0:
            m = rr % len(u)
            rr += 1
        else:
            u[m] += steps[m]
        out.append(m)
    return out, u


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(0, 60),
    replicas=st.integers(1, 5),
    data=st.data(),
    td_s=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    rr_start=st.integers(0, 7),
)
def test_the_merge_form_of_load_balancing_equals_alg_1_event_by_event(
    n, replicas, data, td_s, rr_start
):
    utilization = data.draw(
        st.lists(
            st.sampled_from([0.0, 0.1, 0.5, 0.95, 1.0, 1.5, -0.2]),
            min_size=replicas,
            max_size=replicas,
        )
    )
    service_time_s = data.draw(
        st.one_of(
            st.sampled_from([0.0, 0.05, 0.1, 0.3]),
            st.lists(
                st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 0.3]),
                min_size=replicas,
                max_size=replicas,
            ),
        )
    )
    assert load_balancing(n, utilization, service_time_s, td_s, rr_start) == one_by_one(
        n, utilization, service_time_s, td_s, rr_start
    )
