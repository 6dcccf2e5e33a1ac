"""I/O: a TcpHost in its own process, driven over stdin/stdout with JSON lines.

    python -m reproductions.decentralized.tcp_process --sizes 2,2,1 --op 2

hosts the initial instances of operator `op` of a pipeline with those sizes, prints
{"addr": [host, port]}, then reads commands: {"directory": {node: [host, port]}} (addresses of
the other nodes), {"scale_out": [node, k]}, {"scale_in": node}, "stats" (counters, to detect
quiescence), "dump" (final views, then exit)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from elastream.decentral.memory import Cluster
from elastream.decentral.messages import NodeId
from elastream.runtime.tcp.host import TcpHost


def _views(host: TcpHost) -> dict[str, dict[str, object]]:
    return {
        str(n): {
            "succs": sorted(map(str, s.succs)),
            "preds": sorted(map(str, s.preds)),
            "active": s.active,
            "terminated": s.terminated,
        }
        for n, s in host.nodes.items()
    }


def _stats(host: TcpHost) -> dict[str, object]:
    busy = any(n.busy or n.waiting_for() for n in host.nodes.values() if not n.terminated)
    return {"sent": sum(host.sent.values()), "received": host.received, "busy": busy,
            "sunk": len(host.sunk)}  # fmt: skip


async def serve(sizes: list[int], op: int) -> None:
    layout = Cluster.pipeline(sizes)
    host = TcpHost({n: s for n, s in layout.nodes.items() if n.op == op})
    addr = await host.start()
    print(json.dumps({"addr": list(addr)}), flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    pumping = asyncio.create_task(_pump(host))
    while line := await reader.readline():
        cmd = json.loads(line)
        if isinstance(cmd, dict) and "directory" in cmd:
            host.learn({NodeId.parse(k): (h, int(p)) for k, (h, p) in cmd["directory"].items()})
        elif isinstance(cmd, dict) and "scale_out" in cmd:
            nid, count = cmd["scale_out"]
            host.apply(host.nodes[NodeId.parse(nid)].scale_out(int(count)))
        elif isinstance(cmd, dict) and "scale_in" in cmd:
            host.act(host.nodes[NodeId.parse(cmd["scale_in"])].scale_in)
        elif cmd == "stats":
            print(json.dumps(_stats(host)), flush=True)
        elif cmd == "dump":
            out = {"views": _views(host), "sunk": host.sunk, "errors": host.errors,
                   "sent": dict(host.sent)}  # fmt: skip
            print(json.dumps(out), flush=True)
            break
        else:
            raise ValueError(f"unknown command {cmd!r} on stdin")
    pumping.cancel()
    await host.stop()


async def _pump(host: TcpHost) -> None:
    while True:
        host.pump()
        await asyncio.sleep(0.002)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", required=True, help="initial instances per operator, e.g. 2,2,1")
    ap.add_argument("--op", type=int, required=True, help="the operator this process hosts")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if not 0 <= args.op < len(sizes):
        ap.error(f"--op {args.op} is not an operator of a pipeline of {len(sizes)}")
    asyncio.run(serve(sizes, args.op))


if __name__ == "__main__":
    main()
