"""Placement in the simulator: the even-split network delay of a stream between placed replicas
(hand-worked numbers), and that delay in the end-to-end latency of a simulated run."""

import numpy as np
import pytest

from elastream.config import RunConfig
from elastream.control.execute import execute
from elastream.control.policy import Decision, Lease, Placement, Plan
from elastream.model.pipeline import pipeline_from_dict
from elastream.placement.model import Infrastructure, LinkOverride, LinkSpec, NodeSpec
from elastream.placement.network import link_delay_ms, mean_stream_delay_ms, stream_delays_ms
from elastream.runtime.sim import SimEngine, SimSettings
from elastream.workloads.trace import Trace

SYN = "elastream.examples.synthetic"
EXACT = SimSettings(measure_cpu=False, fast_forward=False)


def infra() -> Infrastructure:
    """n0-n1: 12 ms, n0-n2: 32 ms, every other pair 20 ms (n1-n2)."""
    return Infrastructure(
        nodes=tuple(NodeSpec(name=f"n{u}", resources=4) for u in range(3)),
        default_link=LinkSpec(delay_ms=20.0),
        links=(
            LinkOverride(src="n0", dst="n1", delay_ms=12.0),
            LinkOverride(src="n0", dst="n2", delay_ms=32.0, symmetric=False),
        ),
    )


def chain() -> object:
    """src -> a -> b -> out; a and b serve 1000 events/s per replica, pools of 3."""
    ops = [
        {
            "name": name,
            "function": f"{SYN}:passthrough",
            "service_time_ms": 1.0,
            "replicas": {"min": 1, "max": 3},
        }
        for name in ("a", "b")
    ]
    return pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate", "rate": 20}],
            "operators": ops,
            "sinks": [{"name": "out"}],
            "streams": [
                {"from": "src", "to": "a"},
                {"from": "a", "to": "b"},
                {"from": "b", "to": "out"},
            ],
        }
    )


def test_link_delays_are_the_infrastructures() -> None:
    net = infra()
    assert link_delay_ms(net, "n1", "n1") == 0.0
    assert link_delay_ms(net, "n1", "n0") == 12.0  # symmetric override
    assert link_delay_ms(net, "n0", "n2") == 32.0
    assert link_delay_ms(net, "n2", "n0") == 20.0  # one direction only: the default back
    with pytest.raises(ValueError, match="unknown node 'n9'"):
        link_delay_ms(net, "n0", "n9")


def test_even_split_mean_delay_by_hand() -> None:
    # a on n0, n0, n1; b on n1, n2: pairs (n0,n1) x2 = 24, (n0,n2) x2 = 64, (n1,n1) = 0,
    # (n1,n2) = 20 -> 108 ms over 6 equally likely pairs = 18 ms
    assert mean_stream_delay_ms(infra(), ["n0", "n0", "n1"], ["n1", "n2"]) == pytest.approx(18.0)
    assert mean_stream_delay_ms(infra(), ["n1", "n1"], ["n1"]) == 0.0  # co-located
    delays = stream_delays_ms(infra(), {"a": ["n0"], "b": ["n1"]}, [("src", "a"), ("a", "b")])
    assert delays == {("a", "b"): 12.0}  # src is not placed: its stream is left out


def run(
    placement: tuple[Placement, ...], replicas: dict[str, int], model: str = "per_replica"
) -> tuple[float, object]:
    """A 20 s run at 20 events/s with the given counts and placement; (mean latency ms, totals)."""
    cfg = RunConfig(
        policy="static", replicas=1, interval_s=2.0, event_timeout_s=None, queue_capacity=None
    )
    settings = SimSettings(**(EXACT.model_dump() | {"queue_model": model}))
    engine = SimEngine(chain(), cfg, Trace(np.full(20, 20.0)), settings, network=infra())
    engine.start()
    execute(engine, Plan(Decision(tuple(replicas.items())), placement=placement))
    while not engine.finished():
        engine.collect()
    totals = engine.totals()
    return totals.latency_ms_mean, totals


@pytest.mark.parametrize("model", ["per_replica", "micro_batch"])
def test_the_network_delay_is_added_to_the_latency(model: str) -> None:
    counts = {"a": 2, "b": 1}
    base, base_totals = run((), counts, model)
    together, _ = run((Placement("a", ("n1", "n1")), Placement("b", ("n1",))), counts, model)
    # a on n0 and n1, b on n1: an event on a -> b pays (12 + 0) / 2 = 6 ms on average
    split, split_totals = run(
        (Placement("a", ("n0", "n1")), Placement("b", ("n1",))), counts, model
    )
    # plus the source on n2: src -> a pays (20 + 20) / 2 = 20 ms more
    sourced, _ = run(
        (Placement("src", ("n2",)), Placement("a", ("n0", "n1")), Placement("b", ("n1",))),
        counts,
        model,
    )
    assert together == pytest.approx(base)
    assert split - base == pytest.approx(6.0)
    assert sourced - base == pytest.approx(26.0)
    assert split_totals.events_in == base_totals.events_in == 400
    assert split_totals.events_out == base_totals.events_out == 400


def test_the_delay_follows_the_active_replicas() -> None:
    # a's pool placed on n0, n1, n1; with 1 active replica only n0 serves: a -> b (n1) = 12 ms
    one, _ = run((Placement("a", ("n0", "n1", "n1")), Placement("b", ("n1",))), {"a": 1, "b": 1})
    three, _ = run((Placement("a", ("n0", "n1", "n1")), Placement("b", ("n1",))), {"a": 3, "b": 1})
    base, _ = run((), {"a": 1, "b": 1})
    base3, _ = run((), {"a": 3, "b": 1})
    assert one - base == pytest.approx(12.0)
    assert three - base3 == pytest.approx(4.0)  # (12 + 0 + 0) / 3 ms


def test_bad_placements_are_clear_errors() -> None:
    cfg = RunConfig(policy="static", replicas=1, interval_s=2.0)
    engine = SimEngine(chain(), cfg, Trace(np.full(4, 1.0)), EXACT, network=infra())
    engine.start()
    with pytest.raises(ValueError, match=r"placement of 'a': unknown node\(s\) n7"):
        engine.place((Placement("a", ("n7",)),))
    with pytest.raises(ValueError, match="4 replicas, its pool has 3"):
        engine.place((Placement("a", ("n0",) * 4),))
    with pytest.raises(KeyError, match="unknown operator 'zz'"):
        engine.place((Placement("zz", ("n0",)),))
    with pytest.raises(ValueError, match="no hosts to lease"):
        engine.lease((Lease("executor", 1),))
    engine.place((Placement("b", ("n0",)),))
    engine.enact(Decision((("a", 1), ("b", 2))))
    with pytest.raises(ValueError, match="operator 'b': 2 replicas are active but only 1"):
        engine.collect()
    plain = SimEngine(chain(), cfg, Trace(np.full(4, 1.0)), EXACT)
    plain.start()
    with pytest.raises(ValueError, match="only when built with a `network`"):
        plain.place((Placement("a", ("n0",)),))
