"""Long runs: the Summary from running aggregates equals the one from every snapshot, the
snapshot log is bounded, series are written at a chosen resolution, plots are downsampled, the
history is flushed as the run goes, and fast-forward gives the same figures as full stepping."""

import dataclasses
import functools

import numpy as np
import pandas as pd
import pytest
import yaml
from support.builders import snapshot, stats
from support.sim import EXACT, config, filter_split_pipeline, one_operator, replace
from support.sim import SIM_PIPELINE as PIPELINE

from elastream.cli import main
from elastream.control.policies import POLICIES as REGISTERED
from elastream.control.policy import Decision
from elastream.history import HistoryStore
from elastream.model.metrics import summarize
from elastream.report import load_intervals, load_summary
from elastream.report.series import Interval, merge_intervals, merge_run
from elastream.report.stream import PlotPoints
from elastream.runner import recording as history_module
from elastream.runner import session
from elastream.runner.engines import simulate
from elastream.runner.recording import HistoryRecorder
from elastream.runner.session import run_session
from elastream.runtime.sim.settings import SimSettings
from elastream.workloads.trace import Trace

POLICIES = ["psps", "static", "threshold", "ds2", "dabs", "lagaware"]


def wavy(seconds=240):
    """A load that rises past several replicas' capacity and falls again, per second."""
    t = np.arange(seconds)
    return Trace(100.0 + 700.0 * np.sin(t / 20.0) ** 2)


def steady_buckets():
    """Buckets of constant rate (as the NAB traces, shorter), one above a replica's 100/s."""
    return Trace(np.array([20.0, 61.7, 150.0, 37.3, 80.0, 10.0, 0.0, 0.45]), step_s=100.0)


@pytest.mark.parametrize("policy", POLICIES)
def test_running_summary_equals_the_summary_of_every_snapshot(policy):
    cfg = config(
        policy=policy,
        replicas=2 if policy == "static" else None,
        interval_s=5.0,
        event_timeout_s=5.0,
    )
    result = simulate(filter_split_pipeline(), cfg, wavy(), EXACT)
    assert len(result.snapshots) > 40
    assert result.summary.reconfigurations > 0 or policy == "static"  # the aggregates all move
    provisioned = result.summary.overprovisioned_replicas
    assert result.summary == summarize(result.snapshots, result.totals, provisioned)


def test_running_summary_counts_a_fast_forwarded_stretch_once_per_interval():
    cfg = config(policy="psps", replicas=None, interval_s=5.0)
    result = simulate(one_operator(service_ms=10.0), cfg, steady_buckets(), EXACT)
    assert any(s.intervals > 1 for s in result.snapshots)
    provisioned = result.summary.overprovisioned_replicas
    assert result.summary == summarize(result.snapshots, result.totals, provisioned)
    assert result.summary.intervals == sum(s.intervals for s in result.snapshots)


def test_a_run_longer_than_keep_snapshots_keeps_none_and_the_same_summary():
    cfg = config(policy="psps", replicas=None, interval_s=5.0)
    full = simulate(filter_split_pipeline(), cfg, wavy(120), EXACT)
    bounded = simulate(
        filter_split_pipeline(), cfg.model_copy(update={"keep_snapshots": 5}), wavy(120), EXACT
    )
    assert full.snapshots_kept and len(full.snapshots) > 5
    assert not bounded.snapshots_kept and bounded.snapshots == [] and bounded.decisions == []
    assert bounded.summary == full.summary


# ----------------------------------------------------------------------------- fast-forward


def assert_same_summary(fast, full):
    """Every count equal; every float within floating-point rounding (1e-9 relative)."""
    assert fast.summary.intervals == full.summary.intervals
    expected = full.summary.as_dict()
    for name, value in fast.summary.as_dict().items():
        if isinstance(value, float):
            assert value == pytest.approx(expected[name], rel=1e-9, abs=1e-12), name
        else:
            assert value == expected[name], name


@pytest.mark.parametrize("pipeline", [one_operator, filter_split_pipeline])
@pytest.mark.parametrize(
    "policy", [name for name in REGISTERED.names() if REGISTERED.get(name).fast_forward_exact]
)
def test_fast_forward_gives_the_summary_of_full_stepping(pipeline, policy):
    """Within a steady stretch no event waits, so fast-forward moves the same events through
    the same paths with the same latency (each path's service time), and the splitters carry
    their remainders, so every count is the same. What differs is the order in which latencies
    are added up (a stretch at once instead of step by step): floating-point rounding, hence
    1e-9 relative. The trace has fractional rates per step and a bucket of overload. Every
    policy fast-forward is on for by default is checked."""
    cfg = config(
        policy=policy,
        replicas=2 if policy == "static" else None,
        interval_s=5.0,
        event_timeout_s=5.0,
    )
    full = simulate(pipeline(), cfg, steady_buckets(), replace(EXACT, fast_forward=False))
    fast = simulate(pipeline(), cfg, steady_buckets(), EXACT)  # the default: on where exact
    assert len(fast.snapshots) < len(full.snapshots) / 4  # most of the run was skipped
    assert_same_summary(fast, full)


@pytest.mark.parametrize("grouping", ["round_robin", "key_hash"])
def test_fast_forward_shares_a_pass_by_the_grouping(grouping):
    """Three replicas on a steady load: round robin gives each replica the events stepping
    gives it; key hash follows the key shares (its carried remainders are chunked otherwise:
    within a few events per replica); the Summary is that of stepping."""
    cfg = config(policy="static", replicas=3, interval_s=5.0)
    pipeline = one_operator(grouping, pool=(3, 3), service_ms=1.0)
    trace = Trace(np.array([300.0, 120.5, 300.0]), step_s=100.0)
    full = simulate(pipeline, cfg, trace, replace(EXACT, fast_forward=False))
    fast = simulate(pipeline, cfg, trace, EXACT)
    assert len(fast.snapshots) < len(full.snapshots) / 4
    assert_same_summary(fast, full)

    def per_replica(result):
        return np.sum([s.operators[0].replica_processed for s in result.snapshots], axis=0)

    stepped, passed = per_replica(full), per_replica(fast)
    assert passed.sum() == stepped.sum()
    if grouping == "round_robin":
        assert list(passed) == list(stepped)
    else:
        assert np.abs(passed - stepped).max() <= 3
        assert stepped.max() - stepped.min() > 1000  # the key skew is there, and kept


def test_fast_forward_is_on_by_default_only_where_it_is_exact():
    default = SimSettings()
    assert default.fast_forward is None
    assert all(default.fast_forward_for(p) for p in ("psps", "static", "threshold", "ds2"))
    assert not any(default.fast_forward_for(p) for p in ("dabs", "proactive", "lagaware"))
    assert not default.fast_forward_for("decentralized")
    assert not SimSettings(queue_model="micro_batch").fast_forward_for("psps")
    assert not SimSettings(et_noise=0.1).fast_forward_for("psps")
    assert not SimSettings(source_hold=100).fast_forward_for("psps")
    assert SimSettings(fast_forward=True).fast_forward_for("dabs")
    assert not SimSettings(fast_forward=False).fast_forward_for("psps")


def test_dabs_keeps_every_interval_by_default():
    """DABS regresses over the last N intervals' rates: a skipped stretch would shorten its
    window, so it is stepped (and forcing fast-forward on changes its figures)."""
    cfg = config(policy="dabs", replicas=None, interval_s=5.0, event_timeout_s=5.0)
    result = simulate(one_operator(), cfg, steady_buckets(), EXACT)
    assert all(s.intervals == 1 for s in result.snapshots)
    forced = simulate(one_operator(), cfg, steady_buckets(), replace(EXACT, fast_forward=True))
    assert forced.summary.latency_ms_mean != result.summary.latency_ms_mean


def test_no_fast_forward_while_events_wait():
    """Overload: queues never empty, so every interval is stepped."""
    cfg = config(
        policy="static", replicas=1, interval_s=5.0, event_timeout_s=None, queue_capacity=None
    )
    trace = Trace(np.array([150.0, 150.0]), step_s=100.0)  # one replica serves 100/s
    result = simulate(one_operator(), cfg, trace, EXACT)
    assert all(s.intervals == 1 for s in result.snapshots)


# ----------------------------------------------------------------------------- outputs


def run_outputs(tmp_path, monkeypatch, name, **values):
    """A session run (the CLI's path: series streamed to disk) of the wavy load."""
    cfg = config(
        policy="psps", replicas=None, interval_s=2.0, out=tmp_path / name, engine="sim", **values
    )
    cfg = cfg.model_copy(update={"history": tmp_path / f"{name}.sqlite"})
    monkeypatch.setattr(session, "prepare_workload", lambda c, p, trace=None: wavy(120))
    return run_session(filter_split_pipeline(), cfg, title=name, quiet=True, sim=EXACT)


def test_series_at_a_resolution_keep_the_totals_of_the_per_interval_series(tmp_path, monkeypatch):
    result, fine = run_outputs(tmp_path, monkeypatch, "fine")
    _, coarse = run_outputs(tmp_path, monkeypatch, "coarse", series_resolution_s=20.0)
    assert not result.snapshots_kept  # the session streams its series to disk
    fine_i, coarse_i = pd.read_csv(fine["intervals"]), pd.read_csv(coarse["intervals"])
    assert len(coarse_i) == int(np.ceil(fine_i["t"].max() / 20.0))
    for column in ("interval_s", "input", "completed", "sink_events"):
        assert coarse_i[column].sum() == pytest.approx(fine_i[column].sum()), column
    fine_s, coarse_s = fine_i["interval_s"], coarse_i["interval_s"]
    mean_replicas = (fine_i["replicas_total"] * fine_s).sum() / fine_s.sum()
    coarse_mean = (coarse_i["replicas_total"] * coarse_s).sum() / coarse_s.sum()
    assert coarse_mean == pytest.approx(mean_replicas)
    fine_t, coarse_t = pd.read_csv(fine["timeseries"]), pd.read_csv(coarse["timeseries"])
    for column in ("received", "processed", "emitted"):
        by_op = fine_t.groupby("operator")[column].sum()
        assert coarse_t.groupby("operator")[column].sum().equals(by_op), column
    assert coarse_t.groupby("operator")["t"].count().eq(len(coarse_i)).all()


def test_plot_points_stay_bounded_and_cover_the_run():
    snap = dataclasses.replace(snapshot(stats("op1", replicas=2)), interval_s=5.0)
    points = PlotPoints(limit=4)
    for k in range(100):
        points.add(Interval(dataclasses.replace(snap, t=5.0 * (k + 1)), Decision.of({"op1": 2})))
    assert len(points.points) < 8
    assert sum(p.snapshot.intervals for p in points.points) == 100
    assert sum(p.snapshot.interval_s for p in points.points) == pytest.approx(500.0)
    assert points.points[-1].snapshot.t == pytest.approx(500.0)


def test_a_point_merged_at_once_equals_merging_its_intervals_pairwise():
    """The plot points merge a point's intervals in one pass (merge_run); every figure is the
    one pairwise merging from the first gives (floats bit for bit)."""
    seen: list[Interval] = []
    cfg = config(policy="psps", replicas=None, interval_s=2.0, event_timeout_s=3.0)
    simulate(
        one_operator(), cfg, wavy(120), EXACT, observers=[lambda *i: seen.append(Interval(*i))]
    )
    assert len({item.snapshot.latency_ms_mean for item in seen}) > 10
    for size in (2, 3, 17, len(seen)):
        items = seen[:size]
        point = merge_run(items)
        assert point == functools.reduce(merge_intervals, items)
        snaps = [item.snapshot for item in items]
        (merged,) = point.snapshot.operators
        ops = [snap.operators[0] for snap in snaps]
        assert point.snapshot.t == snaps[-1].t and point.decision == items[-1].decision
        assert point.snapshot.interval_s == pytest.approx(sum(snap.interval_s for snap in snaps))
        assert point.snapshot.sink_events == sum(snap.sink_events for snap in snaps)
        assert point.snapshot.latency_ms_mean == pytest.approx(
            sum(s.latency_ms_mean * s.sink_events for s in snaps if s.sink_events)
            / sum(s.sink_events for s in snaps)
        )
        assert merged.processed == sum(o.processed for o in ops)
        assert (merged.replicas, merged.queue) == (
            max(o.replicas for o in ops),
            max(o.queue for o in ops),
        )
        assert merged.service_time_s == pytest.approx(
            sum(o.service_time_s * o.processed for o in ops if o.processed) / merged.processed
        )


def test_history_is_flushed_to_the_store_as_the_run_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(history_module, "FLUSH_ROWS", 10)
    path = tmp_path / "h.sqlite"
    recorder = HistoryRecorder("run", "p", path)
    cfg = config(policy="psps", replicas=None, interval_s=2.0)
    simulate(one_operator(), cfg, wavy(60), EXACT, observers=[recorder])
    assert len(recorder.rows) < 10  # the rest is on disk already
    total = recorder.save()
    with HistoryStore(path) as store:
        assert len(store.rows()) == total > 10


def test_the_simulate_command_takes_fast_forward_and_a_series_resolution(tmp_path):
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(yaml.safe_dump(PIPELINE))
    out = tmp_path / "out"
    flags = "--duration 120 --interval-s 2 --policy psps --quiet --drain-s 0 --sim-sample-events 50"
    args = ["simulate", str(pipeline), "--out", str(out), *flags.split()]
    assert main([*args, "--sim-fast-forward", "--series-resolution-s", "30"]) == 0
    intervals = load_intervals(out)
    assert list(intervals["t"]) == [30.0, 60.0, 90.0, 120.0]
    assert intervals["input"].sum() == 150 * 120
    assert load_summary(out)["settings"]["series_resolution_s"] == 30.0
