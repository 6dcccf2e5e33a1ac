"""Event-time test helpers: events with a drop-off time, a windowed pipeline, feeding it."""

from __future__ import annotations

from elastream.model.events import Event
from elastream.model.pipeline import pipeline_from_dict

WINDOW = {"time_field": "t", "kind": "tumbling", "size_s": 10, "watermark": "operator"}


def windows_pipeline(replicas: int = 3):
    return pipeline_from_dict(
        {
            "name": "windows",
            "sources": [{"name": "src", "generator": "elastream.examples.keyed:source_200"}],
            "operators": [
                {
                    "name": "stamp",
                    "function": "test_watermark:stamp",
                    "replicas": {"min": 1, "max": 2},
                    "event_time": {"field": "t"},
                },
                {
                    "name": "count",
                    "function": "elastream.model.windows:window_count",
                    "grouping": "key_hash",
                    "stateless": False,
                    "key_groups": 8,
                    "replicas": {"min": 1, "max": replicas},
                    "params": {"window": WINDOW},
                },
            ],
            "sinks": [{"name": "out"}],
            "streams": [
                {"from": "src", "to": "stamp"},
                {"from": "stamp", "to": "count"},
                {"from": "count", "to": "out"},
            ],
        }
    )


def ev(n: int, key: str, t: float) -> Event:
    return Event(n, key, 1000.0 + n, {"k": key, "t": t})


def feed(store, events: list[Event]) -> None:
    store.append("stamp", events, "src", store.produced("stamp", "src"))
