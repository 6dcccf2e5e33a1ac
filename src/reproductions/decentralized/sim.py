"""The paper's evaluation (Section 5) as a pure, seeded discrete-step simulation.

Each step t: (1) the messages sent at t-1 are processed (their replies are sent at t);
(2) each operator's load L_op(t) is shared evenly by its active instances, which process
min(L, n_active C); (3) every agent due to decide observes its own load and its view of n_t (its
first predecessor's successor count, or its first successor's predecessor count at operator 0)
and may start a scale-out or scale-in, whose first messages are sent at t."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from elastream.base.settings import Settings
from elastream.decentral.agent import Agent, AgentConfig, n_view
from elastream.decentral.memory import Cluster, MemoryNetwork
from elastream.decentral.messages import DeletionAck, DuplicationAck, Envelope, NodeId
from elastream.decentral.node import Effects, Node


class SimConfig(Settings):
    """Section 5.1's set-up (5 operators x 7 instances, C = 500, r = 0.7, every 5 steps)."""

    operators: int = Field(5, ge=1, description="pipeline length")
    instances: int = Field(7, ge=1, description="initial instances per operator")
    steps: int = Field(200, ge=1, description="simulated steps")
    agent: AgentConfig = Field(default_factory=AgentConfig, description="decision and period")
    load: Literal["brownian", "increasing"] = Field(
        "brownian", description="Brownian per operator (Figs. 3-5) or monotone (Fig. 6)"
    )
    initial_load: float = Field(
        2450.0, gt=0, description="L_op(0) per operator, tuples/step (7 instances at r = 0.7)"
    )
    sigma: float = Field(600.0, ge=0, description="std of one Brownian step, tuples/step")
    growth: float = Field(
        0.01, ge=0, description="monotone load: each step multiplies it by 1 + |N(0, growth)|"
    )
    min_load: float = Field(50.0, ge=0, description="the Brownian load is reflected above this")
    seed: int = Field(0, description="seed of the loads and of every agent")


@dataclass(frozen=True, slots=True)
class SimResult:
    """Per step t (rows, t = 1..steps) and operator (columns)."""

    load: np.ndarray  # L_op(t), tuples received
    instances: np.ndarray  # live instances (active or created and waiting for `start`)
    active: np.ndarray  # instances processing data
    messages: np.ndarray  # control messages sent at t, attributed to the operator scaling
    capacity: float
    ratio: float
    view_errors: tuple[str, ...]  # after the last step and every message delivered: none expected

    @property
    def ideal(self) -> np.ndarray:
        """Section 5.3: load / (C r), the instances needed to run every one at ratio r, rounded up
        to a whole instance (>= 1), as the paper's worked examples do ("643 tuples: 2 needed")."""
        return np.maximum(1.0, np.ceil(self.load / (self.capacity * self.ratio)))

    @property
    def accuracy(self) -> np.ndarray:
        """Section 5.3: instances / ideal (1 = ideal, > 1 overshoot, < 1 too few)."""
        return self.instances / self.ideal

    @property
    def throughput(self) -> np.ndarray:
        """Section 5.3: share of the load the active instances absorb within the step."""
        return np.minimum(1.0, self.active * self.capacity / self.load)


def loads(config: SimConfig) -> np.ndarray:
    """Per-operator loads, steps x operators: a reflected Brownian motion or a monotone growth."""
    rng = np.random.default_rng(config.seed)
    shape = (config.steps, config.operators)
    if config.load == "increasing":  # growth proportional to the load, so to the instances
        factors = 1 + np.abs(rng.normal(0.0, config.growth, size=shape))
        return config.initial_load * np.cumprod(factors, axis=0)
    steps = rng.normal(0.0, config.sigma, size=shape)
    out = np.empty_like(steps)
    level = np.full(config.operators, config.initial_load)
    for t in range(config.steps):
        level = level + steps[t]
        level = np.where(level < config.min_load, 2 * config.min_load - level, level)
        out[t] = level
    return out


def owner(env: Envelope) -> int:
    """The operator whose scaling a message belongs to: the initiator's (receiver for acks)."""
    return env.dst.op if isinstance(env.msg, DuplicationAck | DeletionAck) else env.src.op


def run(config: SimConfig) -> SimResult:
    load = loads(config)
    n_ops, steps = config.operators, config.steps
    layers = [[NodeId(i, (j,)) for j in range(config.instances)] for i in range(n_ops)]
    guards = config.agent.leave_guards
    agents = {
        nid: Agent(Node.initial(nid, layers, keeper=nid.path == (0,), guards=guards), config.agent)
        for layer in layers
        for nid in layer
    }
    shape = (steps, n_ops)
    instances, active, messages = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    outbox: list[Envelope] = []

    def emit(fx: Effects, t: int) -> None:
        for nid in fx.spawned:
            agents[nid] = Agent.spawn(nid, n_ops, config.agent)
        for env in fx.messages:
            messages[t - 1, owner(env)] += 1
            outbox.append(env)

    for t in range(1, steps + 1):
        inbox, outbox = outbox, []
        for env in inbox:  # sent at t-1, in send order: every channel stays FIFO
            emit(agents[env.dst].receive(env, t), t)
        live = [a for a in agents.values() if not a.node.terminated]
        for op in range(n_ops):
            mine = [a for a in live if a.node.id.op == op]
            working = [a for a in mine if a.node.active]
            instances[t - 1, op], active[t - 1, op] = len(mine), len(working)
            per_instance = load[t - 1, op] / len(working)
            for a in working:
                emit(a.observe(t, per_instance, n_view(a.node, agents)), t)
    for _ in range(10 * steps):  # no more decisions: let the protocol finish, then check views
        if not outbox:
            break
        inbox, outbox = outbox, []
        for env in inbox:
            emit(agents[env.dst].receive(env, steps + 1), steps)
    final = Cluster({n: a.node for n, a in agents.items()}, MemoryNetwork())
    cap, ratio = config.agent.decision.capacity, config.agent.decision.target_ratio
    return SimResult(load, instances, active, messages, cap, ratio, tuple(final.view_errors()))
