"""The decentralized policy: agents per replica driven from the Monitor data, on both transports."""

import threading
from dataclasses import replace

import numpy as np
import pytest
from support.builders import snapshot, stats
from support.paths import PIPELINES

from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.control.controller import Controller
from elastream.control.features import MessageTransport
from elastream.control.policies import decentralized
from elastream.control.policies.decentralized import DecentralizedConfig, replica_loads
from elastream.control.policy import POLICIES, PolicyConfigError
from elastream.decentral.memory import Cluster, MemoryNetwork
from elastream.decentral.swarm import Pool, Swarm, even_shares
from elastream.decentral.transport import MemoryTransport
from elastream.runner.engines import simulate, with_message_transport
from elastream.runtime.tcp.transport import TcpTransport
from elastream.workloads import Trace

PIPELINE = PIPELINES / "filter3.yaml"
AGENTS = DecentralizedConfig().agent_config()
# per interval, per operator: the load every active replica sees (in units of its capacity)
STEPS = [2.0] * 4 + [0.75] * 3 + [0.05] * 8


def test_a_replica_load_is_its_utilization_plus_its_share_of_the_backlog():
    o = replace(stats("op", replicas=3, queue=60, service_time_s=0.1), utilization=(0.5, 0.25))
    # backlog share: 60 / 3 events × 0.1 s / 10 s = 0.2 each; the third replica measured nothing
    assert replica_loads(o, td=10.0, service_time_s=0.1) == pytest.approx([0.7, 0.45, 0.2])


def test_free_slots_are_shared_evenly_and_add_up():
    assert even_shares(5, 3) == [2, 2, 1]
    assert even_shares(0, 2) == [0, 0]
    assert sum(even_shares(7, 4)) == 7


def drive(swarm: Swarm, steps=STEPS) -> list[dict[str, int]]:
    counts = []
    for load in steps:
        current = swarm.counts()
        counts.append(swarm.step({name: [load] * n for name, n in current.items()}))
    return counts


def pools() -> list[Pool]:
    return [Pool("a", 1, 1, 6), Pool("b", 2, 1, 6), Pool("c", 2, 2, 3)]


def test_the_swarm_follows_the_load_within_its_pools_and_keeps_views_consistent():
    swarm = Swarm(pools(), MemoryTransport(), AGENTS)
    counts = drive(swarm)
    peak = max(range(len(counts)), key=lambda k: counts[k]["a"])
    assert counts[peak] == {"a": 6, "b": 6, "c": 3}  # saturated: up to each pool's max
    assert counts[-1] == {"a": 1, "b": 1, "c": 2}  # idle: down to the keepers (c's min is 2)
    assert all(1 <= c["a"] <= 6 and 1 <= c["b"] <= 6 and 2 <= c["c"] <= 3 for c in counts)
    nodes = {n: a.node for n, a in swarm.transport.agents().items()}
    assert Cluster(nodes, MemoryNetwork()).view_errors() == []
    assert swarm.messages_sent() > 0


def test_tcp_and_memory_transports_give_the_same_counts_and_messages():
    memory = Swarm(pools(), MemoryTransport(), AGENTS)
    tcp = Swarm(pools(), TcpTransport(), AGENTS)
    try:
        assert drive(tcp) == drive(memory)
        assert tcp.messages_sent() == memory.messages_sent()
    finally:
        tcp.close()
    assert not any(t.name == "elastream-decentral-tcp" for t in threading.enumerate())


def snap(replicas: int, utilization: float, queue: int = 0, t: float = 1.0):
    o = stats("op", replicas=replicas, pool=(1, 4), queue=queue, service_time_s=0.1, processed=10)
    return snapshot(replace(o, utilization=(utilization,) * replicas), t=t, interval_s=1.0)


def test_the_policy_scales_from_replica_loads_reports_messages_and_closes_its_transport():
    controller = Controller.build("decentralized")
    state = controller.initial_state()
    replicas, seen, sent = 1, [], 0
    for k, util in enumerate([1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]):
        backlog = 40 if util > 0.5 else 0
        decision, state = controller.decide(snap(replicas, util, backlog, k + 1.0), state)
        replicas = decision.as_dict()["op"]
        now_sent = controller.messages(state)
        seen.append((replicas, now_sent - sent))
        assert decision.detail("op").endswith(f"; {now_sent - sent} msgs"), decision.details
        sent = now_sent
    assert max(r for r, _ in seen) == 4 and seen[-1][0] == 1, seen
    assert seen[0][1] > 0 and sum(m for _, m in seen) == state.policy.swarm.messages_sent()
    controller.close(state)
    assert state.policy.swarm.transport.network.channels == {}


def test_an_unknown_transport_is_named_when_the_run_starts():
    controller = Controller.build("decentralized", {"transport": "carrier-pigeon"})
    with pytest.raises(PolicyConfigError, match="transport.*carrier-pigeon.*known: memory"):
        controller.decide(snap(1, 0.5), controller.initial_state())


class FakeEngine:
    features = frozenset({MessageTransport})
    message_transport = "tcp"


def test_the_session_injects_the_engines_transport_unless_the_run_names_one():
    config = make_config(policy="decentralized")
    assert with_message_transport(config, FakeEngine()).policy_options == {"transport": "tcp"}
    named = make_config(policy="decentralized", policy_options={"transport": "memory"})
    assert with_message_transport(named, FakeEngine()).policy_options == {"transport": "memory"}
    central = make_config(policy="psps")
    assert with_message_transport(central, FakeEngine()) is central
    assert "decentralized" in POLICIES and decentralized.POLICY.close is not None


def test_a_simulated_run_scales_without_a_central_decision_and_sums_the_messages(monkeypatch):
    sent: list[int] = []  # what each transport counted when the run closed it
    close = MemoryTransport.close

    def counted_close(self):
        sent.append(self.messages_sent())
        close(self)

    monkeypatch.setattr(MemoryTransport, "close", counted_close)
    pipeline = load_pipeline(PIPELINE)
    trace = Trace(np.array([10.0] * 10 + [70.0] * 24 + [5.0] * 21))
    config = make_config(
        interval_s=3.0, drain_s=60, event_timeout_s=None, policy="decentralized", engine="sim"
    )
    result = simulate(pipeline, config, trace)
    enrich = [s.op("enrich").replicas for s in result.snapshots]
    peak = int(np.argmax(enrich))
    assert enrich[peak] >= 3 and enrich[-1] == 1, enrich
    assert result.summary.processed_ratio == 1.0
    assert len(sent) == 1 and result.summary.messages == sent[0] > 0
    central = simulate(
        pipeline, make_config(interval_s=3.0, drain_s=60, event_timeout_s=None, engine="sim"), trace
    )
    assert central.summary.messages == 0
