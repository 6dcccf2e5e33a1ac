"""Packaging: the version from the package metadata, optional extras that fail naming
themselves, and one default history path for the commands that write and read it."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest
from support.paths import ROOT

from elastream.base.extras import MissingExtraError, require
from elastream.cli import build_parser, main
from elastream.cli._common import default_history
from elastream.config import make_config


def test_version_comes_from_the_package_metadata(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"elastream {metadata.version('elastream')}"


def test_a_missing_optional_dependency_names_its_extra():
    with pytest.raises(MissingExtraError, match=r"pip install 'elastream\[forecast\]'"):
        require("elastream_no_such_module", extra="forecast")
    with pytest.raises(ValueError, match="unknown extra"):
        require("json", extra="nope")
    assert require("json", extra="all").__name__ == "json"


def test_placement_without_highspy_fails_naming_the_placement_extra(monkeypatch):
    from support.placement import knapsack

    monkeypatch.setitem(sys.modules, "highspy", None)  # as if not installed
    m, _ = knapsack()
    with pytest.raises(MissingExtraError, match=r"elastream\[placement\]"):
        m.solve(1.0, 0.0)


def test_the_redis_store_without_redis_names_the_redis_extra(monkeypatch):
    from elastream.runtime.queues.redis_streams import RedisQueueStore

    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(MissingExtraError, match=r"elastream\[redis\]"):
        RedisQueueStore("redis://127.0.0.1:1/0")


def test_serve_without_fastapi_fails_in_one_line_naming_the_service_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "fastapi", None)
    assert main(["serve"]) == 2
    assert "pip install 'elastream[service]'" in capsys.readouterr().err


def test_every_command_reads_the_history_where_runs_write_it():
    written = make_config().history_path()
    assert default_history() == written
    sub = build_parser()._subparsers._group_actions[0].choices
    for command in ("serve", "whatif"):
        history = next(a for a in sub[command]._actions if a.dest == "history")
        assert history.default == written, command


def test_plan_json_keeps_the_solvers_banner_off_stdout():
    root = ROOT
    infra = root / "docs/placement/tweets-plan.yaml"
    cmd = [sys.executable, "-m", "elastream.cli", "plan",
           str(root / "src/elastream/examples/tweets.yaml"),
           "--infra", str(infra), "--weights", "r=1", "--json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), dict)  # stdout is the JSON and nothing else


EXTRAS_MODULES = ("redis", "matplotlib", "fastapi", "uvicorn", "highspy", "statsmodels")


def test_the_core_imports_the_spark_run_path_without_any_extra():
    """A bare install (no extras) runs a pipeline on Spark over SQLite: nothing on that path
    imports an extra's package at module level."""
    blocked = "; ".join(f"sys.modules[{m!r}] = None" for m in EXTRAS_MODULES)
    code = (
        f"import sys; {blocked}\n"
        "import elastream.cli.run, elastream.cli.check, elastream.runner.session\n"
        "import elastream.runtime.spark.runtime, elastream.report.files\n"
        "print('imported')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "imported", done.stderr


def test_a_redis_source_without_redis_names_the_redis_extra(monkeypatch):
    from elastream.model.pipeline import pipeline_from_dict
    from elastream.runtime.spark.ingest import check_sources

    monkeypatch.setitem(sys.modules, "redis", None)
    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "clicks", "kind": "redis", "url": "redis://x/0", "stream": "c"}],
            "operators": [{"name": "o", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [{"name": "k"}],
            "streams": [{"from": "clicks", "to": "o"}, {"from": "o", "to": "k"}],
        }
    )
    with pytest.raises(MissingExtraError, match=r"^source 'clicks' needs .*'elastream\[redis\]'$"):
        check_sources(pipeline)


def test_a_run_without_matplotlib_writes_its_report_with_its_figures(tmp_path, monkeypatch):
    import elastream
    from elastream.cli.demo import demo_pipeline_path

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    done = elastream.simulate(demo_pipeline_path(), duration=10, out=tmp_path / "o")
    report = done.outputs["report"].read_text()
    assert report.count("<figure id='plot-") == 4 and "<polyline" in report


def test_a_trace_plot_without_matplotlib_names_the_plots_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = main(["trace", "constant:rate=5,duration=60", "--plot", str(tmp_path / "t.png")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'elastream[plots]'" in err[0], err
