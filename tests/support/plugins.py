"""The test plugins (tests/plugins): a policy installed the way a user's package installs one."""

import csv
import os
import sys
from pathlib import Path

from support.paths import PIPELINES, ROOT

PLUGINS = ROOT / "tests" / "plugins"
CAUTIOUS = PLUGINS / "cautious"  # entry point elastream.policies: cautious
BROKEN = PLUGINS / "broken"  # entry point elastream.test_broken: broken, a module that is missing
PIPELINE = PIPELINES / "filter3.yaml"  # every operator's pool: 1..4
EXTRA = 2  # the run's policy option: each operator at 1 + 2 replicas


def with_plugin(folder: Path) -> dict[str, str]:
    """The environment of a process in which the plugin in `folder` is installed."""
    path = os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def cautious_run(out: Path, engine: str, trace: str) -> list[str]:
    """`elastream run` of filter3 with the cautious policy (extra = EXTRA) on `engine`."""
    settings = out.parent / f"{out.name}.yaml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(f"policy: cautious\npolicy_options: {{extra: {EXTRA}}}\n")
    return [sys.executable, "-m", "elastream.cli", "run", str(PIPELINE), "--engine", engine,
            "--trace", trace, "--interval-s", "2", "--config", str(settings), "--out", str(out),
            "--quiet"]  # fmt: skip


def assert_cautious(out: Path) -> None:
    """Every decision the run wrote is the plugin's: each operator at 1 + EXTRA, its reason."""
    rows = list(csv.DictReader((out / "timeseries.csv").open()))
    assert rows
    for row in rows:
        assert int(row["target"]) == 1 + EXTRA, row
        assert row["reason"] == f"cautious: pool minimum + {EXTRA}", row
    late = [r for r in rows if float(r["t"]) > 2 * float(rows[0]["t"])]  # after the first change
    assert late and all(int(r["replicas"]) == 1 + EXTRA for r in late)
