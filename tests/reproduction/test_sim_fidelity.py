"""The two runtime models behind the PSPS reproduction's experiments: Alg. 1 with its U
refreshed every lb_refresh_s, and spout backpressure (source_hold, Storm's max.spout.pending)."""

import numpy as np
import pytest
from support.sim import EXACT, config, constant, drive, one_operator, replace

from elastream.control.policy import Decision
from elastream.runner.engines import simulate
from elastream.runtime.sim import SimEngine
from elastream.workloads.trace import Trace


def varying_load_latency(**settings):
    """One operator at 2 then 4 replicas (100/s each) under a load that moves every 5 s
    between 120/s and 330/s, td = 30 s: the utilizations of the last td are stale."""
    rates = np.tile(np.repeat([120.0, 330.0], 5), 12)
    engine = SimEngine(
        one_operator(pool=(1, 4)),
        config(interval_s=30.0, drain_s=60),
        Trace(rates),
        replace(EXACT, **settings),
    )
    _, totals = drive(engine, {0: Decision.of({"op": 2}), 1: Decision.of({"op": 4})})
    assert totals.completed == totals.events_in
    return totals.latency_ms_mean


def test_fresh_utilizations_balance_better_than_once_per_td():
    literal = varying_load_latency()
    fresh = varying_load_latency(lb_refresh_s=1.0)
    assert fresh < 0.8 * literal


def test_lb_refresh_keeps_the_counts_exact():
    result = simulate(
        one_operator(),
        config(policy="psps", replicas=None, drain_s=30),
        constant(250, 60),
        replace(EXACT, lb_refresh_s=0.5),
    )
    t = result.totals
    assert t.events_in == t.completed == 250 * 60


def test_source_hold_moves_the_wait_out_of_the_latency_and_the_timeout():
    # 200/s offered to one replica serving 100/s for 60 s, t_out 5 s: without a hold half of
    # the events time out; with at most 50 in flight none does, nothing waits more than about
    # 0.5 s inside the pipeline, and the backlog drains from the source afterwards.
    cfg = config(event_timeout_s=5.0, drain_s=90)
    free = simulate(one_operator(), cfg, constant(200, 60), EXACT)
    held = simulate(one_operator(), cfg, constant(200, 60), replace(EXACT, source_hold=50))
    assert free.totals.dropped_timeout > 4000
    assert held.totals.dropped_timeout == 0
    assert held.totals.completed == held.totals.events_in == 12000
    assert held.totals.latency_ms_p99 <= 50 / 100 * 1000 + 100 + 10  # hold / rate + step + et
    # the input counts when it arrives, the output when it is served: degradation shows it
    assert held.summary.throughput_degradation == pytest.approx(0.5, abs=0.05)


def test_source_hold_counts_what_the_drain_did_not_reach():
    held = simulate(
        one_operator(), config(drain_s=10), constant(200, 30), replace(EXACT, source_hold=20)
    )
    t = held.totals
    assert t.events_in == 6000
    assert t.completed == pytest.approx(100 * 40, abs=30)  # 40 s of service at 100/s
    assert held.summary.processed_ratio < 0.7


def test_declared_r_over_is_the_saved_resources_base_and_pools_may_exceed_it():
    spec = one_operator(pool=(1, 6)).model_dump(by_alias=True)
    pipeline = one_operator(pool=(1, 6)).model_validate({**spec, "overprovisioned_replicas": 4})
    assert pipeline.overprovisioned_replicas == 4 and pipeline.pool_total == 6
    result = simulate(pipeline, config(replicas=6, drain_s=5), constant(50, 30), EXACT)
    assert result.summary.overprovisioned_replicas == 4
    saved = result.summary.replica_seconds_saved_ratio
    assert saved == pytest.approx(1 - 6 / 4)  # above r_over: negative
    with pytest.raises(ValueError, match="overprovisioned_replicas"):
        one_operator().model_validate({**spec, "overprovisioned_replicas": 0})
