"""benchmarks/plain_vs_elastream.py, small: every case (plain PySpark with batches and per row,
elastream vectorized and per event) runs in its own process over one generated file set, each
output holds every input row once (the script checks it and exits 1 otherwise), and the table
and the ratios name every case. The figures themselves are not asserted."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.spark

CASES = ("plain-20", "plain-default", "plain-rows-20", "elastream", "elastream-per-event")


def test_every_case_runs_and_delivers_every_row_once(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks/plain_vs_elastream.py"), "--quiet"]
    cmd += ["--events", "20000", "--files", "10", "--repeat", "1", "--dir", str(tmp_path)]
    cmd += ["--timeout", "300"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    print(done.stdout, done.stderr[-3000:])
    assert done.returncode == 0, done.stdout[-5000:]
    lines = done.stdout.splitlines()
    rule = next(k for k, line in enumerate(lines) if line.startswith("|--"))
    columns = lines[rule - 1]  # the table's header row
    assert [cell.strip() for cell in columns.strip("|").split("|")[1:]] == list(CASES)
    [verdicts] = [line for line in lines if line.startswith("| output")]
    assert verdicts.count("complete, once") == len(CASES)
    ratios = [line for line in lines if "÷" in line or "−" in line]
    assert any(line.startswith("vectorized steady rate, elastream ÷ plain-20") for line in ratios)
    assert any(line.startswith("per-event steady rate, elastream-per-event ÷ plain-rows-20")
               for line in ratios)  # fmt: skip
