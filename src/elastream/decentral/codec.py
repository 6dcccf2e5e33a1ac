"""Encoding of protocol envelopes as one JSON line each (for the TCP transport); pure."""

from __future__ import annotations

import json
from typing import Any

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

_EMPTY = {"duplication_ack": DuplicationAck, "deletion_ack": DeletionAck, "close": Close}


def _ids(nodes: frozenset[NodeId]) -> list[str]:
    return sorted(map(str, nodes))


def _set(texts: list[str]) -> frozenset[NodeId]:
    return frozenset(NodeId.parse(t) for t in texts)


def _body(msg: Message) -> dict[str, Any]:
    match msg:
        case Duplication(addrs):
            return {"type": "duplication", "addrs": _ids(addrs)}
        case Start(succs, preds, leaving, deleting):
            return {"type": "start", "succs": _ids(succs), "preds": _ids(preds),
                    "leaving": _ids(leaving), "deleting": _ids(deleting)}  # fmt: skip
        case Deletion(addr):
            return {"type": "deletion", "addr": str(addr)}
        case Data(tid):
            return {"type": "data", "tid": tid}
    name = next(k for k, v in _EMPTY.items() if isinstance(msg, v))
    return {"type": name}


def encode(env: Envelope, sender_addr: tuple[str, int]) -> bytes:
    """One line: the envelope plus the address of the sender's host (new siblings live there)."""
    body = {"src": str(env.src), "dst": str(env.dst), "from": list(sender_addr), **_body(env.msg)}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> tuple[Envelope, tuple[str, int]]:
    try:
        d = json.loads(line)
        kind = d["type"]
        if kind == "duplication":
            msg: Message = Duplication(_set(d["addrs"]))
        elif kind == "start":
            msg = Start(*(_set(d[k]) for k in ("succs", "preds", "leaving", "deleting")))
        elif kind == "deletion":
            msg = Deletion(NodeId.parse(d["addr"]))
        elif kind == "data":
            msg = Data(int(d["tid"]))
        else:
            msg = _EMPTY[kind]()
        host, port = d["from"]
        return Envelope(NodeId.parse(d["src"]), NodeId.parse(d["dst"]), msg), (host, int(port))
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"malformed protocol line {line[:200]!r}: {exc}") from exc
