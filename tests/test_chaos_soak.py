"""The chaos soak, CI-sized: a Redis-in, keyed-count, Redis-out pipeline on Redis queues (local
master) through a handful of overlapping faults (a Python worker and a redis-server killed
together, the driver SIGKILLed and a plan-time helper killed while it resumes, a SIGSTOP past a
timeout, a full checkpoint disk when a tmpfs can be mounted): nothing lost, nothing twice, the
keyed state equal to a recount of the delivered events, the summary equal to the audit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from redis_server import require_redis_server

pytestmark = pytest.mark.spark
SOAK = Path(__file__).resolve().parents[1] / "benchmarks" / "chaos_soak.py"
# (s since the load began, kind): pairs a few seconds apart overlap on purpose
SCHEDULE = (
    "30:kill_python_worker",
    "32:restart_redis",
    "48:kill_driver_resume",
    "50:kill_plan_helper",  # waits for the resumed driver's helper, then kills it
    "75:pause",
    "78:disk_full",
)


def load_soak():
    spec = importlib.util.spec_from_file_location("chaos_soak", SOAK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_overlapping_faults_lose_nothing_duplicate_nothing_and_keep_state_exact(tmp_path):
    require_redis_server()
    soak = load_soak()
    args = ["--minutes", "1.75", "--seed", "3", "--rate-min", "5", "--rate-max", "30"]
    args += ["--period-s", "60", "--pause-s", "8", "--full-s", "4", "--drain-s", "120"]
    args += ["--out", str(tmp_path / "soak"), "--schedule", *SCHEDULE]
    report = soak.main(args)
    audit = report["audit"]
    assert audit["events_in"] == audit["produced"] > 500
    assert audit["lost"] == 0, audit["lost_examples"]
    assert audit["duplicated"] == 0
    assert audit["failed"] == 0
    assert audit["state_mismatches"] == 0, audit["state_mismatch_examples"]
    assert audit["running_count_gaps"] == 0  # each key's emitted counts are 1..n
    assert audit["drained"] and audit["pending_in_store"] == 0  # no query left stuck
    assert audit["driver_stop"] == {"exit": 0, "stuck": False}
    assert audit["driver_ended_by_itself"] == []
    assert audit["summary_matches_audit"], audit["summary_vs_audit"]
    kinds = {f["kind"] for f in report["faults"]}
    expected = {k.split(":")[1] for k in SCHEDULE} - set(report["unavailable"])
    assert kinds == expected, report["faults_skipped"]
    assert report["faults_overlapping"] >= 2
    assert audit["resumes"] == 1
    assert report["ok"]
