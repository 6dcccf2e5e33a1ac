"""Kahn's topological order of a directed graph: the pipeline's, Caladrius' and ODRP's."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence


def kahn_order(
    names: Sequence[str], edges: Iterable[tuple[str, str]]
) -> tuple[list[str], list[str]]:
    """`names` in an order where every edge's source comes before its target (ready nodes taken
    first come, first served, in the order given), and, sorted, the names it could not order: on
    or behind a cycle (none for a DAG). Every edge counts, duplicates too; an edge with an end
    outside `names` is left out."""
    known = set(names)
    indegree = dict.fromkeys(names, 0)
    outgoing: dict[str, list[str]] = {name: [] for name in names}
    for src, dst in edges:
        if src in known and dst in known:
            indegree[dst] += 1
            outgoing[src].append(dst)
    ready = deque(name for name in names if indegree[name] == 0)
    order: list[str] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for dst in outgoing[node]:
            indegree[dst] -= 1
            if indegree[dst] == 0:
                ready.append(dst)
    placed = set(order)
    return order, sorted(name for name in names if name not in placed)
