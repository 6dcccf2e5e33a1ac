"""The replica counts and batch caps the Spark runtime publishes (runtime/spark/replicas.py):
before an operator's first interval ends, its cap follows the shares it has committed, not the
seed's 10 ms an event (a real SQLite queue store; no Spark)."""

import time

import pytest
from support.builders import linear_pipeline, queue_store
from support.queues import events, forward

from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues.records import share_commit
from elastream.runtime.spark.replicas import Replicas


def setup(tmp_path):
    pipeline = pipeline_from_dict(linear_pipeline(n_ops=1, pool=(2, 4)))
    store = queue_store(tmp_path / "q.db", pipeline)
    replicas = Replicas(pipeline, store, batch_s=1.0)
    replicas.load(resume=False)
    return store, replicas


def commit(store, n: int, busy_s: float) -> None:
    """One share of op1: `n` events handled in `busy_s` seconds."""
    store.append("op1", events(n), "src", 0)
    plan = store.plan_batch("op1", 0, n, 1, lambda keys: [0] * len(keys))
    outcomes = forward(store.read_share(plan, 0).events(), "sink")
    assert store.commit_share(share_commit("op1", plan.batch, 0, outcomes, (), busy_s))


def test_the_cap_leaves_the_seed_as_soon_as_shares_are_committed(tmp_path):
    store, replicas = setup(tmp_path)
    start = time.time()
    # 2 replicas x 1 s of work a batch at the seed's 10 ms an event: 200 events
    assert store.control("op1").cap == 200
    replicas.measure_early(start, time.time())  # nothing committed yet: unchanged
    assert store.control("op1").cap == 200
    commit(store, 400, busy_s=0.2)  # 0.5 ms an event
    replicas.measure_early(start, time.time() + 1)
    assert store.control("op1").cap == 4000  # 2 x 1 s / 0.5 ms
    assert store.control("op1").et == pytest.approx(0.0005)


def test_an_interval_s_measurement_is_not_overwritten_by_the_early_one(tmp_path):
    store, replicas = setup(tmp_path)
    start = time.time()
    commit(store, 400, busy_s=0.2)
    replicas["op1"].measured = True  # what `remember` sets at an interval's end
    replicas.measure_early(start, time.time() + 1)
    assert store.control("op1").cap == 200
