"""The run's Prometheus endpoint: scraped over real HTTP while a simulator run goes, its last
scrape equal to the run's output files; switched off; the busy default port; logging."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import socket
from dataclasses import replace

import numpy as np
import pytest
import yaml
from support.builders import snapshot, stats
from support.scrape import Scraper, assert_metrics_match_outputs, parse, total, value
from support.sim import EXACT
from support.sim import SIM_PIPELINE as PIPELINE
from support.sim import config as sim_config

from elastream.cli import main
from elastream.cli._logging import configure_logging
from elastream.config.ops import DEFAULT_METRICS_PORT
from elastream.control.policy import Decision
from elastream.model.metrics import RunTotals
from elastream.model.pipeline import pipeline_from_dict
from elastream.model.snapshot import HostClock
from elastream.report.prom import FOLD_INTERVALS, RunMetrics
from elastream.runner.engines import simulate as simulate_run
from elastream.workloads.trace import Trace
from reproductions.harness.redis_server import free_port


def simulate(tmp_path, *flags: str, settings: dict | None = None) -> int:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(yaml.safe_dump(PIPELINE))
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(settings or {}))
    base = "--duration 30 --interval-s 2 --policy threshold --quiet --drain-s 5"
    base += f" --out {tmp_path / 'out'}"
    return main(["simulate", str(pipeline), "--config", str(config), *base.split(), *flags])


def test_a_scrape_at_the_end_equals_the_runs_outputs(tmp_path):
    port = free_port()
    settings = {"metrics": {"port": port, "linger_s": 2.0}}
    with Scraper(f"http://127.0.0.1:{port}/metrics", every_s=0.2) as scraper:
        # no drain: the last interval, whose gauges the scrape shows, has input (a source rate)
        assert simulate(tmp_path, "--drain", "0", settings=settings) == 0
    assert scraper.scrapes, f"no scrape succeeded ({scraper.refused} refused)"
    last = scraper.scrapes[-1]
    assert_metrics_match_outputs(last, tmp_path / "out", PIPELINE["name"])
    run = {"pipeline": PIPELINE["name"]}
    assert total(last, "elastream_source_rate_events_per_second", **run) > 0
    assert value(last, "elastream_event_latency_seconds_count", **run) > 0


# Every family a run serves, with its type: Prometheus' conventions (a unit in the name,
# `_total` on counters, no `_created` series). Written out here, not derived from the code.
FAMILIES = {
    "elastream_operator_events_received_total": "counter",
    "elastream_operator_events_processed_total": "counter",
    "elastream_operator_events_emitted_total": "counter",
    "elastream_operator_events_failed_total": "counter",
    "elastream_operator_events_dropped_total": "counter",
    "elastream_operator_queue_events": "gauge",
    "elastream_operator_replicas_active": "gauge",
    "elastream_operator_replicas_pool": "gauge",
    "elastream_operator_replicas_target": "gauge",
    "elastream_operator_busy_ratio": "gauge",
    "elastream_operator_service_time_seconds": "histogram",
    "elastream_source_events_total": "counter",
    "elastream_source_rate_events_per_second": "gauge",
    "elastream_source_backlog_events": "gauge",
    "elastream_events_completed_total": "counter",
    "elastream_sink_events_total": "counter",
    "elastream_event_latency_seconds": "histogram",
    "elastream_interval_latency_p99_seconds": "gauge",
    "elastream_objective_latency_seconds": "gauge",
    "elastream_objective_met": "gauge",
    "elastream_intervals_total": "counter",
    "elastream_reconfigurations_total": "counter",
    "elastream_hosts_up": "gauge",
    "elastream_host_cost_price_units": "gauge",
    "elastream_events_failed_total": "counter",
    "elastream_events_dropped_restart_total": "counter",
    "elastream_query_restarts_total": "counter",
    "elastream_hosts_leased_total": "counter",
    "elastream_host_re_leases_total": "counter",
    "elastream_run_finished": "gauge",
}


def families(text: str) -> dict[str, str]:
    """name -> type of every `# TYPE` line of an exposition."""
    out = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            out[name] = kind
    return out


def test_a_scraped_run_serves_each_family_of_the_list_and_no_created_series(tmp_path):
    """A real simulated run with an objective, scraped over HTTP at its end: exactly the
    families above; per-event latencies (one histogram count per sink event), the source
    and the sink as labels, the objective's gauges."""
    port = free_port()
    settings = {"metrics": {"port": port, "linger_s": 2.0}}
    with Scraper(f"http://127.0.0.1:{port}/metrics", every_s=0.2, raw=True) as scraper:
        assert simulate(tmp_path, "--objective-latency-p99-s", "0.5", settings=settings) == 0
    text = scraper.texts[-1]
    assert families(text) == FAMILIES
    assert "_created" not in text
    sample = parse(text)
    intervals = list(csv.DictReader((tmp_path / "out" / "intervals.csv").open()))
    sink = {"pipeline": "one", "sink": "sink"}
    assert value(sample, "elastream_sink_events_total", **sink) == sum(
        int(r["sink_events"]) for r in intervals
    )
    assert value(sample, "elastream_source_events_total", pipeline="one", source="src") == sum(
        int(r["input"]) for r in intervals
    )
    run = {"pipeline": "one"}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    count = value(sample, "elastream_event_latency_seconds_count", **run)
    assert count == summary["events_out"] > len(intervals)  # per event, not per interval
    mean_s = value(sample, "elastream_event_latency_seconds_sum", **run) / count
    assert mean_s == pytest.approx(summary["latency_ms_mean"] / 1000, abs=0.001)  # 1-ms bins
    bound = {"pipeline": "one", "statistic": "p99"}
    assert value(sample, "elastream_objective_latency_seconds", **bound) == 0.5
    last = intervals[-1]
    assert value(sample, "elastream_objective_met", **run) == float(last["objective_met"] or 1)
    p99 = value(sample, "elastream_interval_latency_p99_seconds", **run)
    judged = [r for r in intervals if r["latency_ms_p99"]]
    assert p99 == pytest.approx(float(judged[-1]["latency_ms_p99"]) / 1000)


def test_port_zero_serves_nothing_and_the_flag_wins_over_the_file(tmp_path, caplog):
    port = free_port()
    caplog.set_level("INFO")
    with Scraper(f"http://127.0.0.1:{port}/metrics", every_s=0.1) as scraper:
        settings = {"metrics": {"port": port, "linger_s": 1.0}}
        assert simulate(tmp_path, "--no-metrics", settings=settings) == 0
    assert scraper.scrapes == [] and scraper.refused > 0
    assert "/metrics" not in caplog.text


def test_the_default_port_when_taken_gives_way_to_a_free_one(tmp_path, caplog):
    caplog.set_level("INFO")
    with socket.socket() as holder:
        with contextlib.suppress(OSError):  # someone else holds it already: the same case
            holder.bind(("127.0.0.1", DEFAULT_METRICS_PORT))
        holder.listen()
        assert simulate(tmp_path) == 0
    assert f"port {DEFAULT_METRICS_PORT} is taken" in caplog.text
    served = [line for line in caplog.text.splitlines() if "metrics: http://" in line]
    assert served and f":{DEFAULT_METRICS_PORT}/" not in served[0]


def test_an_explicit_busy_port_is_an_error(tmp_path, capsys):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert simulate(tmp_path, "--metrics-port", str(port)) == 2
    error = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in error


def test_every_decision_that_changes_replicas_is_one_log_line_with_its_reason(tmp_path, caplog):
    caplog.set_level("INFO", logger="elastream.decisions")
    assert simulate(tmp_path, "--no-metrics") == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "elastream.decisions"]
    rows = list(csv.DictReader((tmp_path / "out" / "timeseries.csv").open()))
    changed = [r for r in rows if r["target"] not in ("", r["replicas"])]
    assert changed, "the threshold policy scales this pipeline at least once"
    assert len(lines) == len(changed)
    for line, row in zip(lines, changed, strict=True):
        assert f"op {row['replicas']}->{row['target']} ({row['reason']})" in line


def test_json_log_lines_are_json_and_mask_passwords():
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    try:
        logging.getLogger("elastream.test").info("queues at %s", "redis://app:s3cret@h:6379/0")
    finally:
        configure_logging("warning", "text")
    entry = json.loads(stream.getvalue().strip())
    assert entry["level"] == "info" and entry["logger"] == "elastream.test"
    assert entry["message"] == "queues at redis://app:***@h:6379/0"


def test_failures_restarts_backlog_and_hosts_count_while_the_run_goes():
    """Fed snapshots (the Spark run in test_ops_spark.py feeds real ones): every count is live,
    and the end-of-run totals only add what no interval reported."""
    metrics = RunMetrics(pipeline_from_dict(PIPELINE, "test"))
    host = HostClock("h1", True, 1, 30.0)
    first = replace(stats("op", received=10, processed=8), failed=2)
    metrics(
        replace(snapshot(first, t=2.0), source_backlog=(("src", 40),), hosts=(host,),
                query_restarts=1),
        Decision.of({"op": 1}),
    )  # fmt: skip
    sample = parse(metrics.exposition().decode())
    op, run = {"pipeline": "one", "operator": "op"}, {"pipeline": "one"}
    assert value(sample, "elastream_operator_events_failed_total", **op) == 2
    assert value(sample, "elastream_events_failed_total", **run) == 2
    assert value(sample, "elastream_query_restarts_total", **run) == 1
    assert value(sample, "elastream_source_backlog_events", **run, source="src") == 40
    assert value(sample, "elastream_hosts_leased_total", **run) == 1
    second = replace(stats("op", received=5, processed=4), failed=1)
    hosts = (host, HostClock("h2", False, 1, 60.0))
    metrics(
        replace(snapshot(second, t=4.0), source_backlog=(("src", 7),), hosts=hosts,
                host_re_leases=1),
        Decision.of({"op": 1}),
    )  # fmt: skip
    sample = parse(metrics.exposition().decode())
    assert value(sample, "elastream_operator_events_failed_total", **op) == 3
    assert value(sample, "elastream_source_backlog_events", **run, source="src") == 7
    assert value(sample, "elastream_hosts_leased_total", **run) == 2  # h1 counted once
    assert value(sample, "elastream_host_re_leases_total", **run) == 1
    metrics(replace(snapshot(second, t=6.0), hosts=hosts, host_re_leases=1), Decision.of({"op": 1}))
    sample = parse(metrics.exposition().decode())
    assert value(sample, "elastream_host_re_leases_total", **run) == 1  # the run's so far: once
    totals = RunTotals(events_in=15, events_out=0, completed=12, filtered=0, dropped_timeout=0,
                       dropped_overflow=0, latency_ms_mean=None, latency_ms_p99=None, failed=4,
                       query_restarts=1, hosts_leased=3, host_re_leases=2)  # fmt: skip
    metrics.finish(totals)
    sample = parse(metrics.exposition().decode())
    assert value(sample, "elastream_events_failed_total", **run) == 4  # one after the last interval
    assert value(sample, "elastream_query_restarts_total", **run) == 1  # not counted twice
    assert value(sample, "elastream_hosts_leased_total", **run) == 3
    assert value(sample, "elastream_host_re_leases_total", **run) == 2


def test_intervals_folded_in_batches_give_the_metrics_of_one_interval_at_a_time():
    """RunMetrics takes intervals in and folds them in every FOLD_INTERVALS (or at a read):
    read after every interval or only at the end, a simulated run leaves the same metrics, live
    view and decision timeline."""
    seen: list[tuple] = []
    cfg = sim_config(policy="psps", replicas=None, interval_s=1.0, event_timeout_s=2.0)
    trace = Trace(60.0 + 50.0 * np.sin(np.arange(700) / 15.0) ** 2)
    pipeline = pipeline_from_dict(PIPELINE)
    simulate_run(pipeline, cfg, trace, EXACT, observers=[lambda *i: seen.append(i)])
    assert len(seen) > 2 * FOLD_INTERVALS + 1  # several folds, the last one partial
    each, batched = (
        RunMetrics(pipeline_from_dict(PIPELINE)),
        RunMetrics(pipeline_from_dict(PIPELINE)),
    )
    for snap, decision in seen:
        each(snap, decision)
        each.exposition()  # a read folds in what was taken in
        batched(snap, decision)

    def without_created(metrics: RunMetrics) -> list[str]:
        return [
            line for line in metrics.exposition().decode().splitlines() if "_created" not in line
        ]

    assert without_created(batched) == without_created(each)
    assert batched.state() == each.state()
    assert len(batched.state()["decisions"]) > 1


def test_a_missed_objective_at_the_pools_maximum_is_one_warning_line(caplog):
    """Missed for three intervals in a row with the waiting operator at its pool's maximum: one
    WARNING naming the bound, the measurement, the time and the operator; not again while it
    lasts; not at all while the operator could still scale."""
    from elastream.model.objective import Objective
    from elastream.runner.observability import ObjectiveWatch

    def interval(t: float, replicas: int, p99_ms: float) -> object:
        op = stats("op", replicas=replicas, pool=(1, 3), received=100, processed=60, queue=80)
        return replace(snapshot(op, t=t, interval_s=5.0), latency_ms_p99=p99_ms)

    caplog.set_level("WARNING", logger="elastream.objective")
    watch = ObjectiveWatch(Objective(latency_p99_s=2.0))
    for k in range(4):  # below the maximum: the policy may still scale
        watch(interval(5.0 * (k + 1), 2, 3000.0), Decision.of({"op": 3}))
    assert caplog.records == []
    for k in range(5):  # at the maximum, missed: warned at the third interval, once
        watch(interval(25.0 + 5.0 * k, 3, 3500.0), Decision.of({"op": 3}))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "latency objective p99 <= 2 s missed for 15 s (measured 3.50 s) while op ran at the "
        "maximum replicas of its pool: raise replicas.max there, or the objective"
    ]
    watch(interval(60.0, 3, 1000.0), Decision.of({"op": 3}))  # met: a new stretch may warn again
    for k in range(3):
        watch(interval(65.0 + 5.0 * k, 3, 2500.0), Decision.of({"op": 3}))
    assert len(caplog.records) == 2
