"""The Spark runtime's Monitor step without Spark: one arrivals read per queue per interval,
the same figures as before, and the service-time variance from the shares' sums."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest
from support.sim import filter_split_pipeline

from elastream.config import RunConfig
from elastream.model.events import Event
from elastream.runtime.queues import ReplicaWork, SqliteQueueStore
from elastream.runtime.spark.measure import IntervalArrivals
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads.trace import Trace

# producer -> queue -> events appended: src -> parse -> evens -> split -> (low_sink | enrich)
APPENDS = [
    ("src", "parse", 10),
    ("parse", "evens", 8),
    ("evens", "split", 6),
    ("split", "low_sink", 3),
    ("split", "enrich", 2),
    ("enrich", "high_sink", 1),
]


@pytest.fixture
def engine(tmp_path, monkeypatch) -> tuple[SparkEngine, Counter]:
    """An engine whose store holds APPENDS (no Spark session); counts `arrivals` per queue."""
    config = RunConfig(out=tmp_path / "run", interval_s=2.0, policy="static", replicas=1)
    engine = SparkEngine(filter_split_pipeline(pool=(1, 2)), config, Trace(np.full(10, 1.0)))
    engine.open_store()
    now = time.time()
    for producer, queue, n in APPENDS:
        evs = [Event(i, "k", now, {"i": i, "v": i}) for i in range(n)]
        engine.store.append(queue, evs, producer, 0)
    reads: Counter = Counter()
    arrivals = SqliteQueueStore.arrivals

    def counted(self, q, t0, t1):
        reads[q] += 1
        return arrivals(self, q, t0, t1)

    monkeypatch.setattr(SqliteQueueStore, "arrivals", counted)
    return engine, reads


def test_each_queue_is_read_once_per_interval_with_the_same_figures(engine):
    engine, reads = engine
    now = time.time()
    ops, sources = engine.monitor.measure(now - 10, now + 10)
    assert set(reads.values()) == {1}  # one read per queue, however many figures use it
    assert set(reads) == {"parse", "evens", "split", "enrich", "low_sink", "high_sink"}
    stats = {o.name: o for o in ops}
    assert sources == (("src", 10),)
    assert [(o.received, o.received_from) for o in ops] == [
        (10, (("src", 10),)),
        (8, (("parse", 8),)),
        (6, (("evens", 6),)),
        (2, (("split", 2),)),
    ]
    assert stats["split"].emitted_streams == (("low", 3), ("high", 2))
    assert stats["enrich"].emitted_streams == (("out", 1),)
    assert stats["parse"].emitted_streams == (("out", 8),)


def test_interval_arrivals_reads_a_queue_once(engine):
    engine, reads = engine
    now = time.time()
    arrivals = IntervalArrivals(engine.store, now - 10, now + 10)
    assert arrivals("split") == {"evens": 6} and arrivals("split") == {"evens": 6}
    assert arrivals("enrich") == {"split": 2}
    assert reads == Counter({"split": 1, "enrich": 1})


def test_operator_stats_carry_each_replicas_service_time_variance(engine):
    # Replica 0: shares of 2 and 4 events in 0.2 s and 0.6 s (Eq. V2: 1/300 s²); replica 1:
    # one share, no spread to see.
    engine, _ = engine
    engine.replicas["split"].replicas = 2
    now = time.time()
    tasks = {0: ReplicaWork(6, 0.8, 0.0, 2, 0.11), 1: ReplicaWork(2, 0.3, 0.0, 1, 0.045)}
    reads = IntervalArrivals(engine.store, now - 10, now + 10)
    stats = engine.monitor.operator_stats("split", now - 10, now + 10, tasks, reads)
    assert stats.service_time_var == (pytest.approx(1 / 300), None)
    assert stats.replica_batches == (2, 1)  # the shares with events each replica committed


def test_checkpoints_go_where_the_settings_say_and_a_fresh_run_clears_them(tmp_path):
    trace = Trace(np.full(10, 1.0))
    default = RunConfig(out=tmp_path / "run", policy="static", replicas=1)
    assert SparkEngine(filter_split_pipeline(), default, trace).checkpoints == (
        tmp_path / "run" / "checkpoints"
    )
    elsewhere = tmp_path / "tmpfs" / "ckpt"
    (elsewhere / "parse").mkdir(parents=True)
    config = RunConfig(
        out=tmp_path / "run", policy="static", replicas=1, spark={"checkpoints": elsewhere}
    )
    engine = SparkEngine(filter_split_pipeline(), config, trace)
    assert engine.checkpoints == elsewhere
    engine.open_store()  # a fresh run (no --resume) starts without old checkpoints
    assert not elsewhere.exists()
