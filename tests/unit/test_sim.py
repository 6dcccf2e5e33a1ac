"""The simulator as an Engine: conservation, overload, Little's law, q_size and t_out, the three
reconfiguration models, groupings after a scale-out, determinism and the shared policy code."""

import numpy as np
import pytest
from support.sim import (
    EXACT,
    SYN,
    config,
    constant,
    drive,
    filter_split_pipeline,
    one_operator,
    replace,
)

import elastream.control.mape
from elastream.control.policies import POLICIES, psps
from elastream.control.policy import Decision
from elastream.model.pipeline import pipeline_from_dict
from elastream.runner import engines as sim_engine  # the one run path simulate() takes
from elastream.runner.engines import simulate
from elastream.runner.recording import HistoryRecorder
from elastream.runtime.sim import SimEngine
from elastream.workloads.trace import Trace

# ----------------------------------------------------------------------------- conservation


@pytest.mark.parametrize("queue_model", ["per_replica", "micro_batch"])
def test_every_source_event_is_accounted_for_exactly(queue_model):
    settings = replace(EXACT, queue_model=queue_model)
    cfg = config(policy="psps", replicas=None, event_timeout_s=1.0, queue_capacity=2500, drain_s=30)
    trace = Trace(np.array([100.0] * 20 + [3000.0] * 20 + [50.0] * 20))  # overload in the middle
    result = simulate(filter_split_pipeline(), cfg, trace, settings)
    t = result.totals
    assert t.dropped_timeout > 0 and t.dropped_overflow > 0 and t.filtered > 0  # all paths used
    assert t.events_in == int(trace.rates.sum())
    assert t.completed == t.events_out + t.filtered  # no fan-out: one source event, one fate
    assert t.events_in == t.completed + t.dropped_timeout + t.dropped_overflow + t.failed
    assert sum(s.source_events for s in result.snapshots) == t.events_in
    assert sum(s.completed for s in result.snapshots) == t.completed
    assert sum(s.sink_events for s in result.snapshots) == t.events_out
    dropped = sum(
        o.dropped_timeout + o.dropped_overflow for s in result.snapshots for o in s.operators
    )
    assert dropped == t.dropped_timeout + t.dropped_overflow
    assert result.snapshots[-1].operators[-1].queue == 0


def test_a_replicated_stream_completes_each_source_event_once():
    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": [{"name": "op", "function": f"{SYN}:passthrough", "service_time_ms": 1}],
            "sinks": [{"name": "a"}, {"name": "b"}],
            "streams": [
                {"from": "src", "to": "op"},
                {"from": "op", "to": "a"},
                {"from": "op", "to": "b"},
            ],
        }
    )
    t = simulate(pipeline, config(), constant(100, 20), EXACT).totals
    assert t.events_in == 2000
    assert t.events_out == 4000  # every output goes to both sinks
    assert t.completed == 2000


def test_split_ratio_reaches_the_operators():
    result = simulate(
        filter_split_pipeline(), config(policy="psps", replicas=None), constant(200, 60), EXACT
    )
    split_out = sum(s.op("split").processed for s in result.snapshots)
    to_enrich = sum(s.op("enrich").received for s in result.snapshots)
    assert split_out > 0
    assert to_enrich / split_out == pytest.approx(0.3, abs=0.06)  # values >= 700 of 1000
    evens = sum(s.op("evens").processed for s in result.snapshots)
    assert sum(s.op("split").received for s in result.snapshots) == evens // 2


# ----------------------------------------------------------------------------- overload


def test_static_single_replica_falls_behind_while_psps_keeps_up():
    trace = constant(250, 60)  # one replica serves 100/s
    static = simulate(one_operator(), config(drain_s=10), trace, EXACT)
    assert static.snapshots[10].operators[0].queue > 1000
    assert static.summary.processed_ratio < 0.7
    assert static.summary.throughput_degradation > 0.3
    elastic = simulate(
        one_operator(), config(policy="psps", replicas=None, drain_s=10), trace, EXACT
    )
    assert elastic.summary.processed_ratio == 1.0
    assert max(s.operators[0].replicas for s in elastic.snapshots) >= 3
    assert elastic.snapshots[-1].operators[0].queue == 0
    assert elastic.summary.latency_ms_mean < static.summary.latency_ms_mean / 5


def test_littles_law_in_a_steady_overload():
    # λ = 200/s into a replica serving 100/s with q_size 1000: the queue sits at 1000 and
    # admitted events wait W = L / throughput = 1000 / 100 = 10 s.
    result = simulate(one_operator(), config(queue_capacity=1000), constant(200, 120), EXACT)
    steady = result.snapshots[20:55]
    for s in steady:
        op = s.operators[0]
        throughput = op.processed / s.interval_s
        assert op.queue == 1000
        assert s.latency_ms_mean / 1000 == pytest.approx(op.queue / throughput, rel=0.03)


def test_q_size_overflow_count():
    # 24000 offered; the replica serves 100/s for 120 s plus the 1000 left in its full queue.
    result = simulate(
        one_operator(), config(queue_capacity=1000, drain_s=30), constant(200, 120), EXACT
    )
    t = result.totals
    assert t.dropped_timeout == 0
    assert t.dropped_overflow == pytest.approx(24000 - 120 * 100 - 1000, rel=0.01)
    assert t.events_in == t.completed + t.dropped_overflow


def test_t_out_timeout_count_and_latency_bound():
    # Nothing waits more than t_out = 5 s: the replica serves 100/s, the rest times out.
    result = simulate(
        one_operator(), config(event_timeout_s=5.0, drain_s=30), constant(200, 120), EXACT
    )
    t = result.totals
    assert t.dropped_overflow == 0
    assert t.dropped_timeout == pytest.approx(24000 - 125 * 100, rel=0.02)
    assert t.latency_ms_p99 <= 5000 + 100 + 10  # t_out + one step + the service time
    assert t.events_in == t.completed + t.dropped_timeout


def test_latency_histogram_gives_the_totals_mean_and_p99():
    engine = SimEngine(
        one_operator(), config(queue_capacity=500), Trace(np.linspace(50, 300, 40)), EXACT
    )
    _, totals = drive(engine, {})
    histogram = engine.latency_histogram_ms()
    values = np.repeat([ms for ms, _ in histogram], [n for _, n in histogram])
    assert values.size == totals.events_out
    assert values.mean() == pytest.approx(totals.latency_ms_mean)
    assert totals.latency_ms_p99 == values[int(np.ceil(0.99 * values.size)) - 1]


# ----------------------------------------------------------------------------- reconfiguration


def test_restart_loses_queued_events_and_pool_does_not():
    cfg = config(policy="psps", replicas=None, drain_s=20)
    trace = constant(300, 60)
    pool = simulate(one_operator(), cfg, trace, EXACT)
    restart = simulate(
        one_operator(),
        cfg,
        trace,
        replace(EXACT, reconfiguration="restart", restart_downtime_s=3.0),
    )
    assert pool.totals.dropped_timeout == pool.totals.dropped_overflow == 0
    assert pool.summary.processed_ratio == 1.0
    lost = sum(s.dropped_restart for s in restart.snapshots)
    assert lost > 0
    assert restart.totals.dropped_restart == lost  # t_out is off: only the restarts lose events
    assert restart.totals.dropped_timeout == 0  # restart losses are not timeouts
    assert restart.totals.events_in == restart.totals.completed + lost


def test_restart_stops_processing_for_the_downtime():
    engine = SimEngine(
        one_operator(),
        config(),
        constant(50, 30),
        replace(EXACT, reconfiguration="restart", restart_downtime_s=4.0),
    )
    snapshots, _ = drive(engine, {2: Decision.of({"op": 2})})
    assert snapshots[2].operators[0].processed == 0  # td = 2 s, all of it down
    assert snapshots[3].operators[0].processed == 0
    assert snapshots[4].operators[0].processed > 100  # the backlog of 4 s, then normal work


def test_delayed_replicas_serve_only_after_their_start_delay():
    engine = SimEngine(
        one_operator(),
        config(),
        constant(150, 40),
        replace(EXACT, reconfiguration="delayed", start_delay_s=4.0),
    )
    snapshots, _ = drive(engine, {3: Decision.of({"op": 2})})
    assert snapshots[3].operators[0].replicas == 2  # counted (and paid for) from the request
    assert snapshots[3].operators[0].replica_processed[1] == 0
    assert snapshots[4].operators[0].replica_processed[1] == 0
    assert snapshots[5].operators[0].replica_processed[1] > 0


def test_recommend_only_decides_but_never_enacts():
    result = simulate(
        one_operator(),
        config(policy="psps", replicas=None, recommend_only=True, drain_s=5),
        constant(300, 30),
        EXACT,
    )
    assert max(d.as_dict()["op"] for d in result.decisions) > 1
    assert {s.operators[0].replicas for s in result.snapshots} == {1}


# ----------------------------------------------------------------------------- groupings


def scale_out_latency(grouping):
    """250/s into one replica (100/s) for 10 s, then four replicas (PSPS V-C's scenario)."""
    engine = SimEngine(one_operator(grouping), config(drain_s=120), constant(250, 120), EXACT)
    _, totals = drive(engine, {5: Decision.of({"op": 4})})
    return totals


def test_load_balancing_beats_shuffle_after_a_scale_out():
    shuffle = scale_out_latency("shuffle")
    balanced = scale_out_latency("load_balancing")
    assert shuffle.completed == balanced.completed == shuffle.events_in
    assert balanced.latency_ms_mean < 0.8 * shuffle.latency_ms_mean


def test_shuffle_strands_backlog_on_the_old_replica():
    engine = SimEngine(one_operator("shuffle"), config(drain_s=120), constant(250, 120), EXACT)
    snapshots, _ = drive(engine, {5: Decision.of({"op": 4})})
    for s in snapshots[6:12]:
        after = s.operators[0].replica_processed
        assert after[0] == 200  # the old replica is still busy with its backlog
        assert np.mean(after[1:]) < 150  # the new ones (capacity 200) idle part of the time
    assert snapshots[12].operators[0].queue > 500


def test_key_hash_follows_the_key_skew():
    # 16 keys over 3 replicas: crc32 gives them unequal key counts, hence unequal loads.
    engine = SimEngine(
        one_operator("key_hash", pool=(3, 3), service_ms=1.0),
        config(replicas=3),
        constant(300, 20),
        EXACT,
    )
    snapshots, _ = drive(engine, {})
    loads = np.sum([s.operators[0].replica_processed for s in snapshots], axis=0)
    assert loads.sum() == 6000
    assert loads.max() - loads.min() > 500


# ----------------------------------------------------------------------------- model details


def test_micro_batch_overhead_costs_capacity():
    cfg = config(drain_s=60)
    trace = constant(80, 60)  # 80% of one replica
    free = simulate(one_operator(), cfg, trace, replace(EXACT, queue_model="micro_batch"))
    costly = simulate(
        one_operator(),
        cfg,
        trace,
        replace(EXACT, queue_model="micro_batch", batch_overhead_s=0.4, batch_work_s=1.0),
    )
    # a batch of at most 100 events (1 s of work) now takes 1.4 s: 100 / 1.4 = 71.4 events/s
    assert free.summary.latency_ms_mean < 1000
    steady = costly.snapshots[10:30]
    rate = sum(s.operators[0].processed for s in steady) / sum(s.interval_s for s in steady)
    assert rate == pytest.approx(100 / 1.4, rel=0.05)
    assert costly.snapshots[25].operators[0].queue > costly.snapshots[10].operators[0].queue
    assert costly.summary.latency_ms_mean > 5 * free.summary.latency_ms_mean


def test_micro_batch_overhead_grows_with_the_tasks_of_a_batch():
    # Eq. O1: 4 replicas, batches of 400 events (1 s of work each) cost 0.1 + 3 x 0.1 s more.
    pipeline = one_operator(pool=(4, 4))
    settings = replace(
        EXACT,
        queue_model="micro_batch",
        batch_overhead_s=0.1,
        batch_overhead_per_replica_ms=100.0,
        batch_work_s=1.0,
    )
    cfg = config(replicas=4, interval_s=2.8, drain_s=0)  # two batches of 1.4 s per interval
    result = simulate(pipeline, cfg, constant(380, 40), settings)
    assert [s.operators[0].processed for s in result.snapshots[3:12]] == [800] * 9
    # each replica served in both batches of each interval, as Spark's share counts say
    assert {s.operators[0].replica_batches for s in result.snapshots[3:12]} == {(2, 2, 2, 2)}
    per_replica = simulate(pipeline, cfg, constant(380, 10), EXACT)
    assert per_replica.snapshots[3].operators[0].replica_batches == ()  # no batches to count


def test_micro_batch_overhead_spread_keeps_its_mean():
    # Eq. O2: batch costs vary around Eq. O1 with mean factor 1: an overloaded operator keeps
    # its long-run throughput, and a loaded one's latency tail grows.
    base = replace(EXACT, queue_model="micro_batch", batch_overhead_s=0.5, batch_work_s=1.0)
    spread = replace(base, batch_overhead_cv=0.6)
    over = config(drain_s=0)
    fixed = simulate(one_operator(), over, constant(150, 90), base).snapshots[2:45]
    varied = simulate(one_operator(), over, constant(150, 90), spread).snapshots[2:45]

    def served(snapshots):
        return sum(s.operators[0].processed for s in snapshots)

    assert served(varied) == pytest.approx(served(fixed), rel=0.05)
    loaded = config(drain_s=30)
    p99 = [
        simulate(one_operator(), loaded, constant(55, 60), sim).summary.latency_ms_p99
        for sim in (base, spread)
    ]
    assert p99[1] > 1.3 * p99[0]


def test_micro_batch_outputs_leave_before_the_offset_commit():
    # Sparse input: every batch is 1 s of fixed cost and 10 ms of work; with half of the
    # cost after the outputs have left, every event reaches the sink 0.5 s sooner (to the
    # step of 0.1 s: outputs leave at the end of the step their work ends in).
    base = replace(EXACT, queue_model="micro_batch", batch_overhead_s=1.0)
    cfg = config(drain_s=10)

    def latency(share):
        sim = replace(base, batch_commit_share=share)
        return simulate(one_operator(), cfg, constant(2, 60), sim).summary.latency_ms_mean

    assert latency(0.0) - latency(0.5) == pytest.approx(500, abs=100)


def test_micro_batch_overhead_counts_only_other_busy_queries():
    settings = replace(EXACT, queue_model="micro_batch", batch_overhead_s=0.2)
    contended = replace(settings, batch_overhead_per_busy_query_ms=300.0)
    cfg = config(drain_s=60)
    trace = constant(60, 30)

    def latency(pipeline, sim):
        return simulate(pipeline, cfg, trace, sim).summary.latency_ms_mean

    # Alone, a query has no other query to share the CPUs with: nothing changes.
    assert latency(one_operator(), contended) == latency(one_operator(), settings)
    # In a chain of four, batches overlap and each one that starts meanwhile costs more.
    chain = filter_split_pipeline(pool=(1, 1))
    assert latency(chain, contended) > 1.2 * latency(chain, settings)


def test_micro_batch_waits_for_the_spark_trigger_when_idle():
    settings = replace(EXACT, queue_model="micro_batch")
    trace = constant(2, 60)  # sparse: every batch starts from an idle query

    def mean_latency(trigger_s):
        cfg = config(drain_s=10, spark={"trigger_s": trigger_s})
        return simulate(one_operator(), cfg, trace, settings).summary.latency_ms_mean

    # Arrivals land uniformly between the 1 s ticks (in 0.1 s steps): about 0.45 s more wait.
    assert 300 < mean_latency(1.0) - mean_latency(0.0) < 600


def history_rows(snapshots):
    """The metrics history the run path records from these snapshots."""
    recorder = HistoryRecorder("run", "p")
    for snap in snapshots:
        recorder(snap, Decision(()))
    return recorder.rows


def test_micro_batch_reports_a_capped_admission_while_the_backlog_drains():
    # One replica, batches of at most 100 events (1 s of its work); 300/s for 10 s leaves a
    # backlog that drains at 80/s under 20/s: every batch is capped while the queue shrinks.
    settings = replace(EXACT, queue_model="micro_batch", batch_work_s=1.0)
    trace = Trace(np.array([20.0] * 10 + [300.0] * 10 + [20.0] * 40))
    snapshots = simulate(one_operator(), config(drain_s=30), trace, settings).snapshots
    ops = [s.operators[0] for s in snapshots]
    assert not any(o.admission_capped for o in ops[:4])  # light load: never capped
    draining = [k for k in range(11, 20) if ops[k].queue < ops[k - 1].queue]
    assert len(draining) >= 5
    assert all(ops[k].admission_capped for k in draining)
    assert not ops[-1].admission_capped and ops[-1].queue == 0
    rows = history_rows(snapshots)
    for k in draining:  # the queue shrank, but the cap was hit: backpressure
        assert all(r.backpressure for r in rows if r.t == snapshots[k].t - snapshots[k].interval_s)


@pytest.mark.parametrize("queue_model", ["per_replica", "micro_batch"])
def test_outputs_are_counted_per_output_stream(queue_model):
    settings = replace(EXACT, queue_model=queue_model)
    cfg = config(replicas=2, drain_s=10)
    snapshots = simulate(filter_split_pipeline(pool=(2, 2)), cfg, constant(200, 30), settings)
    snapshots = snapshots.snapshots
    split = [s.op("split") for s in snapshots]
    assert all(dict(o.emitted_streams).keys() == {"low", "high"} for o in split)
    assert all(sum(n for _, n in o.emitted_streams) == o.emitted for o in split)
    high = sum(dict(o.emitted_streams)["high"] for o in split)
    assert high == sum(s.op("enrich").received for s in snapshots)  # all of "high" to enrich
    assert high / sum(o.emitted for o in split) == pytest.approx(0.3, abs=0.06)
    enrich = [s.op("enrich") for s in snapshots]
    assert all(o.emitted_streams == (("out", o.emitted),) for o in enrich)  # its one stream
    rows = [r for r in history_rows(snapshots) if r.operator == "split" and r.input_rate > 0]
    assert rows and all(r.output_rates.keys() == {"low", "high"} for r in rows)


def test_replica_speed_and_noise_change_the_work_but_not_the_counts():
    settings = replace(EXACT, replica_speed={"op": [1.0, 0.25]}, et_noise=0.3)
    engine = SimEngine(one_operator(pool=(2, 2)), config(replicas=2), constant(60, 30), settings)
    snapshots, totals = drive(engine, {})
    loads = np.sum([s.operators[0].replica_processed for s in snapshots], axis=0)
    assert loads[0] > 2 * loads[1]  # load balancing charges the slow replica 4x per event
    busy = np.sum([s.operators[0].busy_s for s in snapshots])
    assert busy == pytest.approx((loads[0] + 4 * loads[1]) * 0.01, rel=0.1)  # noise averages out
    assert totals.events_in == totals.completed == 1800


def test_history_records_the_service_time_variance_the_simulator_draws_from():
    # et_ij = 10 ms and 40 ms, times a log-normal factor of CV 0.3: σ_ij = 3 ms and 12 ms.
    noisy = replace(EXACT, replica_speed={"op": [1.0, 0.25]}, et_noise=0.3)
    for queue_model in ("per_replica", "micro_batch"):
        sim = replace(noisy, queue_model=queue_model)
        result = simulate(one_operator(pool=(2, 2)), config(replicas=2), constant(60, 10), sim)
        op = result.snapshots[2].operators[0]
        assert op.service_time_var == pytest.approx((0.003**2, 0.012**2))
        rows = history_rows(result.snapshots[2:3])
        assert [r.service_time_var for r in rows] == pytest.approx([0.003**2, 0.012**2])
    exact = simulate(one_operator(), config(), constant(60, 6), EXACT).snapshots[1].operators[0]
    assert exact.service_time_var == (0.0,)  # no noise: every event takes et exactly


def test_same_seed_same_run_other_seed_other_run():
    settings = replace(EXACT, et_noise=0.2)
    cfg = config(policy="psps", replicas=None, seed=4)
    pipeline = one_operator("shuffle")
    trace = Trace(np.linspace(50, 400, 60))
    first = simulate(pipeline, cfg, trace, settings)
    again = simulate(pipeline, cfg, trace, settings)
    other = simulate(pipeline, cfg.model_copy(update={"seed": 5}), trace, settings)
    assert first.snapshots == again.snapshots
    assert first.totals == again.totals
    assert first.snapshots != other.snapshots


def test_snapshots_follow_the_interval_clock():
    result = simulate(
        one_operator(),
        config(interval_s=1.5, drain_s=0),
        constant(100, 15),
        replace(EXACT, step_s=0.07),
    )
    assert [s.t for s in result.snapshots] == pytest.approx([1.5 * (i + 1) for i in range(10)])
    assert all(s.interval_s == pytest.approx(1.5) for s in result.snapshots)


# ----------------------------------------------------------------------------- shared code


def test_the_policies_are_the_registered_ones_not_copies():
    cfg = config(policy="psps", replicas=None)
    controller = cfg.controller()
    assert controller.policy is POLICIES.get("psps")
    assert controller.policy.decide is psps.decide
    assert sim_engine.run_mape is elastream.control.mape.run_mape
    result = simulate(filter_split_pipeline(), cfg, constant(400, 40), EXACT)
    state = controller.initial_state()
    for snapshot, decision in zip(result.snapshots, result.decisions, strict=True):
        replayed, state = controller.decide(snapshot, state)
        assert replayed == decision


def test_observers_see_every_interval():
    seen = []
    result = simulate(
        one_operator(),
        config(drain_s=0),
        constant(50, 10),
        EXACT,
        observers=[lambda s, d: seen.append((s.t, d.as_dict()["op"]))],
    )
    assert [t for t, _ in seen] == [s.t for s in result.snapshots]


def test_decision_outside_the_pool_is_refused():
    engine = SimEngine(one_operator(pool=(1, 2)), config(), constant(10, 4), EXACT)
    engine.start()
    with pytest.raises(ValueError, match="'op'.*5 replicas.*pool"):
        engine.enact(Decision.of({"op": 5}))
    with pytest.raises(KeyError, match="nope"):
        engine.enact(Decision.of({"nope": 1}))


def stateful_one_operator():
    """src -> count (keyed state, 10 ms per event) -> sink."""
    data = one_operator("key_hash").model_dump(mode="json", by_alias=True)
    data["operators"][0].update(function="elastream.examples.keyed:count", stateless=False)
    data["sources"][0]["generator"] = "elastream.examples.keyed:generate"
    return pipeline_from_dict(data)


def test_a_stateful_rescale_pauses_only_stateful_operators():
    paused = replace(EXACT, stateful_rescale_pause_s=4.0)
    stateful, _ = drive(
        SimEngine(stateful_one_operator(), config(), constant(50, 30), paused),
        {2: Decision.of({"op": 2})},
    )
    assert stateful[2].operators[0].stateful
    assert stateful[2].operators[0].processed == 0  # td = 2 s, all of it paused
    assert stateful[3].operators[0].processed == 0
    assert stateful[4].operators[0].processed > 100  # the backlog of 4 s, then normal work
    stateless, _ = drive(
        SimEngine(one_operator(), config(), constant(50, 30), paused), {2: Decision.of({"op": 2})}
    )
    assert not stateless[2].operators[0].stateful
    assert stateless[2].operators[0].processed > 0
