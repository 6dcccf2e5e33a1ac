"""The protocol over real asyncio TCP on 127.0.0.1: servers in one process, and across processes."""

import asyncio
import json
import os
import sys

import pytest
from support.paths import ROOT

from elastream.decentral.agent import AgentConfig
from elastream.decentral.codec import decode, encode
from elastream.decentral.memory import Cluster
from elastream.decentral.messages import (
    Close,
    Data,
    Deletion,
    DuplicationAck,
    Envelope,
    NodeId,
    Start,
)
from elastream.runtime.tcp.host import TcpHost, quiescent


def test_codec_round_trips_every_message():
    a, b = NodeId(0, (1, 2)), NodeId(1, (0,))
    for msg in (Start(frozenset({b}), frozenset(), frozenset({a})), Deletion(a), Data(7),
                DuplicationAck(), Close()):  # fmt: skip
        env = Envelope(a, b, msg)
        assert decode(encode(env, ("127.0.0.1", 9))) == (env, ("127.0.0.1", 9))
    with pytest.raises(ValueError, match="malformed protocol line"):
        decode(b'{"type": "start", "src": "o0/1"}')


async def scenario() -> tuple[list[TcpHost], Cluster]:
    ref = Cluster.pipeline([2, 2, 1])  # layout only: the nodes are moved onto three servers
    hosts = [TcpHost({n: s for n, s in ref.nodes.items() if n.op == op}) for op in range(3)]
    for h in hosts:
        await h.start()
    for h in hosts:
        for other in hosts:
            h.learn(other.directory)
    src, mid, leaver = NodeId(0, (0,)), NodeId(1, (0,)), NodeId(1, (1,))
    hosts[0].nodes[src].emit(range(20))
    hosts[0].pump()  # 20 tuples over TCP to o1/0 and o1/1
    hosts[1].act(lambda: hosts[1].nodes[mid].scale_out(2))  # concurrent duplication ...
    hosts[1].act(hosts[1].nodes[leaver].scale_in)  # ... and deletion of a sibling
    hosts[0].act(lambda: hosts[0].nodes[NodeId(0, (1,))].scale_out(1))
    for _ in range(400):  # keep the data path moving while the protocol runs
        for h in hosts:
            h.pump()
        await asyncio.sleep(0.002)
        if sum(len(h.sunk) for h in hosts) == 20:
            break
    await quiescent(hosts)
    for h in hosts:
        h.pump()
    await quiescent(hosts)
    for h in hosts:
        await h.stop()
    return hosts, ref


def test_scaling_over_tcp_between_three_servers():
    hosts, ref = asyncio.run(scenario())
    assert len({h.addr for h in hosts}) == 3 and all(h.addr[0] == "127.0.0.1" for h in hosts)
    assert [e for h in hosts for e in h.errors] == []
    nodes = {n: s for h in hosts for n, s in h.nodes.items()}
    ref.nodes = nodes  # check the real nodes with the reference invariant code
    assert ref.view_errors() == []
    assert sorted(t for h in hosts for t in h.sunk) == list(range(20))  # none lost
    assert len(ref.live(0)) == 3 and len(ref.live(1)) == 3  # 2 + 1, and 2 + 2 - 1
    sent = sum((h.sent for h in hosts), start=type(hosts[0].sent)())
    # o1/0 -> 2 new (3 neighbours), o0/1 -> 1 new (2 neighbours), o1/1 leaves (3 neighbours)
    assert sent["Duplication"] == sent["DuplicationAck"] == 3 + 2
    assert sent["Start"] == 3 and sent["Deletion"] == sent["DeletionAck"] == 3


async def ask(proc, cmd):
    proc.stdin.write((json.dumps(cmd) + "\n").encode())
    await proc.stdin.drain()
    if cmd in ("stats", "dump"):
        return json.loads(await asyncio.wait_for(proc.stdout.readline(), 10))
    return None


async def across_processes():
    sizes = [2, 2, 2]
    layout = Cluster.pipeline(sizes)
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reproductions.decentralized.tcp_process",
        "--sizes", "2,2,2", "--op", "2",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    try:
        child_addr = tuple(json.loads(await asyncio.wait_for(child.stdout.readline(), 20))["addr"])
        hosts = [TcpHost({n: s for n, s in layout.nodes.items() if n.op == op}) for op in (0, 1)]
        for h in hosts:
            await h.start()
        directory = {n: child_addr for n in layout.nodes if n.op == 2}
        for h in hosts:
            directory.update(h.directory)
        for h in hosts:
            h.learn(directory)
        await ask(child, {"directory": {str(n): list(a) for n, a in directory.items()}})
        hosts[0].nodes[NodeId(0, (0,))].emit(range(30))
        hosts[0].pump()
        await ask(child, {"scale_out": ["o2/0", 2]})  # the child duplicates its keeper ...
        await ask(child, {"scale_in": "o2/1"})  # ... and removes its other instance
        hosts[1].act(lambda: hosts[1].nodes[NodeId(1, (1,))].scale_out(1))
        for _ in range(2000):
            for h in hosts:
                h.pump()
            await asyncio.sleep(0.003)
            stats = await ask(child, "stats")
            sent = stats["sent"] + sum(sum(h.sent.values()) for h in hosts)
            received = stats["received"] + sum(h.received for h in hosts)
            busy = stats["busy"] or any(n.busy for h in hosts for n in h.nodes.values())
            if stats["sunk"] == 30 and sent == received and not busy:
                break
        dump = await ask(child, "dump")
        for h in hosts:
            await h.stop()
        return hosts, dump
    finally:
        if child.returncode is None:
            await asyncio.wait_for(child.wait(), 10)


def test_scaling_over_tcp_between_processes():
    hosts, dump = asyncio.run(across_processes())
    assert dump["errors"] == [] and [e for h in hosts for e in h.errors] == []
    assert sorted(dump["sunk"]) == list(range(30))  # every tuple crossed to the other process
    child_live = {n for n, v in dump["views"].items() if not v["terminated"]}
    assert child_live == {"o2/0", "o2/0.0", "o2/0.1"}  # the child's own scaling took effect
    assert all(dump["views"][n]["active"] for n in child_live)
    mids = {str(n) for n, s in hosts[1].nodes.items() if not s.terminated}
    assert mids == {"o1/0", "o1/1", "o1/1.0"}
    for nid, node in hosts[1].nodes.items():  # views across the process boundary converged
        assert sorted(map(str, node.succs)) == sorted(child_live), nid
    for n in child_live:
        assert dump["views"][n]["preds"] == sorted(mids)


async def agents_over_tcp():
    layout = Cluster.pipeline([1, 2])
    config = AgentConfig(seed=3)
    hosts = [
        TcpHost({n: s for n, s in layout.nodes.items() if n.op == op}, agents=config)
        for op in (0, 1)
    ]
    for h in hosts:
        await h.start()
    for h in hosts:
        for other in hosts:
            h.learn(other.directory)
    hosts[1].now = 5
    # both operator-1 agents see 1,200 tuples/step each: L = 2,400 -> 7 needed, p = 2.5
    for nid in [NodeId(1, (0,)), NodeId(1, (1,))]:
        hosts[1].observe(nid, 1200.0, 2)
    await quiescent(hosts)
    for h in hosts:
        await h.stop()
    return hosts


def test_agents_decide_and_scale_over_tcp():
    hosts = asyncio.run(agents_over_tcp())
    mids = [n for n, s in hosts[1].nodes.items() if s.active]
    assert 2 + 4 <= len(mids) <= 2 + 6  # each agent adds 2 or 3 siblings
    assert all(hosts[1].agents[n].phase == 5 for n in mids if len(n.path) > 1)
    assert hosts[0].nodes[NodeId(0, (0,))].succs == set(mids)
    with pytest.raises(KeyError, match="not driven by an agent"):
        TcpHost({}).observe(NodeId(0, (0,)), 1.0, 1)
