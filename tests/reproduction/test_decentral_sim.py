"""The discrete-step simulation of Section 5: determinism, protocol consistency, shape."""

import numpy as np
import pytest

from elastream.decentral.agent import Agent, AgentConfig
from elastream.decentral.decision import DecisionConfig
from elastream.decentral.messages import NodeId
from elastream.decentral.node import Effects, Node
from reproductions.decentralized.sim import SimConfig, loads, run


def cfg(seed=0, **kw):
    damping = kw.pop("damping_age", 0)
    decision = DecisionConfig(damping_age=damping)
    return SimConfig(seed=seed, agent=AgentConfig(seed=seed, decision=decision), **kw)


@pytest.fixture(scope="module")
def base():
    return run(cfg(0))


def test_seeded_and_deterministic(base):
    again = run(cfg(0))
    assert np.array_equal(base.instances, again.instances)
    assert np.array_equal(base.messages, again.messages)
    assert not np.array_equal(base.load, run(cfg(1, steps=200)).load)


def test_protocol_stays_consistent_in_the_simulation(base):
    assert base.view_errors == ()  # every instance's views equal the true graph at the end
    assert (base.active >= 1).all()  # the keeper: no operator ever vanishes
    assert (base.instances >= base.active).all()
    # iteration 5: every initial instance decides once; only first messages (duplication or
    # deletion) are sent, one per neighbour: 7 at the ends of the pipeline, 14 in the middle
    first = base.messages[4]
    assert first.sum() > 0
    for op, neighbours in enumerate([7, 14, 14, 14, 7]):
        assert first[op] % neighbours == 0
    assert base.messages[:4].sum() == 0


def test_instances_follow_the_load(base):
    total, nodes = base.load.sum(1), base.instances.sum(1)
    assert np.corrcoef(total, nodes)[0, 1] > 0.85
    assert 0.8 < np.median(base.accuracy) < 1.25
    assert base.throughput.mean() > 0.9


def test_loads_are_brownian_or_monotone():
    brown = loads(cfg(3))
    assert brown.shape == (200, 5) and (brown >= 50).all()
    steps = np.diff(brown, axis=0).ravel()
    assert 450 < steps.std() < 750  # sigma = 600, reflection aside
    up = loads(cfg(3, load="increasing"))
    assert (np.diff(up, axis=0) >= 0).all() and up[-1].min() > 2 * up[0].max()


def test_messages_grow_quadratically_with_instances():
    r = run(cfg(0, load="increasing"))
    nodes, cum = r.instances.sum(1), np.cumsum(r.messages.sum(1))
    grown = nodes - nodes[0]
    half = len(nodes) // 2
    early = cum[half] / grown[half]
    late = (cum[-1] - cum[half]) / (grown[-1] - grown[half])
    # each added instance costs ~2(|succs| + |preds|), itself proportional to the instances
    assert late / early > 0.8 * (nodes[-1] + nodes[half]) / (nodes[half] + nodes[0])


def test_damped_scale_out_cuts_overshoot_and_messages():
    seeds = range(4)
    plain = [run(cfg(s)) for s in seeds]
    damped = [run(cfg(s, damping_age=10)) for s in seeds]

    def excess(rs):
        return np.mean([np.maximum(r.accuracy - 1, 0).mean() for r in rs])

    assert excess(damped) < 0.9 * excess(plain)
    assert sum(r.messages.sum() for r in damped) < 0.8 * sum(r.messages.sum() for r in plain)
    assert all(r.view_errors == () for r in damped)


def test_agent_decides_every_period_from_activation():
    layers = [[NodeId(0, (0,))], [NodeId(1, (0,)), NodeId(1, (1,))]]
    agent = Agent(Node.initial(NodeId(1, (1,)), layers, keeper=False), AgentConfig())
    # overloaded (ratio 1.0) but not due: nothing happens between decision steps
    assert agent.observe(3, 500.0, 2).spawned == ()
    fx = agent.observe(5, 500.0, 2)  # L = 1000 -> 2.86 needed, n_diff = 0: still nothing
    assert fx.spawned == ()
    fx = agent.observe(10, 1000.0, 2)  # L = 2000 -> n_diff = 3, p = 1.5
    assert len(fx.spawned) in (1, 2) and agent.node.busy
    assert [e.dst for e in fx.messages] == [NodeId(0, (0,))]  # the duplication, to its pred
    assert agent.observe(15, 1000.0, 2).messages == ()  # busy until acknowledged


def test_agent_uses_the_smallest_recent_view_as_the_load_share():
    layers = [[NodeId(0, (0,))], [NodeId(1, (0,)), NodeId(1, (1,))]]

    def after_growth(config):
        agent = Agent(Node.initial(NodeId(1, (1,)), layers, keeper=False), config)
        agent.observe(8, 800.0, 2)
        agent.observe(9, 800.0, 5)  # three siblings just joined the predecessor's view
        return agent.observe(10, 800.0, 5)

    # the paper: L = 800 * 5 = 4000 -> 11.4 needed, n_diff = 6, p = 1.2: at least one sibling
    assert len(after_growth(AgentConfig()).spawned) >= 1
    # pending-aware: the load was shared by 2, L = 1600 -> 4.6 needed, n_diff = -1: none
    pending = AgentConfig(decision=DecisionConfig(pending_steps=2))
    assert after_growth(pending).spawned == ()


def test_agent_never_creates_more_siblings_than_free_slots():
    layers = [[NodeId(0, (0,))], [NodeId(1, (0,)), NodeId(1, (1,))]]

    def overloaded(free):
        agent = Agent(Node.initial(NodeId(1, (1,)), layers, keeper=False), AgentConfig())
        return agent, agent.observe(5, 2000.0, 2, free=free)  # n_diff = 9, p = 4.5: 4 or 5

    assert len(overloaded(None)[1].spawned) in (4, 5)
    assert len(overloaded(3)[1].spawned) == 3
    agent, fx = overloaded(0)
    assert fx == Effects() and not agent.node.busy  # pool full: no protocol round at all
    with pytest.raises(ValueError, match="free replica slots"):
        overloaded(-1)
