"""The MAPE loop on a scripted engine (unit test; the real engines are tested in
test_spark_runtime.py and the simulator's tests): decisions are enacted, or only reported."""

from dataclasses import dataclass, field

import pytest
from support.builders import linear_pipeline, snapshot, stats

from elastream.control.controller import Controller
from elastream.control.mape import run_mape
from elastream.model.metrics import RunTotals
from elastream.model.pipeline import pipeline_from_dict


@dataclass
class ScriptedEngine:
    """Replays queue lengths; keeps whatever replicas it is told to enact."""

    queues: list[int]
    pipeline: object = field(default_factory=lambda: pipeline_from_dict(linear_pipeline(1, (1, 8))))
    replicas: int = 1
    enacted: list[int] = field(default_factory=list)
    step: int = 0
    features = frozenset()  # no optional feature

    def start(self):
        self.started = True

    def collect(self):
        q = self.queues[self.step]
        self.step += 1
        return snapshot(stats("op1", replicas=self.replicas, queue=q), t=float(self.step))

    def enact(self, decision):
        self.replicas = decision.as_dict()["op1"]
        self.enacted.append(self.replicas)

    def finished(self):
        return self.step >= len(self.queues)

    def totals(self):
        return RunTotals(10, 10, 10, 0, 0, 0, 0, 1.0, 2.0)

    def stop(self):
        self.stopped = True


def test_threshold_decisions_are_enacted_each_interval():
    engine = ScriptedEngine([300, 300, 60, 0, 0])
    result = run_mape(engine, Controller.build("threshold"))
    assert engine.enacted == [3, 5, 6, 5, 4]  # +2, +2, +1, -1, -1
    assert [s.op("op1").replicas for s in result.snapshots] == [1, 3, 5, 6, 5]
    assert engine.stopped and result.summary.reconfigurations == 4


def test_recommend_only_decides_but_never_enacts():
    engine = ScriptedEngine([300, 300, 60])
    result = run_mape(engine, Controller.build("threshold"), recommend_only=True)
    assert engine.enacted == []
    assert [d.as_dict()["op1"] for d in result.decisions] == [3, 3, 2]


def test_latency_histogram_bins_exact_latencies():
    from elastream.model.metrics import latency_histogram

    assert latency_histogram([0.2, 0.9, 1.0, 2.5, 7.0], resolution_ms=1.0) == (
        (1.0, 3),
        (3.0, 1),
        (7.0, 1),
    )


def test_a_latency_tally_adds_the_forgotten_latencies_to_the_kept_ones():
    from elastream.model.metrics import LatencyTally

    tally = LatencyTally()
    assert tally.with_kept([]) == (None, None, ())
    tally.add([0.5, 2.5])  # forgotten by the store's retention
    tally.add([])
    kept = [10.0] * 96 + [40.2, 44.6]
    mean, p99, histogram = tally.with_kept(kept)
    assert mean == pytest.approx((0.5 + 2.5 + 960.0 + 40.2 + 44.6) / 100)
    assert p99 == 41.0  # nearest rank: the 99th of 100 latencies (40.2), to its 1-ms bin
    assert histogram == ((1.0, 1), (3.0, 1), (10.0, 96), (41.0, 1), (45.0, 1))
    assert tally.n == 2 and tally.bins == {1.0: 1, 3.0: 1}  # with_kept leaves the tally alone


def test_the_plan_is_applied_in_order_lease_place_then_replicas():
    from elastream.control.execute import execute
    from elastream.control.features import Hosts
    from elastream.control.policy import Decision, Lease, Placement, Plan

    calls: list[str] = []

    class WithHosts:
        features = frozenset({Hosts})

        def lease(self, leases):
            calls.append(f"lease {leases[0].count}")

        def place(self, placement):
            calls.append(f"place {placement[0].hosts}")

        def enact(self, decision):
            calls.append(f"replicas {decision.as_dict()}")

    plan = Plan(Decision.of({"A": 2}), (Lease("vm", 1),), (Placement("A", ("h1", "h2")),))
    execute(WithHosts(), plan)
    assert calls == ["lease 1", "place ('h1', 'h2')", "replicas {'A': 2}"]

    class ReplicasOnly:
        features = frozenset()

        def enact(self, decision):
            calls.append("enacted")

    with pytest.raises(TypeError, match="cannot lease hosts"):
        execute(ReplicasOnly(), plan)
    assert calls[-1] != "enacted"  # nothing applied from a plan the engine cannot follow


def test_an_engine_is_asked_for_an_optional_feature_the_one_way():
    from elastream.control.features import FEATURES, FastForward, GracefulStop, feature
    from elastream.runtime.sim.simulator import SimEngine
    from elastream.runtime.spark.runtime import SparkEngine

    engine = ScriptedEngine([0])
    assert feature(engine, FastForward) is None  # lists none

    class Pretends:
        features = frozenset({GracefulStop})  # listed, not implemented

    with pytest.raises(TypeError, match="Pretends lists the feature GracefulStop but lacks it"):
        feature(Pretends(), GracefulStop)
    with pytest.raises(TypeError, match="Snapshot is no engine feature"):
        feature(engine, type(engine.collect()))
    with pytest.raises(TypeError, match="object has no `features`"):
        feature(object(), FastForward)
    for real in (SimEngine, SparkEngine):  # each implements every feature it lists
        assert real.features <= set(FEATURES), real
        for kind in real.features:
            members = [m for m in vars(kind) if not m.startswith("_")]
            members += list(getattr(kind, "__annotations__", {}))
            assert members and all(hasattr(real, m) for m in members), (real, kind)


def test_a_policy_may_return_a_whole_plan_and_the_guards_bound_its_counts():
    """A policy that plans hosts too: its leases and placement reach the engine in the Execute
    order, its replica count passes the guard layer first (asked 20, the pool's maximum is 8)."""
    from elastream.control.features import Hosts
    from elastream.control.policy import Decision, Lease, Placement, Plan, Policy

    def decide(snap, state, config):
        counts = Decision.of({"op1": 20}, {"op1": "wants 20"})
        return Plan(counts, (Lease("vm", 1),), (Placement("op1", ("h1",)),)), state + 1

    policy = Policy("planner", decide, dict, 0, "a whole plan (a test policy)")
    calls: list[str] = []

    class PlanningEngine(ScriptedEngine):
        features = frozenset({Hosts})

        def lease(self, leases):
            calls.append(f"lease {leases[0].count} {leases[0].host_kind}")

        def place(self, placement):
            calls.append(f"place {placement[0].operator} on {placement[0].hosts}")

        def enact(self, decision):
            super().enact(decision)
            calls.append(f"replicas {self.replicas}")

    engine = PlanningEngine([0, 0])
    result = run_mape(engine, Controller(policy, {}))
    step = ["lease 1 vm", "place op1 on ('h1',)", "replicas 8"]
    assert calls == step + step
    assert [d.as_dict() for d in result.decisions] == [{"op1": 8}, {"op1": 8}]
    assert "wants 20; the pool and guards allow 8" in result.decisions[0].reason("op1")
