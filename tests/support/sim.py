"""Simulator test builders: one-operator, chain and filter-split pipelines, exact settings,
traces."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from elastream.config import RunConfig
from elastream.model.pipeline import pipeline_from_dict
from elastream.runtime.sim import SimSettings
from elastream.workloads.trace import Trace


def replace(settings: SimSettings, **changes) -> SimSettings:
    """A validated copy of simulator settings with some fields changed."""
    return SimSettings(**(settings.model_dump() | changes))


SYN = "elastream.examples.synthetic"


EXACT = SimSettings(measure_cpu=False)  # service times only: exactly reproducible


def one_operator(grouping="load_balancing", pool=(1, 4), service_ms=10.0):
    """src -> op -> sink; one replica serves 1000/service_ms events/s."""
    return pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": [
                {
                    "name": "op",
                    "function": f"{SYN}:passthrough",
                    "grouping": grouping,
                    "service_time_ms": service_ms,
                    "replicas": {"min": pool[0], "max": pool[1]},
                }
            ],
            "sinks": [{"name": "sink"}],
            "streams": [{"from": "src", "to": "op"}, {"from": "op", "to": "sink"}],
        }
    )


def chain(service_ms, replicas=1):
    """src -> a -> b -> ... -> sink, pass-through operators of these service times, r fixed."""
    names = [chr(ord("a") + i) for i in range(len(service_ms))]
    ops = [
        {
            "name": name,
            "function": f"{SYN}:passthrough",
            "service_time_ms": ms,
            "replicas": {"min": replicas, "max": replicas},
        }
        for name, ms in zip(names, service_ms, strict=True)
    ]
    nodes = ["src", *names, "sink"]
    return pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": ops,
            "sinks": [{"name": "sink"}],
            "streams": [{"from": a, "to": b} for a, b in pairwise(nodes)],
        }
    )


def filter_split_pipeline(pool=(1, 4)):
    """src -> parse -> evens (filters half) -> split (low 70% / high 30%) -> enrich -> sinks."""
    ops = [
        ("parse", "passthrough", 2.0),
        ("evens", "drop_odd", 3.0),
        ("split", "split_by_value", 4.0),
        ("enrich", "passthrough", 12.0),
    ]
    return pipeline_from_dict(
        {
            "sources": [{"name": "src", "generator": f"{SYN}:generate"}],
            "operators": [
                {
                    "name": name,
                    "function": f"{SYN}:{fn}",
                    "service_time_ms": ms,
                    "replicas": {"min": pool[0], "max": pool[1]},
                }
                for name, fn, ms in ops
            ],
            "sinks": [{"name": "low_sink"}, {"name": "high_sink"}],
            "streams": [
                {"from": "src", "to": "parse"},
                {"from": "parse", "to": "evens"},
                {"from": "evens", "to": "split"},
                {"from": "split", "to": "low_sink", "name": "low"},
                {"from": "split", "to": "enrich", "name": "high"},
                {"from": "enrich", "to": "high_sink"},
            ],
        }
    )


def config(**values):
    base = {
        "policy": "static",
        "replicas": 1,
        "interval_s": 2.0,
        "event_timeout_s": None,
        "queue_capacity": None,
    }
    return RunConfig(**{**base, **values})


def constant(rate, seconds):
    return Trace(np.full(seconds, float(rate)))


def drive(engine, decisions):
    """Run an engine by hand: `decisions` maps an interval index to a Decision."""
    engine.start()
    snapshots = []
    while not engine.finished():
        if len(snapshots) in decisions:
            engine.enact(decisions[len(snapshots)])
        snapshots.append(engine.collect())
    return snapshots, engine.totals()


SIM_PIPELINE = {
    "name": "one",
    "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate", "rate": 150}],
    "operators": [
        {
            "name": "op",
            "function": "elastream.examples.synthetic:passthrough",
            "service_time_ms": 10,
            "replicas": {"min": 1, "max": 3},
        }
    ],
    "sinks": [{"name": "sink"}],
    "streams": [{"from": "src", "to": "op"}, {"from": "op", "to": "sink"}],
}
