"""The batch overhead models (Eq. O1, P1): concurrency counting, the least-squares fit, and
the calibration of the pipeline layout from a run's records."""

import json

import pytest
from support.sim import EXACT, chain, config, constant, replace

from elastream.prediction.batch_overhead import (
    BatchRecord,
    OverheadModel,
    busy_queries,
    fit_overhead,
)
from elastream.runner.engines import simulate
from elastream.runtime.queues.records import BatchWork
from elastream.runtime.sim.batch import pack
from elastream.runtime.spark.runtime import PIPELINE_QUERY
from reproductions.simulator.calibrate import SparkRecord, calibrate, spark_et_s, warmups

TRUE = OverheadModel({"a": 0.15, "b": 0.25}, per_replica_s=0.04, per_busy_query_s=0.09)


def synthetic(model):
    """Batches of two queries with varied task counts and overlaps, their cost from `model`."""
    plan = [  # op, start, replicas, work
        ("a", 0.0, 1, 0.1),
        ("b", 0.05, 2, 0.3),  # starts while a's first batch runs
        ("a", 2.0, 3, 0.2),
        ("b", 4.0, 1, 0.1),
        ("a", 4.1, 4, 0.5),  # starts while b runs
        ("b", 6.0, 4, 0.2),
        ("a", 8.0, 2, 0.1),
        ("b", 8.2, 3, 0.4),  # starts while a runs
    ]
    records = [BatchRecord(op, t, 1.0, work, r) for op, t, r, work in plan]
    counts = busy_queries(records)
    return [
        BatchRecord(
            rec.op,
            rec.start_s,
            rec.work_s + model.overhead_s(rec.op, rec.replicas, n),
            rec.work_s,
            rec.replicas,
        )
        for rec, n in zip(records, counts, strict=True)
    ]


def test_busy_queries_counts_other_operators_running_at_the_start():
    records = [
        BatchRecord("a", 0.0, 1.0, 0.0, 1),
        BatchRecord("a", 0.5, 1.0, 0.0, 1),  # its own query does not count
        BatchRecord("b", 0.9, 0.5, 0.0, 1),  # a is running
        BatchRecord("c", 1.2, 1.0, 0.0, 1),  # a (second batch) and b are running
        BatchRecord("b", 3.0, 1.0, 0.0, 1),  # nothing else runs
    ]
    assert busy_queries(records) == [0, 0, 1, 2, 0]


def test_the_fit_recovers_the_model_that_made_the_batches():
    fitted = fit_overhead(synthetic(TRUE))
    assert fitted.base_s == pytest.approx(TRUE.base_s)
    assert fitted.per_replica_s == pytest.approx(TRUE.per_replica_s)
    assert fitted.per_busy_query_s == pytest.approx(TRUE.per_busy_query_s)


def test_a_negative_slope_is_dropped_and_the_rest_refitted():
    # More tasks made the batches cheaper here: the fit keeps b = 0 and finds the rest.
    model = OverheadModel({"a": 0.5, "b": 0.6}, per_replica_s=-0.05, per_busy_query_s=0.1)
    fitted = fit_overhead(synthetic(model))
    assert fitted.per_replica_s == 0.0
    assert fitted.per_busy_query_s >= 0.0
    assert fitted.base_s["a"] > 0.3


def test_the_commit_share_is_the_commit_time_over_the_fixed_cost():
    records = [
        BatchRecord("a", 0.0, 1.0, 0.5, 1, commit_s=0.1),  # fixed cost 0.5 s
        BatchRecord("a", 2.0, 2.0, 0.5, 1, commit_s=0.5),  # fixed cost 1.5 s
    ]
    assert fit_overhead(records).commit_share == pytest.approx(0.6 / 2.0)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="no batches"):
        fit_overhead([])
    with pytest.raises(KeyError, match="'z'"):
        TRUE.overhead_s("z", 1, 0)


PIPELINE_ET = {"x": 0.010, "y": 0.030}  # s per event on Spark
PIPELINE_A, PIPELINE_B = 0.2, 0.03  # Eq. P1's a and b


def pipeline_run():
    """A `pipeline`-layout Spark run as calibrate reads it: the one query's progress reports and
    the store's shares, made by Eq. P1 from known a, b and per-event times. Per batch: events
    per operator and replicas; the shares are equal, so their work is known exactly."""
    plan = [({"x": 2, "y": 2}, 2), ({"x": 40, "y": 20}, 2), ({"x": 90}, 3), ({"y": 60}, 1)]
    plan += [({"x": 6, "y": 9}, 3), ({"x": 2}, 1), ({"x": 80, "y": 80}, 4)]
    offsets = {"x": 0, "y": 0}
    progress, batches = [], []
    for k, (events, r) in enumerate(plan):
        start = dict(offsets)
        shares = []
        for op, n in events.items():
            offsets[op] += n
            batches.append(BatchWork(op, f"{start[op]}-{offsets[op]}", 0.0, n, n // r, r))
            shares += [n // r * PIPELINE_ET[op]] * r
        tasks = pack(shares)
        wall = PIPELINE_A + PIPELINE_B * (len(tasks) - 1) + max(tasks)
        source = {"startOffset": json.dumps(start), "endOffset": json.dumps(offsets)}
        progress.append(
            {
                "timestamp": f"2026-11-28T10:00:{k:02d}.000Z",
                "durationMs": {"triggerExecution": wall * 1000, "commitOffsets": 0},
                "sources": [source],
            }
        )
    events = {op: sum(e.get(op, 0) for e, _ in plan) for op in PIPELINE_ET}
    work = {op: (n, n * PIPELINE_ET[op]) for op, n in events.items()}
    return SparkRecord("pipeline", ("x", "y"), {PIPELINE_QUERY: progress}, batches, work)


def test_calibration_of_the_pipeline_layout_recovers_its_batch_costs():
    calibration = calibrate(pipeline_run())
    settings = calibration.settings
    assert settings.queue_model == "pipeline"
    assert settings.et_ms == pytest.approx({op: 1000 * et for op, et in PIPELINE_ET.items()})
    assert settings.batch_overhead_s == pytest.approx(PIPELINE_A)
    assert settings.batch_overhead_per_replica_ms == pytest.approx(1000 * PIPELINE_B)
    # batch 1: x's two shares of 10 ms share a task, y's of 30 ms have one each; batch 2: 4
    assert [rec.replicas for rec in calibration.records][:2] == [3, 4]


def test_the_warm_up_is_read_back_from_a_runs_intervals():
    # A run made by the simulator with a known warm-up (b: 600 ms per replica, both of its
    # replicas serving from the first interval) and a known per-event time (b: 20 ms) stands
    # for a Spark run: calibration reads both back from its intervals and work totals.
    settings = replace(EXACT, queue_model="pipeline", batch_overhead_s=0.1, warmup_ms={"b": 600.0})
    cfg = config(replicas=2, drain_s=10, spark={"trigger_s": 0.0})
    result = simulate(chain([10.0, 20.0], replicas=2), cfg, constant(20, 30), settings)
    work = {
        op: (
            sum(o.processed for s in result.snapshots for o in s.operators if o.name == op),
            sum(o.busy_s for s in result.snapshots for o in s.operators if o.name == op),
        )
        for op in ("a", "b")
    }
    run = SparkRecord("pipeline", ("a", "b"), {}, [], work, result.snapshots)
    warm = warmups([run])
    assert warm["b"].replicas == 2
    assert warm["b"].per_replica_s == pytest.approx(0.6)
    assert warm["a"].per_replica_s == pytest.approx(0.0, abs=1e-9)
    assert spark_et_s([run], warm) == pytest.approx({"a": 0.010, "b": 0.020})
