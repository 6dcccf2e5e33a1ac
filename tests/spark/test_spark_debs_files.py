"""DEBS 2015 Query 1 end to end on files, on Spark (docs/tutorial.md): trip files dropped into a
directory at a slow-fast-slow pace, read by a `files` source, the top-10 routes written as
Parquet by a `files` sink; the Parquet read back with plain PySpark equals the pandas batch
computation update by update, the replicas having followed the load (at least 2 changes, no
query restarted)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from itertools import pairwise

import pandas as pd
import pytest
from support.debs import TRIPS, needs_trips
from support.paths import ROOT

from elastream.examples.debs_batch import batch_top10

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.alone]


def script():
    spec = importlib.util.spec_from_file_location("debs_files", ROOT / "benchmarks/debs_files.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_trips
def test_files_in_parquet_out_equal_the_batch_computation_with_replicas_following_the_load(
    tmp_path,
):
    rows = 3000
    cmd = [sys.executable, str(ROOT / "benchmarks/debs_files.py"), "--run", "--dir", str(tmp_path)]
    cmd += ["--trips", str(TRIPS), "--rows", str(rows), "--pace", "8:40,12:160,0:40"]
    # the last file lands about 70 s after the start; the run ends 60 s after Spark's start-up
    cmd += ["--interval-s", "2", "--duration", "60", "--lead", "15"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    print(done.stdout, done.stderr[-3000:])
    got = script().read_updates(tmp_path / "top10")
    assert got == batch_top10(TRIPS, rows)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["query_restarts"] == 0
    series = pd.read_csv(tmp_path / "run" / "timeseries.csv")
    counts = series[series["operator"] == "route_count"]["replicas"].tolist()
    changes = sum(1 for a, b in pairwise(counts) if a != b)
    assert changes >= 2 and max(counts) >= 2, counts  # up with the fast phase, down after
    assert done.returncode == 0
