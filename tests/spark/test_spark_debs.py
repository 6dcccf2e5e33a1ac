"""DEBS 2015 Query 1 on a real local Spark: the top-10 updates emitted for the first 10,004 trips
equal, update by update, those of the pandas batch computation, while the replica counts of
parse, route_count and partial_top10 change live (a scripted schedule, several changes, no query
restarted): the operator-wide watermark makes the result independent of them (docs/debs.md)."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
from support.debs import TRIPS, debs_pipeline, needs_trips

from elastream.config import make_config
from elastream.control.policy import Decision
from elastream.examples import debs
from elastream.examples.debs_batch import batch_top10
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads import Trace

pytestmark = [pytest.mark.spark, pytest.mark.slow]
# (run clock s, replicas): the counts enacted from then on
SCHEDULE = [
    (0.0, {"parse": 1, "route_count": 1, "partial_top10": 1}),
    (5.0, {"parse": 2, "route_count": 3, "partial_top10": 1}),
    (10.0, {"parse": 2, "route_count": 2, "partial_top10": 2}),
    (15.0, {"parse": 1, "route_count": 4, "partial_top10": 1}),
]


def scheduled(t: float) -> dict[str, int]:
    return [r for start, r in SCHEDULE if t >= start][-1]


@needs_trips
def test_spark_emits_the_batch_computations_updates_with_replicas_changing_live(
    spark, tmp_path, monkeypatch
):
    monkeypatch.setenv(debs.TRIPS_ENV, str(TRIPS.resolve()))
    pipeline = debs_pipeline(parse=2, route_count=4, partial_top10=2)
    trace = Trace(np.array([500.0] * 20 + [4.0]))  # 10,004 trips in 21 s
    config = make_config(
        policy="static", interval_s=1.0, out=tmp_path / "run", drain_s=120, event_timeout_s=None
    )
    engine = SparkEngine(pipeline, config, trace, spark=spark)
    seen: list[dict[str, int]] = []
    try:
        engine.start()
        while not engine.finished():
            snap = engine.collect()
            now = {op: snap.op(op).replicas for op in ("parse", "route_count", "partial_top10")}
            seen.append(now)
            if scheduled(snap.t) != now:
                engine.enact(Decision.of(scheduled(snap.t), {}))
        run_ids = dict(engine.queries.run_ids)
    finally:
        engine.stop()

    changes = sum(1 for a, b in pairwise(seen) if a != b)
    print(f"replica counts per interval: {seen}")
    assert changes >= 2 and max(s["route_count"] for s in seen) >= 3, seen
    assert all(len(ids) == 1 for ids in run_ids.values()), run_ids  # no query restarted
    store = engine.store
    audit = store.audit()
    assert audit.events_in == 10_004 and audit.pending == 0, audit
    assert audit.roots_with_two_fates == 0 and audit.duplicate_sink_roots == 0, audit
    rows = [e.payload for e in store.read_events("top10", 0, store.latest("top10"))]
    assert [(p["i"], p["top"]) for p in rows] == batch_top10(TRIPS)  # in emission order too
    assert all(p["delay_s"] >= 0 for p in rows)
    rejected = Counter(
        e.payload["reason"] for e in store.read_events("rejected", 0, store.latest("rejected"))
    )
    lines = TRIPS.read_text().splitlines()
    assert rejected == Counter(r for r, _ in map(debs.clean, lines) if r != "ok")
