"""S-ODRP (Alg. 1) on a running pipeline: the minimum-cost plan is enacted, the rates measured
over a window are fed back and the re-plan is enacted live; in the simulator with placement and
the network delay, on local Spark with the replica counts (no query restart)."""

from __future__ import annotations

import numpy as np
import pytest

from elastream.config import RunConfig
from elastream.experiments.sodrp_run import SodrpReport, run_sodrp
from elastream.model.pipeline import pipeline_from_dict
from elastream.placement.model import PlanRequest, Weights
from elastream.placement.network import mean_stream_delay_ms
from elastream.placement.spec import application_from, parse_planning
from elastream.runtime.sim import SimEngine, SimSettings
from elastream.workloads.trace import Trace

SYN = "elastream.examples.synthetic"
RATE = 60.0  # events/s the trace sends; the pipeline declares 10


def pipeline_dict() -> dict:
    """src -> a (40 ms: 25 events/s per replica, pool 4) -> b (5 ms, pool 2) -> out."""
    ops = [("a", 40.0, 4), ("b", 5.0, 2)]
    return {
        "name": "sodrp_chain",
        "sources": [{"name": "src", "generator": f"{SYN}:generate", "rate": 10}],
        "operators": [
            {
                "name": name,
                "function": f"{SYN}:passthrough",
                "service_time_ms": ms,
                "replicas": {"min": 1, "max": k},
            }
            for name, ms, k in ops
        ],
        "sinks": [{"name": "out"}],
        "streams": [
            {"from": "src", "to": "a"},
            {"from": "a", "to": "b"},
            {"from": "b", "to": "out"},
        ],
    }


PLANNING = {
    "nodes": [{"name": "n0", "resources": 3}, {"name": "n1", "resources": 4}],
    "default_link": {"delay_ms": 30.0},
    "operators": {"src": {"pinned": "n0"}},
}


def request() -> PlanRequest:
    plan_file = parse_planning(PLANNING, "test planning")
    return PlanRequest(
        application=application_from(plan_file, pipeline_dict(), "test planning"),
        infrastructure=plan_file.infrastructure(),
        weights=Weights(r=1.0),
    )


def simulate(place: bool) -> tuple[SodrpReport, object]:
    cfg = RunConfig(policy="static", replicas=1, td=2.0, t_out=None, q_size=None, drain_s=60)
    settings = SimSettings(measure_cpu=False, fast_forward=False)
    trace = Trace(np.full(40, RATE))
    req = request()
    engine = SimEngine(pipeline_from_dict(pipeline_dict()), cfg, trace, settings)
    engine.set_network(req.infrastructure)
    report = SodrpReport()
    result = run_sodrp(engine, req, window_s=10.0, place=place, report=report)
    return report, result


def test_sodrp_in_the_simulator_feeds_measured_rates_back_and_places_replicas() -> None:
    placed, result = simulate(place=True)
    early, final, measured = placed.early, placed.final, placed.measured
    assert early["weights"]["c"] == 1.0 and set(early["replicas"].values()) == {1}
    assert measured.source_rates["src"] == pytest.approx(RATE, rel=0.01)
    assert measured.stream_rates["src->a"] == pytest.approx(RATE, rel=0.01)
    assert measured.service_rates["a"] == pytest.approx(25.0, rel=0.01)  # 1 / 40 ms
    assert measured.stream_rates["a->b"] == pytest.approx(25.0, rel=0.05)  # a was saturated
    assert final["replicas"]["a"] >= 3  # 60 events/s need 60 / 25 -> 3 replicas or more
    assert final["replicas"] != early["replicas"]
    counts = [s.replicas()["a"] for s in result.snapshots]
    assert counts[0] == 1 and counts[-1] == final["replicas"]["a"]
    t = result.totals
    assert t.events_in == 40 * RATE and t.events_out == t.events_in  # nothing lost
    assert t.dropped_timeout == t.dropped_overflow == 0

    # the same run with the plans' counts only: the difference is the network delay
    unplaced, plain = simulate(place=False)
    assert unplaced.final["placement"] == final["placement"]
    nodes = final["placement"]
    net = request().infrastructure
    expected = mean_stream_delay_ms(net, nodes["src"], nodes["a"])
    expected += mean_stream_delay_ms(net, nodes["a"], nodes["b"])
    after = [
        (p.latency_ms_mean, q.latency_ms_mean)
        for p, q in zip(result.snapshots, plain.snapshots, strict=True)
        if p.t - p.td > placed.replanned_at_s + 2 * p.td and p.latency_ms_mean is not None
    ]
    assert len(after) >= 5
    for with_delay, without in after:
        assert with_delay - without == pytest.approx(expected)
    assert expected > 0  # the re-plan spreads 7 slots' worth over both nodes
