"""Keyed state on a real local Spark: a keyed count whose replicas change live under a step up
and down in rate counts every key exactly, with no query restarted, and again after SIGKILL of
the whole run and `--resume`."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from support.paths import PIPELINES
from support.spark_runs import events_sent, kill_run, outcomes_so_far, run_cli, wait_for_outcomes

from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.control.controller import Controller
from elastream.control.mape import run_mape
from elastream.examples.keyed import key_of
from elastream.model.state import decode_value
from elastream.runtime.queues import QueueStore, SqliteQueueStore
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads import Trace

pytestmark = [pytest.mark.spark, pytest.mark.slow]
PIPELINE = PIPELINES / "keyed_count.yaml"


def assert_counts_exact(store: QueueStore, n: int) -> None:
    """The `n` events the trace sent (counted by the test) all reached the sink once; every key's
    state equals the events of that key sent in (the source's key of each index); every running
    count the operator emitted appears once per key: 1, 2, …, n (no update lost, none applied
    twice)."""
    audit = store.audit()
    assert (audit.events_in, audit.to_sink, audit.pending) == (n, n, 0), audit
    assert audit.duplicate_sink_roots == 0, audit
    sent = Counter(key_of(i) for i in range(n))
    state = {key: decode_value(value) for _, key, value in store.state_items("count")}
    assert state == dict(sent)
    emitted: dict[str, list[int]] = defaultdict(list)
    for event in store.read_events("out", 0, store.latest("out")):
        emitted[event.payload["key"]].append(event.payload["count"])
    assert {k: sorted(v) for k, v in emitted.items()} == {
        k: list(range(1, n + 1)) for k, n in sent.items()
    }


def test_a_keyed_count_rescales_live_and_counts_every_key_exactly(spark, tmp_path):
    """In the default layout (`pipeline`); the `operator` layout keeps its live-change and
    kill/resume tests in tests/spark/test_spark_runtime.py."""
    pipeline = load_pipeline(PIPELINE)
    # 10 s at 10 ev/s, 24 s at 70 ev/s (count needs 3 replicas at 40 ms), 21 s at 5 ev/s.
    trace = Trace(np.array([10.0] * 10 + [70.0] * 24 + [5.0] * 21))
    config = make_config(interval_s=3.0, out=tmp_path / "run", drain_s=60, event_timeout_s=None)
    engine = SparkEngine(pipeline, config, trace, spark=spark)
    result = run_mape(engine, Controller.build("psps"))

    replicas = [s.op("count").replicas for s in result.snapshots]
    changes = sum(1 for a, b in pairwise(replicas) if a != b)
    assert changes >= 2 and max(replicas) >= 2, replicas  # up with the step, down after it
    assert all(len(ids) == 1 for ids in engine.queries.run_ids.values()), (
        engine.queries.run_ids
    )  # no restart
    assert_counts_exact(engine.store, events_sent(trace))


# 10 ev/s, then 60 ev/s (count needs 3 replicas), then 10 ev/s: 8 s each
KEYED_TRACE = "twolevel:low=1,high=6,unit=10,hold=8,duration=24"
KEYED_SENT = 8 * 10 + 8 * 60 + 8 * 10


def run_keyed(out: Path, *extra: str) -> subprocess.Popen:
    return run_cli(out, *extra, pipeline=PIPELINE, trace=KEYED_TRACE)


def test_a_killed_keyed_count_resumes_and_counts_every_key_exactly(tmp_path):
    out = tmp_path / "run"
    db = out / "queues.db"
    first = run_keyed(out)
    wait_for_outcomes(first, db, 200, op="count")  # into the step up
    kill_run(first)  # the driver, its JVM and Python workers at once
    first.wait(timeout=30)
    killed_at = outcomes_so_far(db, op="count")
    with sqlite3.connect(db, timeout=30) as conn:
        counted = conn.execute("SELECT COUNT(*) FROM state WHERE op = 'count'").fetchone()[0]
    assert counted > 0

    second = run_keyed(out, "--resume")
    output, _ = second.communicate(timeout=600)
    assert second.returncode == 0, output
    store = SqliteQueueStore(db)
    assert killed_at < KEYED_SENT
    assert_counts_exact(store, KEYED_SENT)
    shares = store.task_stats("count", 0.0, time.time() + 1)
    assert max(shares) >= 1, shares  # the count ran on more than one replica
