"""`elastream simulate`: run options as `elastream run`, simulator options, the same outputs; and
the Python example of docs/simulator.md still runs."""

import json
import re

import pytest
import yaml
from support.paths import ROOT
from support.sim import SIM_PIPELINE as PIPELINE

from elastream.cli import main
from elastream.report import load_summary, load_timeseries


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_simulate_writes_the_run_outputs(tmp_path, capsys):
    pipeline = write(tmp_path, "p.yaml", PIPELINE)
    sim = write(tmp_path, "sim.yaml", {"measure_cpu": False, "et_noise": 0.5})
    out = tmp_path / "out"
    flags = "--duration 30 --interval-s 2 --policy static --replicas 1 --quiet"
    flags += " --sim-et-noise 0 --drain-s 0"
    code = main(
        ["simulate", str(pipeline), "--out", str(out), "--sim-config", str(sim), *flags.split()]
    )
    assert code == 0
    for name in ("summary.json", "timeseries.csv", "intervals.csv", "report.html"):
        assert (out / name).exists(), name
    summary = load_summary(out)
    printed, _ = json.JSONDecoder().raw_decode(capsys.readouterr().out)  # the headline figures
    assert printed["events_in"] == 150 * 30
    # static r=1 serves 100/s of the 150/s: about a third is still queued when the run stops
    assert 0.6 < printed["processed_ratio"] < 0.72
    assert _find(summary, "processed_ratio") == printed["processed_ratio"]
    assert load_timeseries(out)["operator"].unique().tolist() == ["op"]


def _find(document, key):
    """The value of `key` anywhere in a nested summary document."""
    if isinstance(document, dict):
        if key in document:
            return document[key]
        found = [_find(v, key) for v in document.values()]
        return next((f for f in found if f is not None), None)
    return None


def test_simulate_names_a_bad_simulator_setting(tmp_path, capsys):
    pipeline = write(tmp_path, "p.yaml", PIPELINE)
    sim = write(tmp_path, "sim.yaml", {"queue_model": "storm"})
    out = tmp_path / "o"
    code = main(["simulate", str(pipeline), "--quiet", "--out", str(out), "--sim-config", str(sim)])
    assert code == 2
    assert re.search(r"sim\.yaml: sim setting queue_model: 'storm'", capsys.readouterr().err)


def test_the_docs_python_example_runs():
    text = (ROOT / "docs" / "simulator.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/simulator.md", "exec"), {})


def test_every_run_adds_its_metrics_history_for_the_models(tmp_path):
    from elastream.history import HistoryStore, points_by_operator

    pipeline = write(tmp_path, "p.yaml", PIPELINE)
    for k in (1, 2):
        out = tmp_path / f"run{k}"
        assert main(["simulate", str(pipeline), "--quiet", "--out", str(out)]) == 0
    with HistoryStore(tmp_path / "history.sqlite") as store:  # beside the output directories
        runs = store.runs()
        first = store.rows(run_ids=[runs[0]])
        rows = store.rows()
    assert len(runs) == 2
    operators = {op["name"] for op in PIPELINE["operators"]}
    assert {row.operator for row in rows} == operators
    intervals = load_summary(tmp_path / "run1")["intervals"]
    # one row per interval and active replica of every operator
    assert len({(row.t, row.operator) for row in first}) == intervals * len(operators)
    processed = sum(row.input_rate * row.interval_s for row in first)
    series = load_timeseries(tmp_path / "run1")
    assert processed == pytest.approx(series["processed"].sum())  # the same counts, per replica
    offered = sum(row.source_rate * row.interval_s for row in first)
    assert offered == pytest.approx(series["received"].sum())  # a replica is offered arrivals
    points = [p for ps in points_by_operator(rows).values() for p in ps]
    assert len(points) == len(rows)
