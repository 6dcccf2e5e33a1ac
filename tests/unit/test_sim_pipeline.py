"""The simulator's pipeline model (queue_model pipeline): the Spark runtime's default layout, one
query whose micro-batches hold every operator's shares (docs/simulator.md, Eq. P1 and P2)."""

import random
from itertools import pairwise

import pytest
from support.sim import EXACT, SYN, config, constant, replace

from elastream.model.pipeline import pipeline_from_dict
from elastream.runner.engines import simulate
from elastream.runtime.sim import SimSettingsError
from elastream.runtime.sim.batch import PACK_S, pack
from elastream.runtime.sim.settings import sim_settings_from_dict
from elastream.runtime.spark import pipeline_source

PIPELINE = replace(EXACT, queue_model="pipeline")


def chain(service_ms, replicas=1):
    """src -> a -> b -> ... -> sink, pass-through operators of these service times, r fixed."""
    names = [chr(ord("a") + i) for i in range(len(service_ms))]
    ops = [
        {
            "name": name,
            "function": f"{SYN}:passthrough",
            "service_time_ms": ms,
            "replicas": {"min": replicas, "max": replicas},
        }
        for name, ms in zip(names, service_ms, strict=True)
    ]
    nodes = ["src", *names, "sink"]
    return pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": ops,
            "sinks": [{"name": "sink"}],
            "streams": [{"from": a, "to": b} for a, b in pairwise(nodes)],
        }
    )


def test_a_hop_costs_one_batch_of_the_one_query():
    # One event every 2 s, so each batch holds one operator's one event: 3 batches of
    # a + et_i each, back to back (trigger 0), to the step of 0.1 s.
    pipeline = chain([10.0, 20.0, 30.0])
    settings = replace(PIPELINE, batch_overhead_s=0.2)
    cfg = config(drain_s=10, spark={"trigger_s": 0.0})
    result = simulate(pipeline, cfg, constant(0.5, 60), settings)
    hops = 3 * 0.2 + 0.010 + 0.020 + 0.030
    assert result.summary.latency_ms_mean == pytest.approx(hops * 1000, abs=100)
    assert result.totals.events_out == 30


def test_the_one_query_runs_every_operators_share_in_each_batch():
    # Eq. P1 under a steady backlog: 3 operators x 2 replicas of 10 ms, batch_s 0.5: each
    # operator admits 2 x 0.5 / 0.01 = 100 events a batch, 50 per replica (0.5 s of work, more
    # than PACK_S: 6 tasks). A batch lasts a + b·(6 − 1) + 0.5 = 0.1 + 0.25 + 0.5 = 0.85 s,
    # so an interval of 8.5 s holds 10 batches, 1000 events per operator, every replica in each.
    pipeline = chain([10.0, 10.0, 10.0], replicas=2)
    settings = replace(
        PIPELINE, batch_overhead_s=0.1, batch_overhead_per_replica_ms=50.0, batch_work_s=0.5
    )
    cfg = config(replicas=2, interval_s=8.5, drain_s=0, spark={"trigger_s": 0.0})
    result = simulate(pipeline, cfg, constant(150, 120), settings)
    steady = result.snapshots[3:12]
    for snap in steady:
        assert [op.processed for op in snap.operators] == [1000, 1000, 1000]
        assert {op.replica_batches for op in snap.operators} == {(10, 10)}


def test_a_slow_operator_holds_back_the_others_batches():
    # The batch is a barrier: in the operator layout the fast first operator runs its own
    # short batches; in the pipeline layout it runs only as often as the slow one's batches end.
    pipeline = chain([1.0, 40.0])
    base = replace(EXACT, batch_overhead_s=0.1, batch_work_s=1.0)
    cfg = config(interval_s=5.0, drain_s=0, spark={"trigger_s": 0.0})

    def first_operator_batches(model):
        result = simulate(pipeline, cfg, constant(30, 60), replace(base, queue_model=model))
        return sum(s.operators[0].replica_batches[0] for s in result.snapshots[2:10])

    own, shared = first_operator_batches("micro_batch"), first_operator_batches("pipeline")
    assert shared < own / 3, (shared, own)


def test_tasks_are_packed_as_the_runtime_packs_them():
    assert PACK_S == pipeline_source.PACK_S
    rng = random.Random(1)
    for _ in range(200):
        works = [rng.choice([0.0, 0.001, 0.005, 0.012, 0.019, 0.02, 0.03]) for _ in range(9)]
        shares = [pipeline_source.Share("op", j, 0, 1, w) for j, w in enumerate(works)]
        tasks = pipeline_source.pack(shares)
        assert pack(works) == [sum(s.work_s for s in t.shares) for t in tasks]


def test_light_shares_share_a_task_so_their_batch_costs_less():
    # 20 events/s through three operators of 1 ms: every batch holds a few events of each, three
    # shares of a few ms that pack into one task, so a batch costs a = 0.1 s, not a + 2b = 0.7 s.
    # An event waits for the next batch (at most one) and then rides three: 0.3-0.4 s, to the
    # step of 0.1 s; unpacked it would take over 2.1 s.
    pipeline = chain([1.0, 1.0, 1.0])
    settings = replace(PIPELINE, batch_overhead_s=0.1, batch_overhead_per_replica_ms=300.0)
    cfg = config(drain_s=10, spark={"trigger_s": 0.0})
    result = simulate(pipeline, cfg, constant(20, 60), settings)
    assert 300 <= result.summary.latency_ms_mean <= 500


def test_per_query_costs_of_the_operator_layout_are_refused():
    with pytest.raises(SimSettingsError, match="batch_overhead_per_busy_query_ms"):
        sim_settings_from_dict(
            {"queue_model": "pipeline", "batch_overhead_per_busy_query_ms": 10.0}
        )
