"""I/O: the protocol over asyncio TCP on 127.0.0.1 (one host = one server and its nodes).

Every host keeps ONE outgoing TCP connection per destination host, fed by one queue in send
order, so each (src, dst) channel is FIFO as the protocol requires (TCP orders bytes within a
connection). Messages between two nodes of the same host also go through that host's own
server, so that local and remote deliveries behave alike. A sibling created by createNode()
lives on its creator's host; a host learns that address from the sender of the duplication."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable

from elastream.decentral.agent import Agent, AgentConfig
from elastream.decentral.codec import decode, encode
from elastream.decentral.messages import Data, Duplication, NodeId
from elastream.decentral.node import Effects, Node

Address = tuple[str, int]


class TcpHost:
    """An asyncio server on 127.0.0.1 hosting some nodes of the pipeline."""

    def __init__(
        self,
        nodes: dict[NodeId, Node],
        directory: dict[NodeId, Address] | None = None,
        agents: AgentConfig | None = None,
    ):
        """`agents`: when given, every node is driven by an `Agent` with that configuration
        (`observe(nid, load, n_view)` runs its decision; `now` is the runtime's step)."""
        self.nodes = nodes
        self.agent_config = agents
        self.agents = {n: Agent(s, agents) for n, s in nodes.items()} if agents else {}
        self.now = 0
        self.directory: dict[NodeId, Address] = dict(directory or {})
        self.addr: Address = ("127.0.0.1", 0)
        self.sent: Counter[str] = Counter()
        self.received = 0
        self.sunk: list[int] = []
        self.errors: list[str] = []
        self._server: asyncio.base_events.Server | None = None
        self._outboxes: dict[Address, asyncio.Queue[bytes | None]] = {}
        self._senders: list[asyncio.Task[None]] = []

    async def start(self) -> Address:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.addr = self._server.sockets[0].getsockname()[:2]
        for nid in self.nodes:
            self.directory[nid] = self.addr
        return self.addr

    async def stop(self) -> None:
        for q in self._outboxes.values():
            q.put_nowait(None)
        await asyncio.gather(*self._senders)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def learn(self, directory: dict[NodeId, Address]) -> None:
        self.directory.update(directory)

    # ---- sending ------------------------------------------------------------------------------
    def act(self, action: Callable[[], Effects]) -> Effects:
        """Run a local action (a decision, scale_out/scale_in, process) and send its effects."""
        return self.apply(action())

    def apply(self, fx: Effects) -> Effects:
        for nid in fx.spawned:
            n_ops = next(iter(self.nodes.values())).n_ops
            if self.agent_config is not None:
                self.agents[nid] = Agent.spawn(nid, n_ops, self.agent_config)
                self.nodes[nid] = self.agents[nid].node
            else:
                self.nodes[nid] = Node.idle(nid, n_ops)
            self.directory[nid] = self.addr
        for env in fx.messages:
            self.sent["Data" if isinstance(env.msg, Data) else type(env.msg).__name__] += 1
            self._outbox(self.directory[env.dst]).put_nowait(encode(env, self.addr))
        self.sunk.extend(fx.sunk)
        return fx

    def _outbox(self, peer: Address) -> asyncio.Queue[bytes | None]:
        if peer not in self._outboxes:
            q: asyncio.Queue[bytes | None] = asyncio.Queue()
            self._outboxes[peer] = q
            self._senders.append(asyncio.create_task(self._send_loop(peer, q)))
        return self._outboxes[peer]

    async def _send_loop(self, peer: Address, q: asyncio.Queue[bytes | None]) -> None:
        _, writer = await asyncio.open_connection(*peer)
        try:
            while (line := await q.get()) is not None:
                writer.write(line)
                if q.empty():
                    await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def observe(self, nid: NodeId, load: float, n_view: int, free: int | None = None) -> Effects:
        """One step of one hosted agent: its own load and view of n_t in, effects sent."""
        if nid not in self.agents:
            raise KeyError(f"node {nid} is not driven by an agent on host {self.addr}")
        return self.apply(self.agents[nid].observe(self.now, load, n_view, free))

    def pump(self) -> None:
        """Process every queued tuple of the active nodes (the data path)."""
        for node in list(self.nodes.values()):
            while node.active and node.queue and (node.is_last or node.succs):
                self.act(node.process)

    # ---- receiving ----------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                env, sender = decode(line)
                self.received += 1
                self.directory.setdefault(env.src, sender)
                if isinstance(env.msg, Duplication):  # new siblings live on their creator's host
                    for nid in env.msg.addrs:
                        self.directory.setdefault(nid, sender)
                node = self.nodes.get(env.dst)
                if node is None or node.terminated:
                    self.errors.append(f"{type(env.msg).__name__} from {env.src} to gone {env.dst}")
                    continue
                agent = self.agents.get(env.dst)
                self.apply(agent.receive(env, self.now) if agent else node.receive(env))
        finally:
            writer.close()


async def quiescent(hosts: list[TcpHost], timeout: float = 10.0, poll: float = 0.005) -> None:
    """Wait until every sent message was received and processed by some host, and no node has
    an operation in flight (a test helper: it looks at all hosts at once)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        sent = sum(sum(h.sent.values()) for h in hosts)
        received = sum(h.received for h in hosts)
        busy = any(n.busy or n.waiting_for() for h in hosts for n in h.nodes.values()
                   if not n.terminated)  # fmt: skip
        if sent == received and not busy:
            return
        if loop.time() > deadline:
            raise TimeoutError(f"not quiet after {timeout} s: {sent} sent, {received} received")
        await asyncio.sleep(poll)
