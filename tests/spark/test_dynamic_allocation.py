"""benchmarks/dynamic_allocation.py end to end, CI-sized (`--minutes 1`): it starts a standalone
cluster, runs the same file stream through plain Structured Streaming with Spark's dynamic
allocation and through elastream leasing the executors, exits 0 (every row out exactly once on
both sides, both drivers stopped cleanly) and prints both sides in one table; the cluster it
started is stopped at the end. The figures themselves are not checked here."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.spark


def test_both_sides_run_on_one_cluster_and_print_one_table(tmp_path):
    out = tmp_path / "dynalloc"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/dynamic_allocation.py"), "--minutes", "1",
         "--drain-timeout", "120", "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| ") and "spark" in line)
    assert [cell.strip() for cell in header.strip("|").split("|")][1:] == ["spark", "elastream"]
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ")}
    for label in ("executor-seconds held", "p99 latency, s", "rows in / out", "exactly once"):
        assert label in rows, done.stdout
    assert rows["exactly once"].count("every row once") == 2, rows["exactly once"]
    assert any(line.startswith("executor-seconds, elastream / spark:") for line in lines)
    assert not (out / "cluster" / "cluster.json").exists()  # `cluster down` ran
