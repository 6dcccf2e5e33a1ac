"""Backpressure on Spark, CI-sized (benchmarks/backpressure.py is the 60-s run): an outside
producer offers a Redis stream more than the operator's replica pool processes for a while.
Nothing is dropped, the operator's queue never exceeds `ingest_bound`, the ingest rate falls
below the offered one while the overload lasts and catches up afterwards (every entry ingested
once), and the psps policy scales to the pool's maximum meanwhile (the external backlog counted
in λ_G)."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from support.paths import ROOT
from support.redis_server import require_redis_server

pytestmark = [pytest.mark.spark, pytest.mark.alone]


def bench():
    spec = importlib.util.spec_from_file_location(
        "backpressure", ROOT / "benchmarks/backpressure.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def test_an_overloaded_source_is_held_back_not_dropped_and_the_pool_scales_out(tmp_path):
    require_redis_server()
    module = bench()
    # 3 replicas at 40 ms an event process at most 75 events/s: 120/s is beyond the pool on any
    # machine; the 1,200 extra events drain in about 20 s on a quiet machine, but a CI run under
    # load had 268 of 1,370 still in Redis 30 s after the overload: 50 s are given
    scenario = module.Scenario(
        low=5, high=120, warm_s=4, overload_s=10, after_s=50, service_ms=40, max_replicas=3,
        bound=150, td=2.0,
    )  # fmt: skip
    outcome = module.run(tmp_path, scenario, quiet=True)
    rows = outcome.rows
    overload = [
        r for r in rows if scenario.warm_s + 2 < r.t <= scenario.warm_s + scenario.overload_s
    ]
    assert overload, rows
    assert outcome.dropped == 0
    assert outcome.queue_max <= scenario.bound  # sampled every 0.1 s, and at every interval end
    assert all(r.queue_end <= scenario.bound for r in rows), rows
    assert outcome.queue_max >= scenario.bound // 2, rows  # the bound was reached: it held
    # while overloaded the source ingests less than is offered, and the rest waits in Redis
    assert sum(r.ingested for r in overload) < 0.8 * sum(r.offered for r in overload), rows
    assert max(r.backlog or 0 for r in overload) > scenario.bound, rows
    assert max(r.replicas for r in rows) == scenario.max_replicas, rows
    # afterwards it catches up: every entry ingested exactly once, the backlog gone
    assert outcome.events_in == outcome.sent, (outcome.events_in, outcome.sent)
    assert outcome.duplicates == 0
    assert rows[-1].backlog == 0, rows
