"""The architecture holds: layers point down only (import-linter contracts in pyproject.toml,
shown to fail on a deliberately wrong import), and every setting is described."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel
from support.paths import ROOT

from elastream.base.settings import undescribed
from elastream.config import RunConfig
from elastream.control.policies import POLICIES
from elastream.experiments.bench.scenario import BenchFile
from elastream.model.pipeline import Pipeline
from elastream.runtime.sim.settings import SimSettings

LINT = Path(sys.executable).with_name("lint-imports")


def lint(src: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the project's contracts over the package found under `src`."""
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the packages, to break on purpose."""
    for package in ("elastream", "reproductions"):
        shutil.copytree(ROOT / "src" / package, tmp_path / package)
    return tmp_path


def test_the_contracts_hold_on_the_tree():
    result = lint(ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("model/snapshot.py", "import elastream.runtime.sim.simulator", "Layers point down only"),
        ("control/guards.py", "import time", "Pure packages import no engine"),
        ("runtime/sim/ledger.py", "import elastream.runtime.spark.task", "engines do not know"),
        ("examples/synthetic.py", "import elastream.runtime.queues", "Example applications"),
        ("decentral/node.py", "import asyncio", "Pure packages import no engine"),
        ("placement/yaml_io.py", "import sqlite3", "Pure packages import no engine"),
        ("control/flow.py", "import elastream.runtime.tcp.host", "Pure packages import no engine"),
        ("placement/heuristic.py", "import reproductions.odrp.debs", "does not import the papers"),
    ],
)
def test_a_wrong_import_breaks_the_build(tree, module, line, contract):
    path = tree / "elastream" / module
    path.write_text(path.read_text() + f"\n{line}  # deliberately wrong\n")
    result = lint(tree)
    assert result.returncode != 0
    assert f"{contract}" in result.stdout and "BROKEN" in result.stdout


def settings_models() -> list[type[BaseModel]]:
    configs = [POLICIES.get(name).config_type for name in POLICIES.names()]
    return [RunConfig, SimSettings, Pipeline, BenchFile, *configs]


def test_every_setting_has_a_description():
    missing = {model.__name__: undescribed(model) for model in settings_models()}
    assert {name: fields for name, fields in missing.items() if fields} == {}


def test_no_test_module_imports_another():
    """Shared fixtures and helpers live in tests/support; no test module imports a peer."""
    peer = re.compile(r"^\s*(?:from|import)\s+(test_\w+)", re.M)
    found = {
        str(p.relative_to(ROOT)): peer.findall(p.read_text())
        for p in (ROOT / "tests").rglob("*.py")
        if peer.search(p.read_text())
    }
    assert found == {}


def test_every_test_module_sits_in_a_folder_by_kind():
    kinds = {"unit", "spark", "reproduction"}
    stray = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if p.parent.name not in kinds
    ]
    assert stray == []
