"""Operators of the complex tweet application (PSPS Fig. 12): split by kind, annotate."""

from __future__ import annotations

from collections.abc import Iterable

from elastream.examples.tweets.payload import required_payload
from elastream.model.events import Emit, Event

NEWS_TOPICS = frozenset({"news", "politics", "health", "tech"})  # information; the rest: opinion


def route_by_kind(events: list[Event]) -> Iterable[Emit]:
    """Split classified tweets: news-like topics to stream `news`, the others to `opinion`."""
    out = []
    for e in events:
        p = required_payload(e, "route_by_kind", ("topic",))
        out.append(e.emit(p, stream="news" if p["topic"] in NEWS_TOPICS else "opinion"))
    return out


def annotate(events: list[Event], field: str, value: str) -> Iterable[Emit]:
    """Add `field: value` to each tweet (an analysis step whose cost is its service time)."""
    return [
        e.emit({**required_payload(e, f"annotate {field}", ("text",)), field: value})
        for e in events
    ]
