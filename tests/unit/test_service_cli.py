"""`elastream forecast`, `whatif` and `serve`: outputs, files and named errors."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
import yaml

from elastream.cli import main
from elastream.cli.whatif import parse_parallelism
from elastream.history import HistoryStore
from reproductions.caladrius.synthetic import WORDCOUNT_GRAPH, wordcount_history


@pytest.fixture
def trace(tmp_path):
    rng = np.random.default_rng(2)
    t = np.arange(10 * 48)
    values = 100 + 40 * np.sin(2 * np.pi * t / 48) + rng.normal(0, 3, t.size)
    stamps = np.datetime64("2024-01-01T00:00") + t * np.timedelta64(30, "m")
    path = tmp_path / "seasonal.csv"
    lines = ["timestamp,value", *(f"{s},{v:.3f}" for s, v in zip(stamps, values, strict=True))]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_forecast_writes_backtest_json_and_plot(trace, tmp_path, capsys):
    out = tmp_path / "bt"
    code = main(
        ["forecast", str(trace), "--model", "summary", "--model", "seasonal-profile",
         "--history", str(3 * 86400), "--horizon", "43200", "--origins", "4", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    data = json.loads((out / "backtest.json").read_text())
    assert set(data) == {"naive", "seasonal-naive", "summary", "seasonal-profile"}  # + baselines
    for scores in data.values():
        assert set(scores) == {"mase", "skill", "smape", "coverage90"}
    assert data["seasonal-profile"]["mase"] < data["summary"]["mase"]
    assert data["naive"]["skill"] == 0.0 and data["seasonal-profile"]["skill"] > 0.5
    assert (out / "backtest.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "seasonal-profile" in printed and "MASE" in printed


def test_forecast_without_the_plots_extra_writes_its_scores_and_skips_the_default_plot(
    trace, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    out = tmp_path / "bt"
    flags = ["--model", "summary", "--history", str(3 * 86400), "--horizon", "43200",
             "--origins", "4"]  # fmt: skip
    assert main(["forecast", str(trace), *flags, "--out", str(out)]) == 0
    assert set(json.loads((out / "backtest.json").read_text())) == {
        "naive",
        "seasonal-naive",
        "summary",
    }
    assert not (out / "backtest.png").exists()
    assert "plot: skipped" in capsys.readouterr().err
    asked = tmp_path / "asked.png"
    assert main(["forecast", str(trace), *flags, "--plot", str(asked)]) == 2
    assert "pip install 'elastream[plots]'" in capsys.readouterr().err
    assert not asked.exists()


def test_forecast_errors_are_named(trace, capsys):
    flags = ["--model", "nope", "--fit-window", "1", "--horizon", "1"]
    assert main(["forecast", str(trace), *flags]) == 2
    assert "--model: unknown nope" in capsys.readouterr().err
    code = main(["forecast", str(trace), "--fit-window", str(30 * 86400), "--horizon", "3600",
                 "--no-plot"])  # fmt: skip
    assert code == 2
    assert "cannot hold" in capsys.readouterr().err


@pytest.fixture
def history(tmp_path):
    path = tmp_path / "history.db"
    with HistoryStore(path) as store:
        rates = np.linspace(30, 700, 30)
        store.record(wordcount_history("r1", rates, {"spout": 1, "splitter": 3, "counter": 4}))
    graph = tmp_path / "wordcount.yaml"
    graph.write_text(yaml.safe_dump({"name": "wordcount", **WORDCOUNT_GRAPH}))
    return path, graph


def test_whatif_prints_the_prediction(history, capsys):
    db, graph = history
    code = main(["whatif", str(graph), "--history", str(db), "--parallelism", "splitter=2",
                 "--rate", "500", "--json"])  # fmt: skip
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    split = next(c for c in res["components"] if c["name"] == "splitter")
    assert split["saturation_point"] == pytest.approx(200, rel=0.02)
    assert res["bottleneck"] == "splitter"
    code = main(["whatif", str(graph), "--history", str(db), "--parallelism", "splitter=4",
                 "--rate", "100", "--cores", "2"])  # fmt: skip
    assert code == 0
    table = capsys.readouterr().out
    assert "backpressure risk low" in table
    assert "splitter" in table


def test_whatif_at_the_forecast(history, capsys):
    db, graph = history
    # counter=10 keeps each counter replica within the rates it was measured at (never saturated)
    code = main(["whatif", str(graph), "--history", str(db), "--parallelism",
                 "splitter=8,counter=10", "--forecast-model", "summary", "--horizon", "600",
                 "--json"])  # fmt: skip
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    # summary forecast of the linear ramp 30..700: its 95 % quantile
    assert 600 < res["source_rate"] < 700
    assert res["risk"] == "low"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--parallelism", "splitter"], "--parallelism: expected op=N, got 'splitter'"),
        (["--parallelism", "ghost=2"], "unknown component(s): ghost"),
        (["--parallelism", "splitter=0"], "parallelism"),
        ([], "exactly one of --rate and --forecast-model"),
    ],
)
def test_whatif_errors_are_named(history, capsys, flags, message):
    db, graph = history
    rate = [] if not flags else ["--rate", "10"]
    assert main(["whatif", str(graph), "--history", str(db), *rate, *flags]) == 2
    assert message in capsys.readouterr().err


def test_parse_parallelism():
    assert parse_parallelism("a=3, b=2") == {"a": 3, "b": 2}
    assert parse_parallelism("") == {}


def test_serve_starts_uvicorn_on_loopback(history, tmp_path):
    db, graph = history
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = "import sys; from elastream.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            "serve",
            "--port",
            str(port),
            "--history",
            str(db),
            "--graphs",
            str(graph.parent),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                resp = httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read().decode()
                assert time.monotonic() < deadline, "serve did not come up"
                time.sleep(0.2)
        assert resp.status_code == 200
        body = {"pipeline": "wordcount", "parallelism": {"splitter": 2}, "source_rate": 50}
        assert httpx.post(f"http://127.0.0.1:{port}/predictions", json=body).status_code == 202
    finally:
        proc.terminate()
        proc.wait(timeout=10)
