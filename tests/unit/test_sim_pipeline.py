"""The simulator's pipeline model (queue_model pipeline): the Spark runtime's default layout, one
query whose micro-batches hold every operator's shares (docs/simulator.md, Eq. P1 and P2)."""

import random

import pytest
from support.sim import EXACT, SYN, chain, config, constant, replace

from elastream.model.pipeline import pipeline_from_dict
from elastream.runner.engines import simulate
from elastream.runtime.sim import SimSettingsError
from elastream.runtime.sim.batch import PACK_S, pack
from elastream.runtime.sim.settings import sim_settings_from_dict
from elastream.runtime.spark import pipeline_source

PIPELINE = replace(EXACT, queue_model="pipeline")


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


def two_branches(fast_ms, slow_ms):
    """src -> fast -> sink and src -> slow -> sink: every event rides both, in one batch."""
    ops = [("fast", fast_ms), ("slow", slow_ms)]
    return pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": [
                {"name": name, "function": f"{SYN}:passthrough", "service_time_ms": ms}
                for name, ms in ops
            ],
            "sinks": [{"name": "sink"}],
            "streams": [
                *({"from": "src", "to": name} for name, _ in ops),
                *({"from": name, "to": "sink"} for name, _ in ops),
            ],
        }
    )


def test_an_operators_outputs_leave_when_its_own_shares_end_not_the_batch():
    # One event every 2 s rides both branches in one batch: fast's share (10 ms) and slow's
    # (400 ms) are two tasks side by side after the fixed cost a = 0.25 s. Each share commits
    # as it ends (spark/pipeline_source.py), so fast's output reaches the sink at 0.26 s and
    # slow's at 0.65 s; the simulator counts a latency in whole steps of 0.1 s (the step the
    # output leaves in, from the event's): 0.2 and 0.6 s, a mean of 400 ms, where releasing
    # every output at the batch's end would give 0.6 s for both.
    settings = replace(PIPELINE, batch_overhead_s=0.25)
    cfg = config(drain_s=10, spark={"trigger_s": 0.0})
    result = simulate(two_branches(10.0, 400.0), cfg, constant(0.5, 60), settings)
    assert result.summary.latency_ms_mean == pytest.approx(400, abs=1)
    assert result.totals.events_out == 60


def test_a_replicas_first_share_pays_its_operators_warm_up():
    # warmup_ms 600 on b: its one replica's first share (the first event) takes 0.6 s more, so
    # that event's latency is a + et_a + a + et_b + 0.6 and the other 29 pay none: the mean is
    # 0.6 / 30 = 20 ms above the run without warm-up, and the busy time of b in the first
    # interval it serves in is 0.6 s above et_b per event.
    pipeline = chain([10.0, 20.0])
    settings = replace(PIPELINE, batch_overhead_s=0.2)
    cfg = config(drain_s=10, spark={"trigger_s": 0.0})
    plain = simulate(pipeline, cfg, constant(0.5, 60), settings)
    warm = simulate(pipeline, cfg, constant(0.5, 60), replace(settings, warmup_ms={"b": 600.0}))
    gap = warm.summary.latency_ms_mean - plain.summary.latency_ms_mean
    assert gap == pytest.approx(600 / 30, abs=5)
    first = next(o for s in warm.snapshots for o in s.operators if o.name == "b" and o.processed)
    assert first.busy_s == pytest.approx(0.6 + 0.020 * first.processed)


def test_warm_up_is_refused_by_the_per_replica_model():
    with pytest.raises(SimSettingsError, match="warmup_ms"):
        sim_settings_from_dict({"queue_model": "per_replica", "warmup_ms": {"a": 10.0}})


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
