"""The live view in headless Chromium (Debian's package): the page served beside /metrics draws
the pipeline's graph (sources -> operators -> sinks, each operator's replicas, queue and busy
share) and charts with a time axis and units, the latency against the objective; it updates
when a new interval arrives and shows the values the metrics endpoint gives."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace

from support.builders import snapshot, stats
from support.scrape import get, parse, value
from support.sim import SIM_PIPELINE as PIPELINE
from support.tools import BROWSER, require_tool

from elastream.control.policy import Decision
from elastream.model.objective import Objective
from elastream.model.pipeline import pipeline_from_dict
from elastream.report.endpoint import MetricsServer
from elastream.report.prom import RunMetrics

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")  # fmt: skip


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium with a new, empty profile (CI requires the browser: support.tools)."""
    browser = require_tool(("chromium", "chromium-browser"), BROWSER, "chromium")
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    cmd = [browser, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def dump_dom(tmp_path, url: str, t: float) -> str:
    """The page's DOM after its scripts ran and showed interval `t` (virtual time: one poll of
    /state and more; three tries on a loaded machine)."""
    for _ in range(3):
        done = chromium(tmp_path, "--virtual-time-budget=3000", "--dump-dom", url)
        assert done.returncode == 0, done.stderr[-2000:]
        if f'data-t="{t:g}"' in done.stdout:
            return done.stdout
    raise AssertionError(f"the page never showed t={t:g}:\n{done.stdout[-3000:]}")


def field(dom: str, node: str, name: str) -> tuple[str, str]:
    """(text, data-value) of field `name` in the graph node `node`."""
    group = re.search(rf'<g [^>]*data-node="{node}"[^>]*>(.*?)</g>', dom, re.DOTALL)
    assert group, f"no node {node!r} in the graph"
    found = re.search(rf'data-field="{name}"[^>]*data-value="([^"]*)"[^>]*>([^<]*)<', group[1])
    assert found, f"{node}: no {name}"
    return found[2], found[1]


def points(dom: str, chart: str, series: str) -> list[str]:
    """The points of the polylines of `series` in chart `chart`."""
    figure = re.search(rf'<figure[^>]*id="{chart}"(.*?)</figure>', dom, re.DOTALL)
    assert figure, f"no chart {chart}"
    lines = re.findall(rf'<polyline points="([^"]*)"[^>]*data-series="{series}"', figure[1])
    return [p for line in lines for p in line.split()]


def feed(metrics: RunMetrics, t: float, replicas: int, target: int, queue: int, p99: float) -> None:
    op = stats("op", replicas=replicas, pool=(1, 3), received=200, processed=150, queue=queue,
               service_time_s=0.01, busy_s=1.5)  # fmt: skip
    reason = f"queue {queue} above 50: one replica more"
    decision = Decision.of({"op": target}, {"op": reason}, {"op": f"queue={queue} step=+1"})
    snap = replace(snapshot(op, t=t, interval_s=2.0, sources={"src": 200}), sinks=(("sink", 150),),
                   latency_ms_mean=p99 / 2, latency_ms_p99=p99)  # fmt: skip
    metrics(snap, decision)


def test_the_page_draws_the_graph_and_the_latency_chart_and_updates(tmp_path):
    objective = Objective(latency_p99_s=0.5)
    metrics = RunMetrics(pipeline_from_dict(PIPELINE, "test"), objective)
    with MetricsServer(metrics, "127.0.0.1", 0) as server:
        feed(metrics, 2.0, replicas=1, target=2, queue=100, p99=800.0)
        first = dump_dom(tmp_path, server.url + "/", 2.0)
        # the graph: every node of the pipeline, by kind, and its edges
        for node, kind in (("src", "source"), ("op", "operator"), ("sink", "sink")):
            assert re.search(rf'data-node="{node}" data-kind="{kind}"', first), node
        assert 'data-edge="src-&gt;op"' in first and 'data-edge="op-&gt;sink"' in first
        assert field(first, "op", "replicas") == ("replicas 1 / 3 → 2", "1")
        assert field(first, "op", "queue") == ("queue 100 · busy 75 %", "100")  # 1.5 s of 2 s
        assert field(first, "src", "rate")[0] == "100 ev/s"  # 200 events in 2 s
        assert field(first, "sink", "rate")[0] == "75.0 ev/s in"
        # the latency chart: a point per interval for the mean and the p99, the objective line
        assert len(points(first, "chart-latency", "mean")) == 1
        assert len(points(first, "chart-latency", "p99")) == 1
        assert 'data-hline="objective" data-value="500"' in first
        assert 'data-unit="ms"' in first and "time since start (s)" in first
        assert "missed" in first  # 800 ms > 500 ms

        feed(metrics, 4.0, replicas=2, target=2, queue=40, p99=300.0)
        dom = dump_dom(tmp_path, server.url + "/", 4.0)  # updated: the second interval
        assert field(dom, "op", "replicas") == ("replicas 2 / 3", "2")
        assert len(points(dom, "chart-latency", "mean")) == 2
        assert len(points(dom, "chart-latency", "p99")) == 2
        assert len(points(dom, "chart-replicas", "op")) == 2
        assert re.search(r'class="met">met<', dom)  # 300 ms ≤ 500 ms
        sample = parse(get(server.url + "/metrics")[1])
        labels = {"pipeline": "one", "operator": "op"}
        assert float(field(dom, "op", "queue")[1]) == value(
            sample, "elastream_operator_queue_events", **labels
        )
        assert float(field(dom, "op", "replicas")[1]) == value(
            sample, "elastream_operator_replicas_active", **labels
        )
        # the decision timeline: the reason in words, the policy's figures as its tooltip
        row = re.search(r'<td class="reason" title="([^"]*)">([^<]*)</td>', dom)
        assert row and row.groups() == ("queue=100 step=+1", "queue 100 above 50: one replica more")
        assert "1 → 2" in dom


def test_a_screenshot_of_the_live_view_renders(tmp_path):
    """The page draws in a real browser window (the picture docs/img/live-view.png is made
    the same way, from a demo run: docs/operations.md)."""
    metrics = RunMetrics(pipeline_from_dict(PIPELINE, "test"), Objective(latency_p99_s=0.5))
    with MetricsServer(metrics, "127.0.0.1", 0) as server:
        for k in range(1, 6):
            feed(metrics, 2.0 * k, replicas=min(k, 3), target=min(k + 1, 3), queue=20 * k,
                 p99=150.0 * k)  # fmt: skip
        shot = tmp_path / "live.png"
        done = chromium(tmp_path, "--window-size=1200,900", "--virtual-time-budget=3000",
                        f"--screenshot={shot}", server.url + "/")  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one
