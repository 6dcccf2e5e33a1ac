"""What a run serves to operators while it goes: its Prometheus metrics endpoint (and the live
view beside it), opened and closed around the MAPE loop by `run_session`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from elastream.base.extras import MissingExtraError
from elastream.config import RunConfig
from elastream.control.mape import Observer
from elastream.control.policy import Decision
from elastream.model.objective import Objective, Verdict, judge
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot
from elastream.report.endpoint import open_endpoint
from elastream.report.prom import RunMetrics

log = logging.getLogger(__name__)


@contextmanager
def serve_metrics(
    config: RunConfig, pipeline: Pipeline, on_serving: Callable[[str], None] | None = None
) -> Iterator[RunMetrics | None]:
    """The run's metrics, served at http://HOST:PORT/metrics while the body runs (None when
    switched off with port 0, or by default when prometheus_client is not installed);
    `on_serving` is called with the endpoint's base URL once it listens."""
    settings = config.metrics
    if settings.port == 0:
        yield None
        return
    try:
        metrics = RunMetrics(pipeline, config.objective)
    except MissingExtraError as exc:
        if settings.port is not None:
            raise
        log.warning("%s; this run serves no metrics", exc)
        yield None
        return
    with open_endpoint(metrics, settings) as server:
        log.info("metrics: %s/metrics  live view: %s/", server.url, server.url)
        if on_serving is not None:
            on_serving(server.url)
        yield metrics
        if settings.linger_s > 0:
            log.info("metrics: serving %g s more for a last scrape", settings.linger_s)
            time.sleep(settings.linger_s)


class DecisionLog:
    """Observer logging the policy's decision: one INFO line per interval in which it changes a
    replica count (each change with its reason), one DEBUG line per interval otherwise."""

    def __init__(self) -> None:
        self.log = logging.getLogger("elastream.decisions")

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        current = snapshot.replicas()
        changes = [
            f"{name} {current.get(name)}->{target} ({decision.reason(name) or 'no reason given'})"
            for name, target in decision.as_dict().items()
            if current.get(name) != target
        ]
        if changes:
            self.log.info("t=%.1f s decision: %s", snapshot.t, "; ".join(changes))
        elif self.log.isEnabledFor(logging.DEBUG):
            kept = ", ".join(f"{n}={r}" for n, r in decision.as_dict().items())
            self.log.debug("t=%.1f s decision: keep %s", snapshot.t, kept)


MISSED_AT_MAX_INTERVALS = 3  # intervals in a row before the warning


class ObjectiveWatch:
    """Observer warning, in one line, when the latency objective has been missed for
    MISSED_AT_MAX_INTERVALS intervals in a row while every operator holding events waits at
    its pool's maximum: more replicas are not allowed, so the policy cannot meet it. Once per
    such stretch (again only after an interval met it)."""

    def __init__(self, objective: Objective, after: int = MISSED_AT_MAX_INTERVALS) -> None:
        self.objective, self.after = objective, after
        self.log = logging.getLogger("elastream.objective")
        self.missed_s = 0.0
        self.missed = 0
        self.warned = False

    def __call__(self, snapshot: Snapshot, decision: Decision) -> None:
        verdict = judge(snapshot, self.objective)
        if verdict.met:
            self.missed, self.missed_s, self.warned = 0, 0.0, False
        if verdict.met is not False or not at_maximum(snapshot):
            return
        self.missed += snapshot.intervals
        self.missed_s += snapshot.interval_s
        if self.missed >= self.after and not self.warned:
            self.warned = True
            self.log.warning(missed_text(snapshot, self.objective, verdict, self.missed_s))


def at_maximum(snapshot: Snapshot) -> bool:
    """Every operator with events waiting runs its pool's maximum (and one has events waiting,
    or all run at their maximum)."""
    waiting = [o for o in snapshot.operators if o.queue > 0] or list(snapshot.operators)
    return bool(waiting) and all(o.replicas >= o.max_replicas for o in waiting)


def missed_text(snapshot: Snapshot, objective: Objective, verdict: Verdict, for_s: float) -> str:
    """The warning: the objective, what was measured, for how long, and what would help."""
    if verdict.latency_ms is None:
        measured = "no event reached a sink"
    else:
        measured = f"measured {verdict.latency_ms / 1000:.2f} s"
    full = [o.name for o in snapshot.operators if o.replicas >= o.max_replicas and o.queue > 0]
    who = ", ".join(full) if full else "every operator"
    return (
        f"latency objective {objective.statistic} <= {objective.bound_s:g} s missed for "
        f"{for_s:.0f} s ({measured}) while {who} ran at the maximum replicas of its pool: "
        f"raise replicas.max there, or the objective"
    )


def ops_observers(metrics: RunMetrics | None, objective: Objective | None = None) -> list[Observer]:
    """The observers operations add to a run: the decision log, the objective's warning and
    the metrics when served."""
    watch = [ObjectiveWatch(objective)] if objective is not None else []
    return [DecisionLog(), *watch, *([metrics] if metrics is not None else [])]
