"""The benchmark harness (scenario files, matrix, results, report, tables) on a fake engine."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from support.builders import linear_pipeline

from elastream.cli import bench as bench_command
from elastream.config import make_config
from elastream.control.controller import Controller
from elastream.control.mape import run_mape
from elastream.experiments.bench.metrics import sla_compliance, slowest_path_ms
from elastream.experiments.bench.outputs import read_results, write_results
from elastream.experiments.bench.report import render_report
from elastream.experiments.bench.runner import (
    SIM_BACKEND,
    Backend,
    Outcome,
    run_matrix,
    with_grouping,
)
from elastream.experiments.bench.scenario import BenchError, load_bench
from elastream.experiments.bench.tables import render_tables, update_markdown
from elastream.history import HistoryStore
from elastream.model.metrics import RunTotals
from elastream.model.pipeline import pipeline_from_dict
from elastream.model.snapshot import OperatorStats, Snapshot

# ---------------------------------------------------------------------------- a tiny fake engine


class FakeEngine:
    """A linear pipeline where each replica serves `capacity` events/s; one event's latency is
    its operator's queue wait plus service, summed along the chain."""

    features = frozenset()  # no optional feature

    def __init__(self, pipeline, config, trace, capacity):
        self.pipeline, self.td, self.capacity = pipeline, config.interval_s, capacity
        self.rates = trace.per_second()
        self.t = 0.0
        self.replicas = {op.name: op.replicas.start for op in pipeline.operators}
        self.queues = dict.fromkeys(self.replicas, 0.0)
        self.latencies: list[float] = []
        self.events_in = 0

    def start(self):
        pass

    def stop(self):
        pass

    def finished(self):
        return self.t >= len(self.rates)

    def enact(self, decision):
        self.replicas.update(decision.as_dict())

    def collect(self):
        a, b = int(self.t), int(self.t + self.td)
        flow = round(float(self.rates[a:b].sum()))
        self.events_in += flow
        source = self.pipeline.source_names[0]
        stats, latency, pred = [], 0.0, source
        for name in self.pipeline.topological_order:
            r, queued = self.replicas[name], self.queues[name]
            serve = r * self.capacity * self.td
            done = int(min(queued + flow, serve))
            latency += 1000.0 * (queued / (r * self.capacity) + 1 / self.capacity)
            self.queues[name] = queued + flow - done
            stats.append(
                OperatorStats(
                    name,
                    r,
                    1,
                    8,
                    flow,
                    ((pred, flow),),
                    done,
                    done,
                    int(self.queues[name]),
                    1 / self.capacity,
                    done / self.capacity,
                )
            )
            flow, pred = done, name
        self.latencies += [latency] * flow
        self.t += self.td
        return Snapshot(
            self.t,
            self.td,
            ((source, stats[0].received),),
            tuple(stats),
            flow,
            flow,
            latency if flow else None,
        )

    def totals(self):
        done = len(self.latencies)
        lat = np.asarray(self.latencies) if done else None
        return RunTotals(
            self.events_in,
            done,
            done,
            0,
            0,
            0,
            None if lat is None else float(lat.mean()),
            None if lat is None else float(np.percentile(lat, 99)),
        )


def fake_run(pipeline, config, trace, sim, observers=()):
    if sim.get("fail"):
        raise RuntimeError("the fake engine was told to fail")
    engine = FakeEngine(pipeline, config, trace, sim.get("capacity", 10.0))
    controller = Controller.build(config.policy, config.effective_policy_options(), config.guards)
    result = run_mape(engine, controller, observers=observers)
    return Outcome(result, tuple(Counter(engine.latencies).items()))


def fake_check(sim):
    unknown = set(sim) - {"capacity", "fail"}
    if unknown:
        raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")


FAKE = Backend("fake", fake_run, fake_check)

# ---------------------------------------------------------------------------- scenario files

SCENARIO = """\
scenarios:
  - name: steps
    pipeline: pipe.yaml
    trace: "twolevel:low=2,high=6,unit=10,hold=30,duration=120"
    run: {interval_s: 5, drain_s: 0}
    sim: {capacity: 10}
    slo_ms: 250
    grid: {interval_s: [5, 10]}
    policies:
      - psps
      - policy: static
        label: storm
        grid: {replicas: [1, 4]}
tables:
  - id: T1
    title: static against psps
    scenario: steps
    rows:
      - {label: "PSPS", select: {policy: psps, interval_s: 5}, paper: [0.5, 0.1, 0.99, 100.0]}
      - {label: "r = 4", select: {policy: storm, replicas: 4, interval_s: 10}}
"""


def write_files(tmp_path: Path, text: str = SCENARIO) -> Path:
    (tmp_path / "pipe.yaml").write_text(yaml.safe_dump(linear_pipeline(2, pool=(1, 8))))
    path = tmp_path / "bench.yaml"
    path.write_text(text)
    return path


def test_matrix_expansion_crosses_scenario_and_policy_grids(tmp_path):
    _, specs = load_bench(write_files(tmp_path))
    ids = [s.run_id for s in specs]
    # psps: interval_s ∈ {5, 10}; storm: interval_s × replicas = 4 runs.
    assert ids == [
        "steps/psps[interval_s=5]",
        "steps/psps[interval_s=10]",
        "steps/storm[interval_s=5,replicas=1]",
        "steps/storm[interval_s=5,replicas=4]",
        "steps/storm[interval_s=10,replicas=1]",
        "steps/storm[interval_s=10,replicas=4]",
    ]
    storm = specs[3]
    assert dict(storm.run)["replicas"] == 4 and dict(storm.run)["interval_s"] == 5
    assert dict(storm.run)["policy"] == "static"
    assert storm.pipeline == str(tmp_path / "pipe.yaml")  # found beside the scenario file


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "grid: {interval_s: [5, 10]}",
            "grid: {interval: [5, 10]}",
            r"bench.yaml:10: scenario 'steps'.*'interval'",
        ),
        (
            "grid: {interval_s: [5, 10]}",
            "grid: {grouping: [fastest]}",
            r"unknown grouping 'fastest'",
        ),
        (
            "grid: {interval_s: [5, 10]}",
            "grid: {interval_s: []}",
            r"bench.yaml:8: scenarios.0.grid",
        ),
        ("pipeline: pipe.yaml", "pipeline: nowhere.yaml", r"bench.yaml:3: pipeline .*nowhere"),
        (
            "run: {interval_s: 5, drain_s: 0}",
            "run: {interval_s: 5, drain_s: 0}\n    peak_rate: -1",
            r":6: .*peak",
        ),
        ("- psps", "- psps\n      - psps", r"'steps/psps\[interval_s=5\]' appears twice"),
        ("select: {policy: psps", "select: {policy: psps", None),
        ("scenario: steps\n    rows", "scenario: step\n    rows", r"unknown scenario 'step'"),
        ("    grid: {interval_s", "  grid: {interval_s", r"bench.yaml:8: not valid YAML"),
    ],
)
def test_scenario_errors_name_file_line_and_setting(tmp_path, old, new, message):
    assert old in SCENARIO
    path = write_files(tmp_path, SCENARIO.replace(old, new, 1))
    if message is None:  # the unchanged file is fine
        load_bench(path)
        return
    with pytest.raises(BenchError, match=message):
        load_bench(path)


def test_bad_run_and_sim_settings_fail_before_any_run(tmp_path):
    text = SCENARIO.replace(
        "run: {interval_s: 5, drain_s: 0}", "run: {interval_s: 5, queue_capacity: 0}"
    )
    specs = load_bench(write_files(tmp_path, text))[1]
    with pytest.raises(
        BenchError, match=r"bench.yaml:10: .*steps/psps\[interval_s=5\]: .*queue_capacity"
    ):
        run_matrix(specs, FAKE, jobs=1)
    text = SCENARIO.replace("twolevel:low", "nosuchtrace:low")
    with pytest.raises(BenchError, match=r"bench.yaml:10: .*unknown generator 'nosuchtrace'"):
        run_matrix(load_bench(write_files(tmp_path, text))[1], FAKE, jobs=1)
    text = SCENARIO.replace("sim: {capacity: 10}", "sim: {capacity: 10, speed: 2}")
    with pytest.raises(BenchError, match=r"sim settings: .*'speed'"):
        run_matrix(load_bench(write_files(tmp_path, text))[1], FAKE, jobs=1)


# ---------------------------------------------------------------------------- running


@pytest.fixture
def records(tmp_path):
    _, specs = load_bench(write_files(tmp_path))
    return run_matrix(specs, FAKE, jobs=2)


def test_rows_carry_identity_metrics_and_sla(records, tmp_path):
    results, series = write_results(records, tmp_path / "out")
    assert list(results["run_id"]) == [r.row["run_id"] for r in records]  # spec order kept
    assert (results["error"] == "").all()
    assert list(results.columns[:5]) == ["run_id", "scenario", "policy", "policy_name", "params"]
    storm1 = results[results["run_id"] == "steps/storm[interval_s=5,replicas=1]"].iloc[0]
    storm4 = results[results["run_id"] == "steps/storm[interval_s=5,replicas=4]"].iloc[0]
    # r = 1 serves 10/s against 20-60/s: it falls behind; r = 4 (40/s per operator) mostly keeps up.
    assert storm1["processed_ratio"] < storm4["processed_ratio"] <= 1.0
    saved = storm1["replica_seconds_saved_ratio"]
    assert saved == pytest.approx(1 - 2 / 16)  # 2 replicas of a pool of 16
    assert storm1["sla_5x"] < storm4["sla_5x"]
    # With r = 4 the low-load intervals complete within 2 × 100 ms < 250 ms, the rest queue.
    assert storm1["slo_ms"] == 250.0
    assert 0 < storm4["sla_1x"] <= storm4["sla_2x"] <= storm4["sla_5x"] < 1
    assert set(series["run_id"]) == set(results["run_id"])
    again = read_results(tmp_path / "out")
    assert list(again["run_id"]) == list(results["run_id"])


def test_a_failing_run_becomes_an_error_row(tmp_path):
    text = SCENARIO.replace("      - psps\n", "      - {policy: psps, sim: {fail: true}}\n")
    records = run_matrix(load_bench(write_files(tmp_path, text))[1], FAKE, jobs=1)
    failed = [r for r in records if r.failed]
    assert [r.row["run_id"] for r in failed] == [
        "steps/psps[interval_s=5]",
        "steps/psps[interval_s=10]",
    ]
    assert "told to fail" in failed[0].row["error"]
    assert len(records) == 6


def test_report_is_self_contained(records, tmp_path):
    results, series = write_results(records, tmp_path / "out")
    html = render_report(results, series, title="t")
    assert html.count("data:image/png;base64,") == 2  # metrics bars + time series
    assert "http://" not in html and "https://" not in html
    for run_id in results["run_id"]:
        policy = run_id.split("/")[1].split("[")[0]
        assert policy in html


def test_paper_tables_rewrite_only_their_blocks(records, tmp_path):
    bench, _ = load_bench(write_files(tmp_path))
    results, _ = write_results(records, tmp_path / "out")
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n<!-- bench-table: T1 -->\nold\n<!-- /bench-table -->\noutro\n")
    assert update_markdown(doc, render_tables(bench.tables, results)) == ["T1"]
    text = doc.read_text()
    assert text.startswith("intro\n<!-- bench-table: T1 -->\n| ") and text.endswith("outro\n")
    assert "old" not in text
    psps = results[results["run_id"] == "steps/psps[interval_s=5]"].iloc[0]
    row = next(line for line in text.splitlines() if line.startswith("| PSPS"))
    assert f"{psps['replica_seconds_saved_ratio']:.4f}" in row and "| 0.5000 |" in row
    doc.write_text("no markers\n")
    with pytest.raises(BenchError, match="no '<!-- bench-table: ID -->' block for T1"):
        update_markdown(doc, render_tables(bench.tables, results))


def test_table_selector_must_match_one_run(records, tmp_path):
    text = SCENARIO.replace(
        "select: {policy: storm, replicas: 4, interval_s: 10}", "select: {interval_s: 10}"
    )
    bench, _ = load_bench(write_files(tmp_path, text))
    results = pd.DataFrame([r.row for r in records])
    with pytest.raises(BenchError, match=r"table T1 row 2: .* matches 3 runs"):
        render_tables(bench.tables, results)


def test_command_runs_writes_and_rewrites_markdown(tmp_path):
    path = write_files(tmp_path)
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- bench-table: T1 -->\n<!-- /bench-table -->\n")
    args = argparse.Namespace(
        scenarios=path,
        out=tmp_path / "out",
        jobs=1,
        data_dir=None,
        only=None,
        label=["psps", "storm"],
        markdown=doc,
        from_results=False,
        history=None,
        no_history=False,
        quiet=True,
    )
    assert bench_command.run(args, backend=FAKE) == 0
    assert (tmp_path / "out" / "report.html").is_file()
    results = read_results(tmp_path / "out" / "results.csv")
    with HistoryStore(tmp_path / "out" / "history.sqlite") as store:  # every run recorded
        assert store.runs() == sorted(results["run_id"])
        rows = store.rows(run_ids=[results["run_id"].iloc[0]])
    assert {r.operator for r in rows} == {"op1", "op2"}
    assert "| PSPS |" in doc.read_text()
    args.from_results, args.label = True, ["nope"]  # --from-results ignores the selection
    assert bench_command.run(args, backend=FAKE) == 0
    args.from_results = False
    with pytest.raises(BenchError, match="unknown policy label 'nope'"):
        bench_command.run(args, backend=FAKE)


# ---------------------------------------------------------------------------- metrics by hand


def test_sla_compliance_counts_drops_as_violations():
    latencies = np.array([10.0, 15.0, 20.0, 45.0, 120.0])
    counts = np.array([2, 1, 1, 1, 1])
    # SLO 10 ms, 6 measured + 4 lost = 10 events: ≤10 ms: 2, ≤20 ms: 4, ≤50 ms: 5.
    assert sla_compliance(latencies, counts, 4, 10.0) == {1: 0.2, 2: 0.4, 5: 0.5}
    empty = np.array([])
    assert sla_compliance(empty, empty, 0, 10.0) == {1: None, 2: None, 5: None}


def test_slowest_path_follows_the_slowest_branch():
    data = linear_pipeline(1)
    data["operators"] = [
        {
            "name": "a",
            "function": "elastream.examples.synthetic:split_by_value",
            "service_time_ms": 5,
        },
        {
            "name": "b",
            "function": "elastream.examples.synthetic:passthrough",
            "service_time_ms": 25,
        },
        {"name": "c", "function": "elastream.examples.synthetic:passthrough", "et_ms": 3},
        {
            "name": "d",
            "function": "elastream.examples.synthetic:passthrough",
            "service_time_ms": 10,
        },
    ]
    data["streams"] = [
        {"from": "src", "to": "a"},
        {"from": "a", "to": "b", "name": "low"},
        {"from": "a", "to": "c", "name": "high"},
        {"from": "b", "to": "d"},
        {"from": "c", "to": "d"},
        {"from": "d", "to": "sink"},
    ]
    # a -> b -> d = 5 + 25 + 10 = 40 ms beats a -> c -> d = 5 + 3 + 10 = 18 ms.
    assert slowest_path_ms(pipeline_from_dict(data)) == 40.0


def test_tables_without_paper_figures_show_ours_with_extra_columns(records, tmp_path):
    text = SCENARIO.replace(", paper: [0.5, 0.1, 0.99, 100.0]", "")
    bench, _ = load_bench(write_files(tmp_path, text))
    results = pd.DataFrame([r.row for r in records])
    table = render_tables(bench.tables, results)["T1"]
    head = table.splitlines()[0]
    assert "paper" not in head and "p99 (ms)" in head and "SLA 5×" in head
    storm = results[results["run_id"] == "steps/storm[interval_s=10,replicas=4]"].iloc[0]
    assert f"| r = 4 | {storm['replica_seconds_saved_ratio']:.4f} |" in table


def test_static_runs_start_at_their_r_and_grouping_overrides_stateless_operators(tmp_path):
    pipeline = pipeline_from_dict(linear_pipeline(2, pool=(1, 8)))
    config = make_config(policy="static", replicas=4, engine="sim")
    started = config.starting_pipeline(pipeline)
    assert [op.replicas.start for op in started.operators] == [4, 4]
    psps = make_config(policy="psps", engine="sim")
    assert psps.starting_pipeline(pipeline) is pipeline
    shuffled = with_grouping(pipeline, "shuffle")
    assert {op.grouping.value for op in shuffled.operators} == {"shuffle"}


def test_sim_backend_measures_sla_from_the_simulator_ledger(tmp_path):
    data = linear_pipeline(2, pool=(1, 2))
    for op in data["operators"]:
        op["service_time_ms"] = 10
    pipe = tmp_path / "pipe.yaml"
    pipe.write_text(yaml.safe_dump(data))
    scenario = tmp_path / "sim.yaml"
    scenario.write_text(
        "scenarios:\n  - name: tiny\n    pipeline: pipe.yaml\n"
        "    trace: 'constant:rate=20,duration=20'\n    run: {interval_s: 5, drain_s: 10}\n"
        "    sim: {measure_cpu: false, sample_events: 50}\n    policies: [psps]\n"
    )
    (record,) = run_matrix(load_bench(scenario)[1], SIM_BACKEND, jobs=1)
    row = record.row
    assert row["error"] == "", row["error"]
    # 20 events/s at 10 ms per event per operator: never queued beyond a step, so all events
    # complete, the SLO is the 20 ms path and the relaxed 5× (100 ms = one 0.1 s step) holds.
    assert row["slo_ms"] == 20.0
    assert row["processed_ratio"] == 1.0
    assert 0 < row["sla_1x"] <= row["sla_5x"] == 1.0


def test_markdown_leaves_the_blocks_of_other_scenario_files_alone(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- bench-table: other -->\nkept\n<!-- /bench-table -->\n"
        "<!-- bench-table: T1 -->\nold\n<!-- /bench-table -->\n"
    )
    assert update_markdown(doc, {"T1": "new\n"}) == ["T1"]
    assert doc.read_text() == (
        "<!-- bench-table: other -->\nkept\n<!-- /bench-table -->\n"
        "<!-- bench-table: T1 -->\nnew\n<!-- /bench-table -->\n"
    )
