"""The live view in headless Chromium (Debian's package): the page served beside /metrics loads,
updates when a new interval arrives, and shows the values the metrics endpoint gives."""

from __future__ import annotations

import re
import subprocess

import pytest
from support.builders import snapshot, stats
from support.scrape import get, parse, value
from support.sim import SIM_PIPELINE as PIPELINE
from support.tools import BROWSER, require_tool

from elastream.control.policy import Decision
from elastream.model.pipeline import pipeline_from_dict
from elastream.report.endpoint import MetricsServer
from elastream.report.prom import RunMetrics


def dump_dom(url: str, t: float) -> str:
    """The page's DOM after its scripts ran and showed interval `t` (virtual time: one poll of
    /state and more; three tries on a loaded machine)."""
    chromium = require_tool(("chromium", "chromium-browser"), BROWSER, "chromium")
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--virtual-time-budget=3000", "--dump-dom", url]  # fmt: skip
    for _ in range(3):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        if f'data-t="{t:g}"' in done.stdout:
            return done.stdout
    raise AssertionError(f"the page never showed t={t:g}:\n{done.stdout[-3000:]}")


def shown(dom: str, key: str) -> float:
    """The value the page shows for `key` of operator `op` (data-value of its figure)."""
    match = re.search(rf'data-key="{key}" data-value="([^"]*)"', dom)
    assert match, f"{key} not on the page"
    return float(match.group(1))


def feed(metrics: RunMetrics, t: float, replicas: int, target: int, queue: int) -> None:
    op = stats("op", replicas=replicas, pool=(1, 3), received=200, processed=150, queue=queue,
               et_s=0.01, busy_s=1.5)  # fmt: skip
    decision = Decision.of({"op": target}, {"op": f"queue={queue}"})
    metrics(snapshot(op, t=t, td=2.0, sources={"src": 200}), decision)


def test_the_page_loads_updates_and_matches_the_metrics():
    metrics = RunMetrics(pipeline_from_dict(PIPELINE, "test"))
    with MetricsServer(metrics, "127.0.0.1", 0) as server:
        feed(metrics, 2.0, replicas=1, target=2, queue=100)
        first = dump_dom(server.url + "/", 2.0)
        assert 'data-operator="op"' in first
        feed(metrics, 4.0, replicas=2, target=2, queue=40)
        dom = dump_dom(server.url + "/", 4.0)  # updated: the second interval
        sample = parse(get(server.url + "/metrics")[1])
        labels = {"pipeline": "one", "operator": "op"}
        assert shown(dom, "queue") == value(sample, "elastream_operator_queue_events", **labels)
        assert shown(dom, "replicas") == value(
            sample, "elastream_operator_replicas_active", **labels
        )
        assert shown(dom, "rate") == 150 / 2.0
        assert shown(dom, "service_ms") == pytest.approx(10.0)
        assert "1 → 2" in dom and "queue=100" in dom  # the decision timeline with its reason
        points = re.findall(r'data-line="queue" points="([^"]*)"', dom)
        assert points and len(points[0].split()) == 2  # two intervals charted
