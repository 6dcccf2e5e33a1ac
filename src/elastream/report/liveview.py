"""The live view's data (`/state`): the pipeline's graph, the latest interval of every node,
the recent intervals for the charts and the recent decisions, in plain names and units."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from elastream.control.policy import Decision
from elastream.model.objective import Objective, judge
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot
from elastream.report.series import per_second, service_ms, utilization

# a decision that changed a replica count: (t, operator, from, to, reason, detail)
Change = tuple[float, str, int, int, str, str]


def graph_of(pipeline: Pipeline) -> dict[str, Any]:
    """The pipeline's nodes by kind and its edges (each node pair once), for the drawing."""
    edges = dict.fromkeys((e.source, e.target) for e in pipeline.streams)
    return {
        "sources": list(pipeline.source_names),
        "operators": list(pipeline.topological_order),
        "sinks": list(pipeline.sink_names),
        "edges": [list(edge) for edge in edges],
    }


def point(snap: Snapshot, decision: Decision, objective: Objective | None) -> dict[str, Any]:
    """One interval as the live view shows it: rates in events per second, latencies in ms,
    each operator's replicas, queue, busy share and the decision's reason (its detail in the
    policy's symbols beside it, for the tooltip)."""
    td, targets = snap.interval_s, decision.as_dict()
    backlog = dict(snap.source_backlog)
    return {
        "t": snap.t,
        "interval_s": td,
        "input_rate": per_second(snap.source_events, td),
        "output_rate": per_second(snap.completed, td),
        "latency_ms_mean": snap.latency_ms_mean,
        "latency_ms_p99": snap.latency_ms_p99,
        "objective_met": None if objective is None else judge(snap, objective).met,
        "sources": [
            {"name": name, "rate": per_second(n, td), "backlog": backlog.get(name)}
            for name, n in snap.sources
        ],
        "sinks": [{"name": name, "rate": per_second(n, td)} for name, n in snap.sinks],
        "hosts": [
            {"id": h.host_id, "up": h.up, "btus": h.btus, "btu_left_s": h.btu_left_s}
            for h in snap.hosts
        ],
        "host_cost": snap.host_cost,
        "operators": [
            {
                "name": o.name,
                "rate": per_second(o.processed, td),
                "queue": o.queue,
                "replicas": o.replicas,
                "pool": o.max_replicas,
                "target": targets.get(o.name),
                "service_ms": service_ms(o),
                "busy": utilization(o, td),
                "reason": decision.reason(o.name),
                "detail": decision.detail(o.name),
            }
            for o in snap.operators
        ],
    }


def live_state(
    pipeline: str,
    graph: dict[str, Any],
    objective: Objective | None,
    recent: Sequence[tuple[Snapshot, Decision]],
    changes: Iterable[Change],
) -> dict[str, Any]:
    """The live view's JSON: the graph, the objective, the latest interval at the top level,
    the recent ones in `series` (oldest first) and the replica changes in `decisions`."""
    points = [point(snapshot, decision, objective) for snapshot, decision in recent]
    latest = points[-1] if points else {"t": None, "operators": [], "hosts": []}
    bound = (
        None
        if objective is None
        else {
            "statistic": objective.statistic,
            "bound_ms": objective.bound_s * 1000,
        }
    )
    return {
        "pipeline": pipeline,
        "graph": graph,
        "objective": bound,
        **latest,
        "series": [
            {
                **{key: p[key] for key in SERIES_KEYS},
                "operators": {o["name"]: o for o in p["operators"]},
            }
            for p in points
        ],
        "decisions": [
            {"t": t, "operator": op, "from": a, "to": b, "reason": why, "detail": detail}
            for t, op, a, b, why, detail in changes
        ],
    }


SERIES_KEYS = ("t", "input_rate", "output_rate", "latency_ms_mean", "latency_ms_p99")
