"""The simulator's building blocks: exact integer splits, Alg. 1 by water-filling, the profiling
pass over real operator functions, source emission counts and settings validation."""

import random

import numpy as np
import pytest

from elastream.model.grouping import load_balancing
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.sim import SimProfileError, SimSettings, SimSettingsError, profile_pipeline
from elastream.runtime.sim.emissions import source_emissions
from elastream.runtime.sim.profile import FILTERED, STREAM
from elastream.runtime.sim.settings import sim_settings_from_dict
from elastream.runtime.sim.split import (
    LoadBalancer,
    PartitionSplitter,
    RatioSplitter,
    fill_pieces,
    round_robin_counts,
    water_fill,
)
from elastream.workloads.trace import Trace

SYN = "elastream.examples.synthetic"


def alg1_counts(n, u, ets, td=1.0, rr=0):
    """Reference: the core per-event Alg. 1, counted per replica."""
    out, _ = load_balancing(n, u, ets, td, rr)
    return [out.count(j) for j in range(len(u))]


# ----------------------------------------------------------------------------- splits


def test_partition_splitter_is_exact_non_negative_and_converges():
    rng = random.Random(3)
    weights = [3, 0, 5, 2]  # T = 10; the zero share must never receive anything
    splitter = PartitionSplitter(weights)
    totals = [0, 0, 0, 0]
    n_all = 0
    for _ in range(2000):
        n = rng.choice([0, 1, 2, 3, 7, 50, 999])
        parts = splitter.split(n)
        assert sum(parts) == n
        assert min(parts) >= 0
        assert parts[1] == 0
        totals = [a + b for a, b in zip(totals, parts, strict=True)]
        n_all += n
    for total, w in zip(totals, weights, strict=True):
        assert abs(total - n_all * w / 10) <= 2


def largest_remainder(weights, carry, n):
    """Reference for PartitionSplitter.split without debts: each part gets the floor of what it
    is owed (n·w + carry, over T), the events left go to the largest remainders (ties: the
    lowest index), and what is still owed is carried."""
    t = sum(weights)
    owed = [n * w + c for w, c in zip(weights, carry, strict=True)]
    give = [o // t for o in owed]
    for j in sorted(range(len(weights)), key=lambda j: (-(owed[j] % t), j))[: n - sum(give)]:
        give[j] += 1
    return give, [o - g * t for o, g in zip(owed, give, strict=True)]


def test_two_part_splitter_gives_the_largest_remainders_and_carries_the_rest():
    rng = random.Random(28)
    for _ in range(300):
        weights = [rng.randint(0, 40), rng.randint(1, 40)]
        rng.shuffle(weights)
        splitter, carry = PartitionSplitter(weights), [0, 0]
        for _ in range(40):
            n = rng.randint(0, 60)
            expected, carry = largest_remainder(weights, carry, n)
            assert splitter.split(n) == expected, (weights, n)
            assert splitter.carry == carry


def test_ratio_splitter_fan_out_keeps_exact_running_totals():
    splitter = RatioSplitter([15, 4], 10)  # 1.5 and 0.4 outputs per input
    got = [0, 0]
    n_all = 0
    for n in [1, 2, 3, 1, 1, 7, 11] * 50:
        parts = splitter.split(n)
        got = [a + b for a, b in zip(got, parts, strict=True)]
        n_all += n
    assert got == [n_all * 15 // 10, n_all * 4 // 10]


def test_fill_pieces_gives_each_replica_its_count_and_keeps_cohorts():
    pieces = [(3, 5), (4, 2), (9, 6)]
    counts = [4, 0, 9]
    for start in range(3):
        shares = fill_pieces(pieces, counts, start)
        assert [sum(c for _, c in mine) for mine in shares] == counts
        per_key: dict[int, int] = {}
        for mine in shares:
            for k, c in mine:
                per_key[k] = per_key.get(k, 0) + c
        assert per_key == dict(pieces)


def test_round_robin_counts_match_event_by_event_round_robin():
    for n, r, start in [(0, 3, 0), (7, 3, 2), (10, 4, 1), (1, 5, 4)]:
        events = [(start + k) % r for k in range(n)]
        assert round_robin_counts(n, r, start) == [events.count(j) for j in range(r)]


# ----------------------------------------------------------------------------- Alg. 1


@pytest.mark.parametrize("same_speed", [True, False])
def test_water_fill_equals_core_alg1_on_exact_binary_values(same_speed):
    rng = random.Random(int(same_speed))
    for _ in range(300):
        r = rng.randint(1, 7)
        u = [rng.randint(0, 80) / 64 for _ in range(r)]  # some start saturated (>= 1)
        if rng.random() < 0.2:
            u = [u[0]] * r  # equal loads: round-robin order
        speeds = [1] * r if same_speed else [rng.choice([1, 2, 4]) for _ in range(r)]
        ets = [s / 64 for s in speeds]
        n = rng.randint(0, 250)
        rr = rng.randint(0, 5)
        assert water_fill(u, ets, n, rr) == alg1_counts(n, u, ets, rr=rr), (u, ets, n, rr)


def test_load_balancer_in_steps_equals_alg1_for_the_whole_interval():
    u = [0.5, 0.0, 0.875, 0.25]
    ets = [1 / 32] * 4
    balancer = LoadBalancer(u, ets, rr=1)
    chunks = [3, 0, 10, 1, 25, 40, 7]
    total = [0] * 4
    for n in chunks:
        total = [a + b for a, b in zip(total, balancer.take(n), strict=True)]
    assert total == alg1_counts(sum(chunks), u, ets, rr=1)
    _, u_after = load_balancing(sum(chunks), u, ets, 1.0, 1)
    assert balancer.utilization() == pytest.approx(u_after)


@pytest.mark.parametrize("u", [0.0, 0.3, 0.97, 1.4])
def test_one_replica_balancer_deals_as_alg1(u):
    """One replica takes every event; its running U and the round-robin offset it hands on are
    Alg. 1's, below U = 1 and past it."""
    balancer = LoadBalancer([u], [1 / 16], rr=0)
    chunks = [0, 3, 9, 2, 30]
    for n in chunks:
        assert balancer.take(n) == [n]
    _, u_after = load_balancing(sum(chunks), [u], [1 / 16], 1.0, 0)
    assert balancer.utilization() == pytest.approx(u_after)
    assert balancer.next_rr() == 0
    assert LoadBalancer([u], [1 / 16], rr=3).next_rr() == 0  # nothing dealt: rr mod 1


def test_water_fill_is_close_to_core_alg1_on_arbitrary_floats():
    rng = random.Random(11)
    for _ in range(30):
        r = rng.randint(2, 8)
        u = [rng.random() for _ in range(r)]
        ets = [rng.uniform(0.001, 0.02)] * r
        n = rng.randint(0, 600)
        diff = np.subtract(water_fill(u, ets, n, 0), alg1_counts(n, u, ets))
        assert np.abs(diff).sum() <= 2  # float ties may swap one event


# ----------------------------------------------------------------------------- profile


def split_pipeline():
    return pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": [
                {"name": "parse", "function": f"{SYN}:passthrough"},
                {"name": "evens", "function": f"{SYN}:drop_odd"},
                {"name": "split", "function": f"{SYN}:split_by_value"},
            ],
            "sinks": [{"name": "low_sink"}, {"name": "high_sink"}],
            "streams": [
                {"from": "src", "to": "parse"},
                {"from": "parse", "to": "evens"},
                {"from": "evens", "to": "split"},
                {"from": "split", "to": "low_sink", "name": "low"},
                {"from": "split", "to": "high_sink", "name": "high"},
            ],
        }
    )


def test_profile_runs_the_real_functions():
    profile = profile_pipeline(split_pipeline(), SimSettings(sample_events=1000), seed=5)
    evens = profile.op("evens")
    assert evens.sample_inputs == 1000
    assert evens.ratio(FILTERED) == 0.5  # drop_odd keeps exactly the even indices
    assert evens.ratio(STREAM, "out") == 0.5
    split = profile.op("split")
    assert split.sample_inputs == 500
    assert split.unit
    assert split.ratio(STREAM, "low") + split.ratio(STREAM, "high") == 1.0
    assert split.ratio(STREAM, "high") == pytest.approx(0.3, abs=0.06)  # values >= 700 of 1000
    assert profile.op("parse").cpu_s > 0


def test_profile_overrides_and_service_time():
    settings = SimSettings(
        selectivity={"split": {"low": 0.25, "high": 0.25}},
        et_ms={"parse": 4.0, "evens": 1.0, "split": 1.0},
        measure_cpu=False,
    )
    profile = profile_pipeline(split_pipeline(), settings, seed=0)
    split = profile.op("split")
    assert split.ratio(STREAM, "low") == 0.25
    assert split.ratio(FILTERED) == 0.5  # the rest of a partition is filtered
    assert profile.op("parse").service_time_s == pytest.approx(0.004)


def test_profile_names_a_failing_operator(tmp_path):
    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": [{"name": "bad", "function": f"{SYN}:split_by_value"}],
            "sinks": [{"name": "sink"}],
            "streams": [{"from": "src", "to": "bad"}, {"from": "bad", "to": "sink"}],
        }
    )
    with pytest.raises(SimProfileError, match="'bad'.*unknown stream"):
        profile_pipeline(pipeline, SimSettings(sample_events=50, measure_cpu=False), seed=0)


# ----------------------------------------------------------------------------- sources, settings


def test_source_emissions_are_exact_integrals_with_shares():
    trace = Trace(np.array([10.5, 0.0, 33.3, 7.0]), step_s=2.0)  # 101.6 events in 8 s
    counts = source_emissions(trace, steps=80, step_s=0.1, shares=[0.75, 0.25])
    assert counts.shape == (2, 80)
    assert counts.min() >= 0
    assert counts[0].sum() == int(101.6 * 0.75)
    assert counts[1].sum() == int(101.6 * 0.25)
    assert counts[:, 20:40].sum() == 0  # the silent second trace step


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"queue_model": "storm"}, "queue_model"),
        ({"reconfiguration": "reboot"}, "reconfiguration"),
        ({"step_s": 0}, "step_s"),
        ({"et_noise": -1}, "et_noise"),
        ({"replica_speed": {"op": [1.0, 0]}}, r"replica_speed.op\[1\]"),
        ({"selectivity": {"op": {"out": -0.5}}}, "selectivity.op.out"),
        ({"speed": 2}, "unknown sim setting"),
    ],
)
def test_bad_settings_name_themselves(values, message):
    with pytest.raises(SimSettingsError, match=message):
        sim_settings_from_dict(values, "bench.yaml:3")


def test_settings_naming_an_unknown_operator_fail_at_profile():
    with pytest.raises(SimSettingsError, match="unknown operator 'nope'"):
        profile_pipeline(split_pipeline(), SimSettings(et_ms={"nope": 1.0}), seed=0)
    with pytest.raises(SimSettingsError, match="unknown stream"):
        profile_pipeline(split_pipeline(), SimSettings(selectivity={"split": {"mid": 0.5}}), seed=0)
