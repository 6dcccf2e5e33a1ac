"""I/O: the `tcp` message transport, one `TcpHost` per operator on 127.0.0.1, in a driver thread.

The hosts (asyncio servers, one per operator, each hosting that operator's agents and the
siblings they create) run on one event loop in a daemon thread of the driver; every protocol
message crosses a real TCP connection, FIFO per (src, dst) host pair (`host.py`). `step` runs
the observations on that loop and waits until every message sent was received and handled and
no agent has an operation in flight. Importing this module registers it as `tcp`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from elastream.decentral.agent import Agent, AgentConfig
from elastream.decentral.messages import NodeId
from elastream.decentral.node import Node
from elastream.decentral.transport import TRANSPORTS, Observation
from elastream.runtime.tcp.host import TcpHost, quiescent

T = TypeVar("T")


class TcpTransport:
    """Agents on one TCP host per operator; the hosts' event loop runs in a daemon thread."""

    def __init__(self, quiet_timeout_s: float = 30.0) -> None:
        self.quiet_timeout_s = quiet_timeout_s
        self.hosts: dict[int, TcpHost] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="elastream-decentral-tcp", daemon=True
        )
        self._thread.start()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def start(self, nodes: Mapping[NodeId, Node], config: AgentConfig) -> None:
        by_op: dict[int, dict[NodeId, Node]] = {}
        for nid, node in nodes.items():
            by_op.setdefault(nid.op, {})[nid] = node
        self.hosts = {op: TcpHost(mine, agents=config) for op, mine in sorted(by_op.items())}
        self._run(self._start_hosts())

    async def _start_hosts(self) -> None:
        for host in self.hosts.values():
            await host.start()
        directory = {nid: addr for h in self.hosts.values() for nid, addr in h.directory.items()}
        for host in self.hosts.values():
            host.learn(directory)

    def step(self, now: int, observations: Sequence[Observation]) -> None:
        self._run(self._step(now, observations))
        errors = [e for h in self.hosts.values() for e in h.errors]
        if errors:
            raise RuntimeError(f"tcp transport at step {now}: {'; '.join(errors)}")

    async def _step(self, now: int, observations: Sequence[Observation]) -> None:
        for host in self.hosts.values():
            host.now = now
        for obs in observations:
            self.hosts[obs.node.op].observe(obs.node, obs.load, obs.n_view, obs.free)
        await quiescent(list(self.hosts.values()), timeout=self.quiet_timeout_s)

    def agents(self) -> dict[NodeId, Agent]:
        return {nid: a for h in self.hosts.values() for nid, a in h.agents.items()}

    def messages_sent(self) -> int:
        return sum(sum(h.sent.values()) for h in self.hosts.values())

    def close(self) -> None:
        """Stop the hosts (their connections close), then the loop and its thread."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._stop_hosts())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    async def _stop_hosts(self) -> None:
        for host in self.hosts.values():
            await host.stop()


NAME = "tcp"
TRANSPORTS.register(NAME, TcpTransport)
