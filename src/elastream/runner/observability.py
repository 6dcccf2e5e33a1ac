"""What a run serves to operators while it goes: its Prometheus metrics endpoint (and the live
view beside it), opened and closed around the MAPE loop by `run_session`."""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from elastream.base.extras import MissingExtraError
from elastream.config import RunConfig
from elastream.config.ops import DEFAULT_METRICS_PORT, MetricsSettings
from elastream.control.mape import Observer
from elastream.control.policy import Decision
from elastream.model.pipeline import Pipeline
from elastream.model.snapshot import Snapshot
from elastream.report.endpoint import MetricsServer
from elastream.report.prom import RunMetrics

log = logging.getLogger(__name__)
TOKEN_ENV = "ELASTREAM_METRICS_TOKEN"


def metrics_token(settings: MetricsSettings) -> str | None:
    """The configured bearer token, else the environment's, else None."""
    if settings.token is not None:
        return settings.token.get_secret_value() or None
    return os.environ.get(TOKEN_ENV) or None


def bind(metrics: RunMetrics, settings: MetricsSettings) -> MetricsServer:
    """The server on the configured port; on the default port, a free one if it is taken."""
    token = metrics_token(settings)
    if settings.port is not None:
        try:
            return MetricsServer(metrics, settings.host, settings.port, token)
        except OSError as exc:
            raise RuntimeError(
                f"metrics endpoint: cannot listen on {settings.host}:{settings.port} "
                f"({exc.strerror}); choose another --metrics-port, or 0 for none"
            ) from None
    try:
        return MetricsServer(metrics, settings.host, DEFAULT_METRICS_PORT, token)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        log.warning("metrics: port %d is taken; serving on a free port", DEFAULT_METRICS_PORT)
        return MetricsServer(metrics, settings.host, 0, token)


@contextmanager
def serve_metrics(config: RunConfig, pipeline: Pipeline) -> Iterator[RunMetrics | None]:
    """The run's metrics, served at http://HOST:PORT/metrics while the body runs (None when
    switched off with port 0, or by default when prometheus_client is not installed)."""
    settings = config.metrics
    if settings.port == 0:
        yield None
        return
    try:
        metrics = RunMetrics(pipeline)
    except MissingExtraError as exc:
        if settings.port is not None:
            raise
        log.warning("%s; this run serves no metrics", exc)
        yield None
        return
    with bind(metrics, settings) as server:
        log.info("metrics: %s/metrics  live view: %s/", server.url, server.url)
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


def ops_observers(metrics: RunMetrics | None) -> list[Observer]:
    """The observers operations add to a run: the decision log, and the metrics when served."""
    return [DecisionLog(), *([metrics] if metrics is not None else [])]
