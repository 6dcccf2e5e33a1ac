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
