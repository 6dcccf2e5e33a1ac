"""DEBS 2015 Query 1 on a real local Spark: the top-10 updates emitted for the first 10,004 trips
equal, update by update, those of the pandas batch computation (every operator at one replica:
docs/debs.md says why more replicas do not keep the trip order this equality needs)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from test_debs import TRIPS, batch_top10, needs_trips

from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.control.controller import Controller
from elastream.control.mape import run_mape
from elastream.examples import debs
from elastream.model.pipeline import ReplicaPool
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads import Trace

pytestmark = [pytest.mark.spark, pytest.mark.slow]
PIPELINE = Path(debs.__file__).with_name("debs.yaml")


@needs_trips
def test_spark_emits_the_batch_computations_top10_updates(tmp_path, monkeypatch):
    monkeypatch.setenv(debs.TRIPS_ENV, str(TRIPS.resolve()))
    pipeline = load_pipeline(PIPELINE)
    one = ReplicaPool(min=1, max=1)
    ops = [
        op.model_copy(update={"replicas": one, "service_time_ms": 0.0}) for op in pipeline.operators
    ]
    pipeline = pipeline.model_copy(update={"operators": tuple(ops)})
    trace = Trace(np.array([400.0] * 25 + [4.0]))  # 10,004 trips in 26 s
    config = make_config(td=3.0, out=tmp_path / "run", drain_s=180, t_out=None)
    engine = SparkEngine(pipeline, config, trace)
    run_mape(engine, Controller.build("psps"))

    store = engine.store
    audit = store.audit()
    assert audit.events_in == 10_004 and audit.pending == 0, audit
    rows = [s.event.payload for s in store.read("top10", 0, store.latest("top10"))]
    got = [(p["i"], p["top"]) for p in sorted(rows, key=lambda p: p["i"])]
    assert got == batch_top10(TRIPS)
    assert all(p["delay_s"] >= 0 for p in rows)
    rejected = Counter(
        s.event.payload["reason"] for s in store.read("rejected", 0, store.latest("rejected"))
    )
    rows = TRIPS.read_text().splitlines()
    assert rejected == Counter(r for r, _ in map(debs.clean, rows) if r != "ok")
