"""The in-memory deterministic transport and a cluster of nodes with the invariant checks.

`MemoryNetwork` keeps one FIFO queue per ordered pair (src, dst); whoever drives it (a test, the
simulator) chooses which channel delivers next, so every interleaving is reproducible.
`fifo=False` lets any queued message of a channel overtake the others (the broken variant)."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from elastream.decentral.messages import Data, Envelope, NodeId
from elastream.decentral.node import Effects, Node, ProtocolError

Channel = tuple[NodeId, NodeId]


@dataclass(slots=True)
class MemoryNetwork:
    """FIFO channels between nodes, delivered one message at a time on demand."""

    fifo: bool = True
    channels: dict[Channel, deque[Envelope]] = field(default_factory=dict)

    def send(self, env: Envelope) -> None:
        self.channels.setdefault((env.src, env.dst), deque()).append(env)

    def busy_channels(self) -> list[Channel]:
        return sorted(c for c, q in self.channels.items() if q)

    def pop(self, channel: Channel, index: int = 0) -> Envelope:
        q = self.channels.get(channel)
        if not q:
            raise ValueError(f"channel {channel[0]} -> {channel[1]} is empty")
        if index and self.fifo:
            raise ValueError("a FIFO channel only delivers its head (index 0)")
        index %= len(q)
        env = q[index]
        del q[index]
        return env

    def in_flight(self) -> list[Envelope]:
        return [e for q in self.channels.values() for e in q]


@dataclass(slots=True)
class Cluster:
    """Nodes of a pipeline on a `MemoryNetwork`, with counters and the protocol invariants."""

    nodes: dict[NodeId, Node]
    net: MemoryNetwork
    acks: bool = True
    guards: bool = True
    sent: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    injected: int = 0
    sunk: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)

    @classmethod
    def pipeline(
        cls,
        sizes: Sequence[int],
        fifo: bool = True,
        acks: bool = True,
        keepers: bool = True,
        guards: bool = True,
    ) -> Cluster:
        """A pipeline of len(sizes) operators with sizes[i] active instances; instance 0 keeps.
        The switches off give the broken variants (no FIFO, no acks, no keeper, no Close)."""
        if not sizes or min(sizes) < 1:
            raise ValueError(f"every operator needs >= 1 initial instance, got sizes {sizes}")
        layers = [[NodeId(i, (j,)) for j in range(n)] for i, n in enumerate(sizes)]
        nodes = {
            nid: Node.initial(
                nid, layers, keeper=keepers and nid.path == (0,), acks=acks, guards=guards
            )
            for layer in layers
            for nid in layer
        }
        return cls(nodes, MemoryNetwork(fifo), acks, guards)

    @property
    def n_ops(self) -> int:
        return next(iter(self.nodes.values())).n_ops

    def live(self, op: int | None = None) -> list[NodeId]:
        return sorted(
            n for n, s in self.nodes.items() if not s.terminated and (op is None or n.op == op)
        )

    def node(self, nid: NodeId) -> Node:
        if nid not in self.nodes:
            raise KeyError(f"unknown node {nid}")
        return self.nodes[nid]

    # ---- driving --------------------------------------------------------------------------------
    def apply(self, fx: Effects) -> Effects:
        for nid in fx.spawned:
            if nid in self.nodes:
                raise ProtocolError(f"node id {nid} created twice")
            self.nodes[nid] = Node.idle(nid, self.n_ops, self.acks, self.guards)
        for env in fx.messages:
            if not isinstance(env.msg, Data):
                self.sent[type(env.msg).__name__] += 1
            sender = self.nodes[env.src]
            if isinstance(env.msg, Data) and not sender.active and not sender.terminated:
                self.violations.append(f"idle node {env.src} sent tuple {env.msg.tid}")
            self.net.send(env)
        self.sunk.extend(fx.sunk)
        return fx

    def deliver(self, channel: Channel, index: int = 0) -> Effects:
        env = self.net.pop(channel, index)
        dst = self.nodes.get(env.dst)
        if dst is None or dst.terminated:
            what = "never created" if dst is None else "terminated"
            self.violations.append(
                f"{type(env.msg).__name__} from {env.src} reached {what} {env.dst}"
            )
            if isinstance(env.msg, Data):
                self.lost.append(env.msg.tid)
            return Effects()
        return self.apply(dst.receive(env))

    def inject(self, nid: NodeId, count: int = 1) -> None:
        """The source hands `count` new tuples to an active instance of operator 0."""
        node = self.node(nid)
        if nid.op != 0 or not node.active:
            raise ValueError(f"tuples enter the pipeline at active operator-0 nodes, not {nid}")
        node.emit(range(self.injected, self.injected + count))
        self.injected += count

    def process(self, nid: NodeId, choice: int | None = None) -> Effects:
        return self.apply(self.node(nid).process(choice))

    def scale_out(self, nid: NodeId, count: int) -> Effects:
        return self.apply(self.node(nid).scale_out(count))

    def scale_in(self, nid: NodeId) -> Effects:
        return self.apply(self.node(nid).scale_in())

    def quiet(self) -> bool:
        return not self.net.in_flight() and not any(
            n.busy or n.queue or n.waiting_for() for n in self.nodes.values() if not n.terminated
        )

    def drain(self, max_rounds: int = 100_000) -> None:
        """Deliver every message and process every tuple, round robin, until nothing moves."""
        for _ in range(max_rounds):
            moved = False
            for ch in self.net.busy_channels():
                self.deliver(ch)
                moved = True
            for nid in self.live():
                while self.nodes[nid].active and self.nodes[nid].queue:
                    before = len(self.nodes[nid].queue)
                    self.process(nid)
                    if len(self.nodes[nid].queue) == before:
                        break
                    moved = True
            if not moved:
                return
        raise RuntimeError(f"cluster did not drain within {max_rounds} rounds")

    # ---- invariants -----------------------------------------------------------------------------
    def tuples_accounted(self) -> int:
        """Injected minus (sunk + lost + queued + in flight): 0 when no tuple vanished."""
        queued = sum(len(n.queue) for n in self.nodes.values() if not n.terminated)
        flying = sum(isinstance(e.msg, Data) for e in self.net.in_flight())
        return self.injected - len(self.sunk) - len(self.lost) - queued - flying

    def keeper_alive(self) -> list[str]:
        return [
            f"operator {i} has no active instance"
            for i in range(self.n_ops)
            if not any(self.nodes[n].active for n in self.live(i))
        ]

    def view_errors(self) -> list[str]:
        """When quiet: every live node's succs/preds equal the live nodes of adjacent operators."""
        errors = []
        for nid in self.live():
            node = self.nodes[nid]
            want_s = set(self.live(nid.op + 1)) if nid.op + 1 < self.n_ops else set()
            want_p = set(self.live(nid.op - 1)) if nid.op > 0 else set()
            if not node.active:
                errors.append(f"{nid} never became active")
            if node.waiting_for():
                waiting = sorted(map(str, node.waiting_for()))
                errors.append(f"{nid} still waits to hear from {waiting}")
            if node.succs != want_s:
                errors.append(
                    f"{nid} succs {sorted(map(str, node.succs))} != {sorted(map(str, want_s))}"
                )
            if node.preds != want_p:
                errors.append(
                    f"{nid} preds {sorted(map(str, node.preds))} != {sorted(map(str, want_p))}"
                )
        return errors
