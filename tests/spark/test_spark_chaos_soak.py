"""The chaos soak, CI-sized: a Redis-in, keyed-count, Redis-out pipeline on Redis queues (local
master) through a handful of faults, some active at the same instant (a Python worker killed
while redis-server is down, the driver SIGKILLed and a plan-time helper killed while it resumes,
poison events, a SIGSTOP past a timeout with the checkpoint disk full meanwhile), judged by the
soak's strict verdict (benchmarks/chaos_soak.py), whose table the test prints: every produced
event read in and delivered once (the poison ones failed, each listed), nothing foreign at the
sink, the keyed state equal to a recount of the inputs, the summary equal to the audit, every
planned fault run."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.paths import ROOT
from support.queues import alternate, events, forward, make_queues, run_share
from support.redis_server import local_redis, require_redis_server
from support.tools import REDIS, required

from elastream.config import make_config
from elastream.model.batch import offset_of
from elastream.model.events import Outcome, OutcomeKind
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.queues import RedisQueueStore
from elastream.runtime.queues.records import FailedEvent, share_commit
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads import Trace

SOAK = ROOT / "benchmarks" / "chaos_soak.py"
# (s since the load began, kind): a fault that lands while another is active overlaps it
SCHEDULE = (
    "15:restart_redis",  # down 1-4 s
    "15.5:kill_python_worker",  # while redis-server is down: two faults active at once
    "30:kill_driver_resume",
    "32:kill_plan_helper",  # waits for the resumed driver's helper, then kills it
    "42:poison",  # three events the first operator raises on
    "50:pause",  # SIGSTOP for 8 s
    "53:disk_full",  # for 4 s, during the pause: two faults active at once
)


FLAKY = "ELASTREAM_TEST_FLAKY_SINK"  # the folder the flaky sink writes its batches to


def load_soak():
    """benchmarks/chaos_soak.py as a module (registered, as its dataclasses need)."""
    if "chaos_soak" not in sys.modules:
        spec = importlib.util.spec_from_file_location("chaos_soak", SOAK)
        module = importlib.util.module_from_spec(spec)
        sys.modules["chaos_soak"] = module
        spec.loader.exec_module(module)
    return sys.modules["chaos_soak"]


@pytest.mark.spark
def test_overlapping_faults_lose_nothing_duplicate_nothing_and_keep_state_exact(tmp_path, capsys):
    require_redis_server()
    soak = load_soak()
    args = ["--minutes", "1.25", "--seed", "3", "--rate-min", "5", "--rate-max", "30"]
    args += ["--period-s", "60", "--pause-s", "8", "--full-s", "4", "--drain-s", "120"]
    args += ["--out", str(tmp_path / "soak"), "--schedule", *SCHEDULE]
    args += ["--target-wait-s", "300"]  # a resumed driver's helper, on a loaded machine
    if not required(REDIS):  # a full checkpoint disk needs root (a tmpfs): CI runs it
        args += ["--optional", "disk_full"]
    report = soak.main(args)
    with capsys.disabled():  # the verdict table in the test's output (the CI log)
        print("\n" + soak.markdown(report))
    assert report["ok"], [check for check in report["verdict"] if not check[2]]
    audit = report["audit"]
    assert audit["events_in"] == audit["produced"] > 400
    assert audit["poison_injected"] == len(audit["failed_events"]) == 3
    assert all("poison event" in f["reason"] for f in audit["failed_events"])
    assert report["instants_two_or_more_active"] >= 2, report["faults"]
    assert {f["kind"] for f in report["faults"]} >= {k.split(":")[1] for k in SCHEDULE} - {
        m["kind"] for m in report["not_run"] if not m["required"]
    }
    assert audit["resumes"] == 1


def flaky_sink(df: Any, batch_id: int) -> None:
    """A foreach_batch sink whose first non-empty batch fails once (its query stops with the
    error), then writes each batch to a file named by its id (a replayed batch rewrites it)."""
    rows = [row.asDict() for row in df.collect()]
    folder = Path(os.environ[FLAKY])
    if rows and not (folder / "failed-once").exists():
        (folder / "failed-once").touch()
        raise RuntimeError("the sink fails once")
    (folder / f"{batch_id:06d}.json").write_text(json.dumps(rows))


FLAKY_SINK = f"{__name__}:flaky_sink"


@pytest.mark.spark
def test_a_failed_sink_query_is_restarted_and_delivers_every_event_once(
    spark, tmp_path, monkeypatch
):
    """Regression (found by the soak: a SIGKILLed plan-time helper of the sink's query ended the
    run with `sink 'out' failed`): a sink query that stops with an error is restarted from its
    checkpoint like an operator's, counted in query_restarts, and delivers every event once."""
    monkeypatch.setenv(FLAKY, str(tmp_path))
    pipeline = pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate"}],
            "operators": [{"name": "op", "function": "elastream.examples.synthetic:passthrough"}],
            "sinks": [
                {"name": "fb", "kind": "foreach_batch", "function": f"{__name__}:flaky_sink"}
            ],
            "streams": [{"from": "src", "to": "op"}, {"from": "op", "to": "fb"}],
        }
    )
    config = make_config(
        interval_s=2.0, out=tmp_path / "run", drain_s=60, event_timeout_s=None, duration=6
    )
    engine = SparkEngine(pipeline, config, Trace(np.array([20.0] * 6)), spark=spark)
    engine.start()
    try:
        while not engine.finished():
            engine.collect()
        assert (tmp_path / "failed-once").exists()  # the sink's query did fail
        assert engine.queries.restarts == {"sink-fb": 1}
        ids = [
            r["_elastream_id"]
            for p in sorted(tmp_path.glob("0*.json"))
            for r in json.loads(p.read_text())
        ]
        assert len(ids) == len(set(ids)) == 120  # every event once
        assert engine.store.audit().duplicate_sink_roots == 0
    finally:
        engine.keep_session = True
        engine.stop()


def test_recovery_is_the_first_interval_back_at_the_pre_fault_rate(tmp_path):
    """The soak's recovery measure on made-up samples (no Spark): the sink delivers 10 events/s,
    nothing from t=20 (the fault at 19.5 s) until t=30, 3 events/s until t=36, then 10 again."""
    module = load_soak()
    soak = module.Soak(module.parse(["--out", str(tmp_path)]))
    delivered, samples = 0, []
    for t in range(60):
        delivered += 10 if t < 20 or t >= 36 else (0 if t < 30 else 3)
        samples.append((float(t), 10 * (t + 1), delivered))  # the load stays at 10/s
    soak.samples = samples
    fault = module.Fault(kind="kill_driver_resume", at=19.5, ended=21.0)
    soak.faults = [fault]
    soak.measure_recovery()
    assert fault.detail["pre_rate"] == 10.0
    assert fault.recovery_s == 35.0 - 21.0  # [35, 37] is the first 2 s at >= 9 events/s


def test_expiry_forgets_every_redis_sink_entry_it_counts(tmp_path):
    """Regression (found by the soak: after 30 min the audit counted 38,324 events at the sink
    for 31,785 in, each delivered once): the Redis store's expiry trimmed the sink stream with an
    approximate XTRIM, which keeps whole stream nodes, so entries already counted as expired were
    counted again by the next expiry and by the audit."""
    server = local_redis(tmp_path / "redis")
    server.start()
    try:
        store = make_queues(RedisQueueStore(f"{server.url}?prefix=expiry"))
        n, old = 300, 150  # one sink segment (one stream entry) per share: several nodes
        for i in range(n):
            if i == old:
                time.sleep(0.05)
                split = time.time()  # the first `old` shares arrived before it
            store.append("a", events(1, start=i), "src", i)
            run_share(store, store.plan_batch("a", i, i + 1, 1, alternate), 0, "out")
        before = store.audit()
        assert before.to_sink == before.sink_events == n
        assert len(store.expire(split).sink_latencies_ms) == old
        assert len(store.sink_roots("out")) == n - old  # every entry counted as expired is gone
        assert store.expire(split).sink_latencies_ms == []  # nothing counted twice
        after = store.audit()
        assert (after.to_sink, after.sink_events, after.events_in) == (n, n, n)
    finally:
        store.close()
        server.stop()


def test_overlap_is_two_faults_active_at_the_same_instant():
    """The soak's overlap (no Spark): a kill during a server's outage overlaps it, a fault
    starting after another ended does not, however soon; a third during two active: three."""
    module = load_soak()
    fault = module.Fault
    faults = [
        fault("restart_redis", at=15.0, ended=18.2),
        fault("kill_python_worker", at=15.5, ended=15.5),  # during the outage
        fault("kill_driver_resume", at=18.3, ended=19.0),  # 0.1 s after it ended: not
        fault("pause", at=50.0, ended=58.0),
        fault("disk_full", at=53.0, ended=57.0),  # during the pause
        fault("kill_python_worker", at=54.0, ended=54.0),  # during both: three at once
    ]
    assert module.overlaps(faults) == (3, 3)
    assert [f.overlaps for f in faults] == [False, True, False, False, True, True]
    assert module.overlaps([]) == (0, 0)


def test_the_verdict_fails_on_each_finding():
    """The soak's verdict (no Spark) on a clean report passes; each finding alone fails exactly
    its check: a lost event, a duplicate, a foreign root, a failed event beyond the poison ones,
    events read in short of those produced, a required fault not run (an optional one passes)."""
    module = load_soak()
    audit = {
        "produced": 100, "events_in": 100, "lost": 0, "duplicated": 0, "foreign_roots": 0,
        "poison_injected": 2, "failed": 2, "failed_not_poison": [], "poison_not_failed": [],
        "poison_delivered": [], "state_keys": 5, "state_mismatches": 0, "running_count_gaps": 0,
        "drained": True, "pending_in_store": 0, "driver_stop": {"exit": 0, "stuck": False},
        "driver_ended_by_itself": [], "summary_vs_audit": {}, "summary_matches_audit": True,
        "failed_events": [{"root": "s:1-2", "reason": "x"}, {"root": "s:1-3", "reason": "x"}],
    }  # fmt: skip
    clean = {"audit": audit, "not_run": [], "faults_injected": 3, "faults_planned": 3}

    def failing(**changes) -> list[str]:
        report = {**clean, "audit": {**audit, **changes.pop("audit", {})}, **changes}
        return [check for check, _, ok in module.verdict(report) if not ok]

    assert failing() == []
    assert failing(audit={"lost": 1}) == ["lost (inputs never at the sink, poison aside)"]
    assert failing(audit={"duplicated": 1}) == ["duplicated at the sink"]
    assert failing(audit={"foreign_roots": 1}) == ["sink roots never produced"]
    assert failing(audit={"failed": 3}) == ["failed = poison injected, each listed"]
    assert failing(audit={"failed_not_poison": ["s:5-1"]}) == [
        "failed = poison injected, each listed"
    ]
    assert failing(audit={"events_in": 99}) == ["events read in = produced"]
    assert failing(audit={"driver_ended_by_itself": [(1, [])]}) == [
        "driver stopped cleanly, never ended by itself"
    ]
    missing = {"kind": "disk_full", "at": 53.0, "why": "no tmpfs"}
    assert failing(not_run=[{**missing, "required": True}]) == ["planned faults run"]
    assert failing(not_run=[{**missing, "required": False}]) == []


def test_the_soak_lists_each_failed_event_with_its_root_and_reason(tmp_path):
    """The soak's reading of the Redis store's failed events (no Spark): one event of a share
    failed, committed as a replica does; the soak lists its root and the exception's message."""
    module = load_soak()
    server = local_redis(tmp_path / "redis")
    server.start()
    address = f"{server.url}?prefix=soak-failed"
    store = make_queues(RedisQueueStore(address))
    try:
        store.append("a", events(4), "src", 0)
        plan = store.plan_batch("a", 0, 4, 1, alternate)
        shared = store.read_share(plan, 0).events()
        bad = shared[2]
        outcomes = forward([e for e in shared if e is not bad], "b")
        outcomes.append(Outcome(bad.id, bad.root, OutcomeKind.ERROR))
        failed = [FailedEvent(bad.id, bad.root, "ValueError: poison event 0", b"")]
        store.commit_share(share_commit("a", plan.batch, 0, outcomes, failed, 0.0))
        assert module.failed_events(address) == [
            {"root": str(offset_of(bad.root)), "reason": "ValueError: poison event 0"}
        ]
        assert store.audit().failed == 1
    finally:
        store.close()
        server.stop()
