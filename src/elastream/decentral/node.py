"""One operator instance as a state machine: the protocol's message handlers (Algs. 4-10).

Handlers never send: they return `Effects` (messages to put on FIFO channels, siblings to create,
tuples leaving the pipeline), so the same code runs on the in-memory and the TCP transports."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from elastream.decentral.messages import (
    Close,
    Data,
    Deletion,
    DeletionAck,
    Duplication,
    DuplicationAck,
    Envelope,
    Message,
    NodeId,
    Start,
)


class ProtocolError(RuntimeError):
    """A message or action that the protocol state of a node does not allow."""


@dataclass(frozen=True, slots=True)
class Effects:
    """What a handler asks its runtime to do."""

    messages: tuple[Envelope, ...] = ()
    spawned: tuple[NodeId, ...] = ()  # createNode(): new idle siblings to host
    activated: bool = False  # this node just received `start`
    terminated: bool = False  # this node flushed its queue and left
    sunk: tuple[int, ...] = ()  # tuple ids leaving the last operator

    def __add__(self, other: Effects) -> Effects:
        return Effects(
            self.messages + other.messages,
            self.spawned + other.spawned,
            self.activated or other.activated,
            self.terminated or other.terminated,
            self.sunk + other.sunk,
        )


@dataclass(slots=True)
class _Pending:
    """An operation waiting for acks: a duplication (new_addrs) or a deletion (new_addrs empty)."""

    kind: type[Message]  # DuplicationAck or DeletionAck: the ack it counts
    expected: int
    new_addrs: tuple[NodeId, ...] = ()
    acked: int = 0
    targets: frozenset[NodeId] = frozenset()  # who received the duplication
    acked_by: set[NodeId] = field(default_factory=set)
    left: set[NodeId] = field(default_factory=set)  # predecessors that announced deletion meanwhile
    deleting: set[NodeId] = field(default_factory=set)  # ... after acking: they tell the siblings


@dataclass(slots=True)
class Node:
    """Protocol state of one OI. `use_acks=False` is the broken variant of Section 4.3;
    `leave_guards=False` is the paper's protocol as written (no `Close`, no awaited deletions)."""

    id: NodeId
    n_ops: int
    is_keeper: bool = False
    active: bool = False
    terminated: bool = False
    use_acks: bool = True
    leave_guards: bool = True
    succs: set[NodeId] = field(default_factory=set)
    preds: set[NodeId] = field(default_factory=set)
    succs_to_add: set[NodeId] = field(default_factory=set)
    preds_to_add: set[NodeId] = field(default_factory=set)
    succs_to_delete: set[NodeId] = field(default_factory=set)
    preds_to_delete: set[NodeId] = field(default_factory=set)
    awaiting_close: set[NodeId] = field(default_factory=set)  # leaving preds, not yet closed
    closed_early: set[NodeId] = field(default_factory=set)  # Close received while idle
    awaiting_deletion: set[NodeId] = field(default_factory=set)  # Deletions still on their way
    queue: deque[int] = field(default_factory=deque)
    pending: _Pending | None = None
    children: int = 0
    _rr: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.id.op < self.n_ops:
            raise ValueError(f"node {self.id}: operator index outside a pipeline of {self.n_ops}")

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def initial(
        cls,
        nid: NodeId,
        layers: list[list[NodeId]],
        keeper: bool,
        acks: bool = True,
        guards: bool = True,
    ) -> Node:
        """An instance present at pipeline start, knowing the adjacent layers."""
        n_ops = len(layers)
        succs = set(layers[nid.op + 1]) if nid.op + 1 < n_ops else set()
        preds = set(layers[nid.op - 1]) if nid.op > 0 else set()
        return cls(
            nid, n_ops, keeper, True, use_acks=acks, leave_guards=guards, succs=succs, preds=preds
        )

    @classmethod
    def idle(cls, nid: NodeId, n_ops: int, acks: bool = True, guards: bool = True) -> Node:
        """A node just created by createNode(): not active until its `start` message."""
        return cls(nid, n_ops, use_acks=acks, leave_guards=guards)

    # ---- queries ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.pending is not None

    @property
    def is_last(self) -> bool:
        return self.id.op == self.n_ops - 1

    def can_decide(self) -> bool:
        return self.active and not self.terminated and not self.busy

    def can_scale_in(self) -> bool:
        return self.can_decide() and not self.is_keeper and not self.waiting_for()

    def waiting_for(self) -> set[NodeId]:
        """Leave guards: neighbours whose Close or Deletion must arrive before this node leaves."""
        return self.awaiting_close | self.awaiting_deletion

    def _side(self, other: NodeId, what: str) -> str:
        if other.op == self.id.op + 1:
            return "succ"
        if other.op == self.id.op - 1:
            return "pred"
        raise ProtocolError(f"{what} from {other} at {self.id}: not an adjacent operator")

    def _send_all(self, msg: Message) -> tuple[Envelope, ...]:
        """Alg. 1 sendInformation: one message to every node of succs U preds."""
        return tuple(Envelope(self.id, n, msg) for n in sorted(self.succs | self.preds))

    # ---- Alg. 4: scale-out initialization -----------------------------------------------------
    def scale_out(self, count: int) -> Effects:
        if count < 1:
            raise ValueError(f"node {self.id}: scale-out count must be >= 1, got {count}")
        self._require_free("scale out")
        new = tuple(self.id.child(self.children + i) for i in range(count))
        self.children += count
        out = Effects(self._send_all(Duplication(frozenset(new))), spawned=new)
        expected = len(self.succs) + len(self.preds)
        targets = frozenset(self.succs | self.preds)
        self.pending = _Pending(DuplicationAck, expected, new, targets=targets)
        if expected == 0 or not self.use_acks:
            return out + self._start_siblings()
        return out

    # ---- Alg. 8: scale-in initialization ------------------------------------------------------
    def scale_in(self) -> Effects:
        if self.is_keeper:
            raise ProtocolError(f"node {self.id} is its operator's keeper and cannot terminate")
        self._require_free("scale in")
        if self.waiting_for():
            waiting = ", ".join(sorted(map(str, self.waiting_for())))
            raise ProtocolError(f"node {self.id} cannot scale in before hearing from {waiting}")
        out = Effects(self._send_all(Deletion(self.id)))
        expected = len(self.succs) + len(self.preds)
        self.pending = _Pending(DeletionAck, expected)
        if expected == 0 or not self.use_acks:
            return out + self._terminate()
        return out

    def _require_free(self, what: str) -> None:
        if not self.can_decide():
            state = "terminated" if self.terminated else "busy" if self.busy else "not active"
            raise ProtocolError(f"node {self.id} cannot {what}: it is {state}")

    # ---- receipt ------------------------------------------------------------------------------
    def receive(self, env: Envelope) -> Effects:
        if env.dst != self.id:
            raise ProtocolError(f"message for {env.dst} delivered to {self.id}")
        if self.terminated:
            raise ProtocolError(f"{type(env.msg).__name__} from {env.src} at terminated {self.id}")
        msg = env.msg
        if isinstance(msg, Data):
            self.queue.append(msg.tid)
            return Effects()
        if isinstance(msg, Duplication):
            return self._on_duplication(env.src, msg)
        if isinstance(msg, Deletion):
            return self._on_deletion(env.src, msg)
        if isinstance(msg, Start):
            return self._on_start(env.src, msg)
        if isinstance(msg, Close):
            return self._on_close(env.src)
        return self._on_ack(env.src, msg)

    def _ack(self, to: NodeId, ack: Message) -> Effects:
        return Effects((Envelope(self.id, to, ack),)) if self.use_acks else Effects()

    def _on_duplication(self, src: NodeId, msg: Duplication) -> Effects:
        """Alg. 5: new neighbours, kept aside (*ToAdd) while this node is not active."""
        side = self._side(src, "duplication")
        if side == "succ":
            (self.succs if self.active else self.succs_to_add).update(msg.addrs)
        else:
            (self.preds if self.active else self.preds_to_add).update(msg.addrs)
        return self._ack(src, DuplicationAck())

    def _on_deletion(self, src: NodeId, msg: Deletion) -> Effects:
        """Alg. 9: forget the leaving neighbour, or remember it (*ToDelete) until started."""
        side = self._side(src, "deletion")
        if side == "succ":
            target = self.succs if self.active else self.succs_to_delete
        else:
            target = self.preds if self.active else self.preds_to_delete
        if self.active:
            target.discard(msg.addr)
        else:
            target.add(msg.addr)
        if self.leave_guards:
            self._guard_deletion(side, msg.addr)
        return self._ack(src, DeletionAck())

    def _guard_deletion(self, side: str, addr: NodeId) -> None:
        """Beyond the paper. A leaving predecessor may still send tuples: await its Close. If a
        duplication is pending and the leaver had received it, the new siblings are known to it:
        a predecessor will send them a Close too; a leaver that had already acked it also sent
        them its Deletion, which they must receive before they may leave themselves."""
        self.awaiting_deletion.discard(addr)
        if side == "pred":
            self.awaiting_close.add(addr)
        p = self.pending
        if p is None or p.kind is not DuplicationAck or addr not in p.targets:
            return
        if side == "pred":
            p.left.add(addr)
        if addr in p.acked_by:
            p.deleting.add(addr)

    def _on_close(self, src: NodeId) -> Effects:
        """Beyond the paper: a leaving predecessor's last message; its data all arrived before."""
        if not self.active:  # `start` may still name src among the leaving predecessors
            self.closed_early.add(src)
        elif src not in self.awaiting_close:
            raise ProtocolError(f"Close from {src} at {self.id}, which never saw it leave")
        self.awaiting_close.discard(src)
        return Effects()

    def _on_start(self, src: NodeId, msg: Start) -> Effects:
        """Alg. 7: initial views = initiator's views U *ToAdd minus *ToDelete; become active."""
        if self.active:
            raise ProtocolError(f"start from {src} at {self.id}, which is already active")
        self.succs = (set(msg.succs) | self.succs_to_add) - self.succs_to_delete
        self.preds = (set(msg.preds) | self.preds_to_add) - self.preds_to_delete
        self.awaiting_close = (self.awaiting_close | msg.leaving) - self.closed_early
        self.awaiting_deletion = set(msg.deleting) - self.succs_to_delete - self.preds_to_delete
        for s in (self.succs_to_add, self.preds_to_add, self.succs_to_delete, self.preds_to_delete):
            s.clear()
        self.closed_early.clear()
        self.active = True
        return Effects(activated=True)

    def _on_ack(self, src: NodeId, ack: Message) -> Effects:
        """Algs. 6 and 10: count acks; on the last one start the siblings or terminate."""
        p = self.pending
        if p is None or not isinstance(ack, p.kind):
            raise ProtocolError(f"unexpected {type(ack).__name__} from {src} at {self.id}")
        p.acked += 1
        p.acked_by.add(src)
        if p.acked < p.expected:
            return Effects()
        return self._start_siblings() if p.kind is DuplicationAck else self._terminate()

    def _start_siblings(self) -> Effects:
        """Alg. 6 lines 4-6."""
        assert self.pending is not None
        p = self.pending
        guards = (frozenset(p.left), frozenset(p.deleting)) if self.leave_guards else ()
        start = Start(frozenset(self.succs), frozenset(self.preds), *guards)
        new = self.pending.new_addrs
        self.pending = None
        return Effects(tuple(Envelope(self.id, s, start) for s in new))

    def _terminate(self) -> Effects:
        """Alg. 10 line 4-5: process (flush) every queued tuple, then leave."""
        out = self.flush()
        if self.leave_guards:
            out += Effects(tuple(Envelope(self.id, s, Close()) for s in sorted(self.succs)))
        self.pending = None
        self.terminated = True
        self.active = False
        return out + Effects(terminated=True)

    # ---- data path ----------------------------------------------------------------------------
    def process(self, choice: int | None = None) -> Effects:
        """Process the head tuple: forward it to a successor (round robin, or `choice`), or sink
        it at the last operator. Idle nodes only queue; they send nothing before `start`."""
        if not self.active or not self.queue or (not self.is_last and not self.succs):
            return Effects()
        tid = self.queue.popleft()
        if self.is_last:
            return Effects(sunk=(tid,))
        targets = sorted(self.succs)
        if choice is None:
            choice, self._rr = self._rr, self._rr + 1
        return Effects((Envelope(self.id, targets[choice % len(targets)], Data(tid)),))

    def flush(self) -> Effects:
        out = Effects()
        while self.active and self.queue and (self.is_last or self.succs):
            out += self.process()
        return out

    def emit(self, tids: Iterable[int]) -> None:
        """Tuples arriving from outside the pipeline (the source feeds operator 0)."""
        self.queue.extend(tids)
