"""Addresses and messages of the scaling protocol (Section 3.1's send(type, ctnt, dest))."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class NodeId:
    """Address of an operator instance: its operator index and a path unique without coordination.

    Initial instance j of operator i is (i, (j,)); the c-th sibling created by X is X.path + (c,),
    so ids are never reused and need no central allocator."""

    op: int
    path: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.op < 0 or not self.path or min(self.path) < 0:
            raise ValueError(f"invalid node id op={self.op} path={self.path}")

    def child(self, seq: int) -> NodeId:
        return NodeId(self.op, (*self.path, seq))

    def __str__(self) -> str:
        return f"o{self.op}/{'.'.join(map(str, self.path))}"

    @classmethod
    def parse(cls, text: str) -> NodeId:
        op, _, path = text.partition("/")
        if not op.startswith("o") or not path:
            raise ValueError(f"not a node id: {text!r}")
        return cls(int(op[1:]), tuple(int(p) for p in path.split(".")))


@dataclass(frozen=True, slots=True)
class Duplication:
    """Alg. 1/4: the sender created `addrs`; the receiver adds them as neighbours."""

    addrs: frozenset[NodeId]


@dataclass(frozen=True, slots=True)
class DuplicationAck:
    """Alg. 5 line 14."""


@dataclass(frozen=True, slots=True)
class Start:
    """Alg. 6 line 5: the initiator's neighbour sets, sent to each new sibling. Beyond the paper
    (the leave guards): `leaving`, predecessors that learnt the new sibling and then announced
    their deletion (the sibling awaits their `Close`); `deleting`, neighbours whose `Deletion` is
    on its way to the new sibling (they sent it after acknowledging the duplication)."""

    succs: frozenset[NodeId]
    preds: frozenset[NodeId]
    leaving: frozenset[NodeId] = frozenset()
    deleting: frozenset[NodeId] = frozenset()


@dataclass(frozen=True, slots=True)
class Deletion:
    """Alg. 8 line 4: `addr` (the sender) is about to terminate."""

    addr: NodeId


@dataclass(frozen=True, slots=True)
class DeletionAck:
    """Alg. 9 line 14."""


@dataclass(frozen=True, slots=True)
class Close:
    """Beyond the paper: a leaving node's last message to each successor, after its flush (the
    end-of-stream a TCP connection close gives). A node that acknowledged a predecessor's
    deletion does not start its own deletion before that predecessor's Close has arrived."""


@dataclass(frozen=True, slots=True)
class Data:
    """One data record (tuple) travelling along the pipeline; `tid` identifies it."""

    tid: int


Message = Duplication | DuplicationAck | Start | Deletion | DeletionAck | Close | Data


@dataclass(frozen=True, slots=True)
class Envelope:
    """A message on the FIFO channel src -> dst."""

    src: NodeId
    dst: NodeId
    msg: Message
