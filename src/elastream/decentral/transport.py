"""Message transports for the agents: the interface, the registry, and the in-memory transport.

A transport hosts the agents of a pipeline and carries their protocol messages over FIFO
channels. `step` runs one round: the given agents observe their load and view, their effects are
sent, and it returns once every message sent is delivered and handled (the protocol is quiet).
`memory` is registered here (pure, deterministic); an I/O transport registers itself in its own
module (`tcp_transport.py` registers `tcp`), imported by the runtime that offers it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from elastream.base.registry import Registry
from elastream.decentral.agent import Agent, AgentConfig
from elastream.decentral.memory import MemoryNetwork
from elastream.decentral.messages import NodeId
from elastream.decentral.node import Effects, Node, ProtocolError


@dataclass(frozen=True, slots=True)
class Observation:
    """What one agent sees at a step: its own load l_t, its view n_t, its share of free slots."""

    node: NodeId
    load: float
    n_view: int
    free: int | None


class Transport(Protocol):
    """Hosts agents (one per operator instance) and carries their messages over FIFO channels."""

    def start(self, nodes: Mapping[NodeId, Node], config: AgentConfig) -> None:
        """Host one agent per initial node."""

    def step(self, now: int, observations: Sequence[Observation]) -> None:
        """Every observed agent decides; return when every message sent was handled."""

    def agents(self) -> dict[NodeId, Agent]:
        """Every agent hosted, live or terminated (read between steps only)."""

    def messages_sent(self) -> int:
        """Control messages sent since the start."""

    def close(self) -> None:
        """Release what the transport holds (connections, threads)."""


TransportFactory = Callable[[], Transport]
TRANSPORTS: Registry[TransportFactory] = Registry("message transport")


class MemoryTransport:
    """Every agent in this process; messages on a `MemoryNetwork`, delivered channel by channel
    (round robin over the busy channels, each in send order) until none is left."""

    def __init__(self, max_deliveries: int = 1_000_000) -> None:
        self.network = MemoryNetwork()
        self.max_deliveries = max_deliveries
        self._agents: dict[NodeId, Agent] = {}
        self._config: AgentConfig | None = None
        self._n_ops = 0
        self._sent = 0

    def start(self, nodes: Mapping[NodeId, Node], config: AgentConfig) -> None:
        self._config = config
        self._n_ops = next(iter(nodes.values())).n_ops
        self._agents = {nid: Agent(node, config) for nid, node in nodes.items()}

    def step(self, now: int, observations: Sequence[Observation]) -> None:
        for obs in observations:
            agent = self._agents[obs.node]
            self._send(agent.observe(now, obs.load, obs.n_view, obs.free))
        for _ in range(self.max_deliveries):
            channels = self.network.busy_channels()
            if not channels:
                return
            for channel in channels:
                env = self.network.pop(channel)
                self._send(self._live(env.dst, type(env.msg).__name__).receive(env, now))
        raise RuntimeError(f"memory transport: not quiet after {self.max_deliveries} deliveries")

    def agents(self) -> dict[NodeId, Agent]:
        return dict(self._agents)

    def messages_sent(self) -> int:
        return self._sent

    def close(self) -> None:
        self.network.channels.clear()

    def _live(self, nid: NodeId, what: str) -> Agent:
        agent = self._agents.get(nid)
        if agent is None or agent.node.terminated:
            raise ProtocolError(f"memory transport: {what} reached {nid}, which is gone")
        return agent

    def _send(self, fx: Effects) -> None:
        if self._config is None:
            raise RuntimeError("memory transport: start() it before stepping")
        for nid in fx.spawned:
            self._agents[nid] = Agent.spawn(nid, self._n_ops, self._config)
        for env in fx.messages:
            self.network.send(env)
            self._sent += 1


TRANSPORTS.register("memory", MemoryTransport)
