"""The batch overhead model (Eq. O1): concurrency counting and the least-squares fit."""

from types import SimpleNamespace

import pytest

from elastream.config import make_config
from elastream.experiments.calibrate import calibrate
from elastream.prediction.batch_overhead import (
    BatchRecord,
    OverheadModel,
    busy_queries,
    fit_overhead,
)

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


def test_calibration_refuses_a_run_of_the_layout_it_does_not_model():
    """Eq. O1 is the `operator` layout's (a batch loop per operator); a `pipeline`-layout run
    is refused with a message naming both, not fitted."""
    run = SimpleNamespace(config=make_config(spark={"layout": "pipeline"}))
    with pytest.raises(ValueError, match="'pipeline'.*'operator'"):
        calibrate(run)  # type: ignore[arg-type]
