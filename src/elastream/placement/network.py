"""The network delay an event pays between two placed operators, with the load split evenly."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from elastream.placement.model import Infrastructure, PlacementError


def link_delay_ms(infra: Infrastructure, u: str, v: str) -> float:
    """d_(u,v) of the resource graph (Sec. 3.1): 0 on one node, else the link's (or default)."""
    known = set(infra.node_names)
    for end in (u, v):
        if end not in known:
            raise PlacementError(f"network delay: unknown node {end!r}")
    if u == v:
        return 0.0
    for link in infra.links:
        if (link.src, link.dst) == (u, v) or (link.symmetric and (link.dst, link.src) == (u, v)):
            return link.delay_ms
    return infra.default_link.delay_ms


def mean_stream_delay_ms(
    infra: Infrastructure, upstream: Sequence[str], downstream: Sequence[str]
) -> float:
    """Mean delay of one event on a stream (i, j) whose replicas run on `upstream` (one node per
    replica of i) and `downstream` (of j): an even split (Sec. 6.1) sends an event from each
    replica of i with probability 1/|U| to each replica of j with probability 1/|V|, so it pays
    sum_{a in U} sum_{b in V} d(a, b) / (|U| |V|), and 0 between co-located replicas. (Eq. 4
    charges the worst pair, max d(a, b): the plan's bound, not the mean an event sees.)"""
    if not upstream or not downstream:
        raise PlacementError("network delay: a placed operator needs at least one node")
    total = sum(link_delay_ms(infra, a, b) for a in upstream for b in downstream)
    return total / (len(upstream) * len(downstream))


def stream_delays_ms(
    infra: Infrastructure,
    placement: Mapping[str, Sequence[str]],
    streams: Iterable[tuple[str, str]],
) -> dict[tuple[str, str], float]:
    """Mean delay per stream (src, dst) whose two ends are both placed; others are left out."""
    return {
        (src, dst): mean_stream_delay_ms(infra, placement[src], placement[dst])
        for src, dst in streams
        if src in placement and dst in placement
    }
