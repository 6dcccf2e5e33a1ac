"""The decentralized mode on a real local Spark: agents in the driver scale the pool over TCP."""

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.spark_runs import PIPELINE, assert_conserved

from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.control.policy import POLICIES
from elastream.runner.engines import build_engine, run_engine
from elastream.runner.workload import prepare_workload
from elastream.runtime.tcp.transport import TcpTransport
from elastream.workloads import Trace

pytestmark = [pytest.mark.spark, pytest.mark.alone]


def forbid_central_policies(monkeypatch) -> list[str]:
    """Every registered policy but `decentralized` records a call (there must be none)."""
    calls: list[str] = []
    for name in POLICIES.names():
        if name == "decentralized":
            continue
        policy = POLICIES.get(name)

        def spy(snapshot, state, config, name=name, decide=policy.decide):
            calls.append(name)
            return decide(snapshot, state, config)

        monkeypatch.setitem(POLICIES._items, name, replace(policy, decide=spy))
    return calls


def test_decentralized_agents_follow_a_step_up_and_down_over_tcp(
    spark, tmp_path: Path, monkeypatch
):
    """In the tests' shared SparkSession (`spark`: the engine adopts the active one)."""
    central_calls = forbid_central_policies(monkeypatch)
    tcp_steps: list[int] = []
    original_step = TcpTransport.step

    def counted_step(self, now, observations):
        tcp_steps.append(now)
        return original_step(self, now, observations)

    monkeypatch.setattr(TcpTransport, "step", counted_step)
    sent: list[int] = []  # what the transport counted when the run closed it
    original_close = TcpTransport.close

    def counted_close(self):
        sent.append(self.messages_sent())
        return original_close(self)

    monkeypatch.setattr(TcpTransport, "close", counted_close)
    pipeline = load_pipeline(PIPELINE)
    # 10 s at 10 ev/s, 24 s at 70 ev/s (enrich needs 3 replicas at 40 ms), 30 s at 5 ev/s (the
    # agents leave once the backlog of the step is drained; it can outlast the step on a busy box).
    trace = Trace(np.array([10.0] * 10 + [70.0] * 24 + [5.0] * 30))
    config = make_config(
        interval_s=3.0,
        out=tmp_path / "run",
        drain_s=60,
        event_timeout_s=None,
        policy="decentralized",
    )
    engine = build_engine(pipeline, config, prepare_workload(config, pipeline, trace))
    result = run_engine(engine, config)

    enrich = [s.op("enrich").replicas for s in result.snapshots]
    enacted = [d.as_dict()["enrich"] for d in result.decisions]  # r_i(t+1), set in the store
    for snap, decision in zip(result.snapshots, result.decisions, strict=True):
        o = snap.op("enrich")
        print(f"t={snap.t:5.1f} in={snap.source_events:3d} enrich r={o.replicas} q={o.queue} "
              f"μ={o.replica_processed} U={[round(u, 2) for u in o.utilization]} "
              f"-> {decision.reason('enrich')}")  # fmt: skip
    peak_at = int(np.argmax(enrich))
    assert enrich[peak_at] >= 3, enrich  # the agents duplicated with the step up
    assert min(enacted[peak_at:]) <= 2, enacted  # and left after the step down
    assert enrich[1:] == enacted[:-1]  # each interval ran what the agents decided before it
    assert central_calls == []  # no central policy was ever asked
    assert len(tcp_steps) == len(result.decisions)  # every interval went over TCP
    assert len(sent) == 1 and result.summary.messages == sent[0] > 0
    assert not any(t.name == "elastream-decentral-tcp" for t in threading.enumerate())
    assert all(len(ids) == 1 for ids in engine.queries.run_ids.values()), (
        engine.queries.run_ids
    )  # no restart

    audit = engine.store.audit()
    assert_conserved(audit, int(trace.rates.sum()))
    assert result.totals.duplicates == 0
    assert result.summary.processed_ratio == 1.0
