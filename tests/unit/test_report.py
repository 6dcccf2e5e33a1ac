"""Run outputs: summary.json, timeseries.csv, intervals.csv, report.html and the live table."""

from __future__ import annotations

import io
import json
import re
import subprocess
from dataclasses import fields, replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console
from support.builders import linear_pipeline, snapshot, stats
from support.paths import ROOT
from support.tools import BROWSER, require_tool

from elastream.control.controller import Controller
from elastream.control.mape import RunResult, run_mape
from elastream.control.policy import Decision
from elastream.model.metrics import RunTotals, Summary, summarize
from elastream.model.metrics import interval_rows as metric_interval_rows
from elastream.model.pipeline import pipeline_from_dict
from elastream.model.snapshot import HostClock, OperatorStats, Snapshot
from elastream.report import (
    INTERVAL_COLUMNS,
    TIMESERIES_COLUMNS,
    LiveTable,
    load_intervals,
    load_summary,
    load_timeseries,
    write_outputs,
)
from elastream.report.series import utilization
from elastream.report.svg import BOTTOM, LEFT, RIGHT, TOP, WIDTH

PIPELINE = pipeline_from_dict(linear_pipeline(2, pool=(1, 4)))
TD = 2.0
# Per interval: λ_G, op1 replicas, op2 replicas, op2 queue, latency (None: nothing reached a sink)
PLAN = [
    (100, 1, 1, 0, 12.5),
    (180, 1, 2, 40, 30.0),
    (260, 2, 3, 90, 55.25),
    (240, 3, 3, 10, None),
    (120, 2, 2, 0, 18.0),
    (60, 1, 1, 0, 9.75),
]
SETTINGS = {"policy": "psps", "interval_s": TD, "out": Path("runs/x"), "guards": {"dead_band": 0.1}}


def make_snapshot(k: int) -> Snapshot:
    lam, r1, r2, q2, latency = PLAN[k]
    # op1 reports per-replica utilisations (Eq. 5 figures); op2 only its busy time.
    op1 = stats(
        "op1",
        replicas=r1,
        pool=(1, 4),
        received=lam,
        frm={"src": lam},
        processed=lam,
        service_time_s=0.004 if k != 3 else None,
    )
    op1 = replace(
        op1,
        utilization=tuple(0.2 + 0.1 * j + 0.05 * k for j in range(r1)),
        dropped_timeout=k % 2,
    )
    op2 = stats(
        "op2",
        replicas=r2,
        pool=(1, 4),
        received=lam,
        frm={"op1": lam},
        processed=lam - q2 // 2,
        emitted=lam - q2 // 2 - 1,
        queue=q2,
        service_time_s=0.010,
        busy_s=0.9 * r2 * k / 5,
    )
    op2 = replace(op2, dropped_overflow=3 * k)
    snap = snapshot(
        op1, op2, t=TD * (k + 1), interval_s=TD, sources={"src": lam}, completed=lam - q2 // 2
    )
    return replace(snap, sink_events=snap.completed - 1, latency_ms_mean=latency)


def make_decision(k: int) -> Decision:
    nxt = PLAN[min(k + 1, len(PLAN) - 1)]
    return Decision.of({"op1": nxt[1], "op2": nxt[2]}, {"op2": f"because {k}"})


def make_result(n: int = len(PLAN)) -> RunResult:
    snaps = [make_snapshot(k) for k in range(n)]
    totals = RunTotals(
        events_in=sum(s.source_events for s in snaps),
        events_out=sum(s.sink_events for s in snaps),
        completed=sum(s.completed for s in snaps),
        filtered=0,
        dropped_timeout=sum(o.dropped_timeout for s in snaps for o in s.operators),
        dropped_overflow=sum(o.dropped_overflow for s in snaps for o in s.operators),
        latency_ms_mean=24.0,
        latency_ms_p99=55.0,
    )
    decisions = [make_decision(k) for k in range(n)]
    return RunResult(
        snaps, decisions, totals, summarize(snaps, totals, PIPELINE.overprovisioned_replicas)
    )


def write(tmp_path: Path, result: RunResult | None = None, title: str = "Test run") -> Path:
    out = tmp_path / "run"
    write_outputs(result or make_result(), PIPELINE, out, title=title, settings=SETTINGS)
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[RunResult, Path]:
    """The hand-built run written once (drawing the figures is the slow part)."""
    result = make_result()
    return result, write(tmp_path_factory.mktemp("report"), result, title="Run <A&B>")


def expected_utilization(snap: Snapshot, name: str) -> float:
    o = snap.op(name)
    if o.utilization:  # over the active replicas, a retired one's work included
        return sum(o.utilization) / o.replicas
    return o.busy_s / (o.replicas * snap.interval_s)


# --- summary.json ---------------------------------------------------------------------------


def test_write_outputs_returns_the_written_files(tmp_path):
    paths = write_outputs(make_result(), PIPELINE, tmp_path / "a" / "b", title="t", settings={})
    assert set(paths) == {"summary", "timeseries", "intervals", "report"}
    assert all(p.is_file() and p.parent == tmp_path / "a" / "b" for p in paths.values())


def test_summary_json_has_every_summary_field_with_its_value(written):
    result, out = written
    data = load_summary(out)
    for name, value in result.summary.as_dict().items():
        assert data[name] == pytest.approx(value) if value is not None else data[name] is None
    assert data["title"] == "Run <A&B>"
    assert data["pipeline"] == "linear"
    assert data["policy"] == "psps"
    assert data["settings"] == {
        "policy": "psps",
        "interval_s": TD,
        "out": "runs/x",
        "guards": SETTINGS["guards"],
    }
    # The summary's own figures come from the snapshots, not from constants in the writer.
    assert data["replicas_max"] == max(p[1] + p[2] for p in PLAN)
    assert data["events_dropped_overflow"] == sum(3 * k for k in range(len(PLAN)))


def test_summary_json_per_operator_aggregates(written):
    result, out = written
    ops = load_summary(out)["operators"]
    assert list(ops) == ["op1", "op2"]
    for name in ("op1", "op2"):
        seq = [s.op(name) for s in result.snapshots]
        agg = ops[name]
        assert agg["replicas_mean"] == pytest.approx(sum(o.replicas for o in seq) / len(seq))
        assert agg["replicas_max"] == max(o.replicas for o in seq)
        assert agg["max_replicas"] == 4
        assert agg["processed"] == sum(o.processed for o in seq)
        assert agg["received"] == sum(o.received for o in seq)
        drops = sum(o.dropped_timeout + o.dropped_overflow for o in seq)
        assert agg["dropped"] == drops
        assert agg["queue_max"] == max(o.queue for o in seq)
        util = [expected_utilization(s, name) for s in result.snapshots]
        assert agg["utilization_mean"] == pytest.approx(sum(util) / len(util))
    # op1's et is unknown in one interval: the mean is over the known ones only.
    assert ops["op1"]["service_ms_mean"] == pytest.approx(4.0)


def test_settings_that_are_not_json_data_are_named(tmp_path):
    with pytest.raises(TypeError, match=r"settings\.bad"):
        write_outputs(make_result(), PIPELINE, tmp_path, title="t", settings={"bad": object()})


# --- timeseries.csv / intervals.csv ---------------------------------------------------------


def test_timeseries_header_starts_with_the_documented_columns(written):
    header = (written[1] / "timeseries.csv").read_text().splitlines()[0]
    assert header.startswith(
        "t,operator,received,processed,queue,replicas,service_ms,utilization,"
        "target,dropped_timeout,dropped_overflow,emitted"
    )


def test_timeseries_one_row_per_interval_and_operator_with_the_snapshot_values(written):
    result, out = written
    frame = load_timeseries(out)
    assert list(frame.columns) == list(TIMESERIES_COLUMNS)
    assert len(frame) == len(PLAN) * 2
    rows = iter(frame.itertuples(index=False))
    for snap, decision in zip(result.snapshots, result.decisions, strict=True):
        for o in snap.operators:
            row = next(rows)
            assert (row.t, row.operator) == (snap.t, o.name)
            assert (row.received, row.processed, row.queue, row.replicas) == (
                o.received,
                o.processed,
                o.queue,
                o.replicas,
            )
            assert (row.dropped_timeout, row.dropped_overflow, row.emitted) == (
                o.dropped_timeout,
                o.dropped_overflow,
                o.emitted,
            )
            assert row.target == decision.as_dict()[o.name]
            assert row.utilization == pytest.approx(expected_utilization(snap, o.name))
            if o.service_time_s is None:
                assert pd_isna(row.service_ms)
            else:
                assert row.service_ms == pytest.approx(o.service_time_s * 1000)


def pd_isna(value) -> bool:
    return value != value  # NaN is the only value unequal to itself


def test_unknown_et_is_a_blank_cell(written):
    lines = (written[1] / "timeseries.csv").read_text().splitlines()
    op1_interval_4 = next(line for line in lines if line.startswith(f"{4 * TD},op1,"))
    assert op1_interval_4.split(",")[TIMESERIES_COLUMNS.index("service_ms")] == ""


def test_intervals_csv_rates_and_latency(written):
    result, out = written
    frame = load_intervals(out)
    assert len(frame) == len(PLAN)
    for row, snap in zip(frame.itertuples(index=False), result.snapshots, strict=True):
        assert row.input_rate == pytest.approx(snap.source_events / TD)
        assert row.output_rate == pytest.approx(snap.completed / TD)
        assert row.replicas_total == sum(o.replicas for o in snap.operators)
        if snap.latency_ms_mean is None:
            assert pd_isna(row.latency_ms_mean)
        else:
            assert row.latency_ms_mean == pytest.approx(snap.latency_ms_mean)


# --- bad input and readers ------------------------------------------------------------------


def test_decisions_must_match_snapshots(tmp_path):
    result = make_result()
    short = replace(result, decisions=result.decisions[:-1])
    with pytest.raises(ValueError, match="6 snapshots but 5 decisions"):
        write_outputs(short, PIPELINE, tmp_path, title="t", settings={})


def test_operator_outside_the_pipeline_is_named(tmp_path):
    result = make_result()
    ghost = replace(result.snapshots[2], operators=(stats("ghost"),))
    bad = replace(result, snapshots=[*result.snapshots[:2], ghost, *result.snapshots[3:]])
    with pytest.raises(ValueError, match=r"snapshot 2 .*'ghost'"):
        write_outputs(bad, PIPELINE, tmp_path, title="t", settings={})


def test_readers_name_the_missing_or_broken_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="summary.json"):
        load_summary(tmp_path)
    (tmp_path / "summary.json").write_text("{\n  oops")
    with pytest.raises(ValueError, match=r"summary.json: not valid JSON \(line 2"):
        load_summary(tmp_path)
    (tmp_path / "timeseries.csv").write_text("t,operator\n1.0,op1\n")
    with pytest.raises(ValueError, match=r"timeseries.csv: missing column\(s\) received"):
        load_timeseries(tmp_path)


# --- report.html ----------------------------------------------------------------------------


class PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.charts: list[dict[str, str]] = []  # each chart's <svg viewBox> attributes
        self.metrics: dict[str, str] = {}
        self.external: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "img":
            self.images.append(a["src"])
        if tag == "svg" and "viewbox" in a:  # the parser lowercases attribute names
            self.charts.append(a)
        if "data-metric" in a:
            self.metrics[a["data-metric"]] = a["data-value"]
        for key in ("src", "href"):
            if a.get(key) and not a[key].startswith("data:"):
                self.external.append(a[key])


def parse_report(out: Path) -> tuple[str, PageParser]:
    text = (out / "report.html").read_text()
    parser = PageParser()
    parser.feed(text)
    return text, parser


def figure(text: str, key: str) -> str:
    """The markup of one figure of the page."""
    found = re.search(rf"<figure id='plot-{key}'>(.*?)</figure>", text, re.DOTALL)
    assert found, f"no figure {key}"
    return found[1]


def series_points(markup: str, label: str) -> list[list[tuple[float, float]]]:
    """A line's polylines read back into data coordinates (time s, value) through the scale of
    the chart that draws it (its data-x0/x1/y1 and the drawing's margins): what the picture
    says."""
    charts = [c for c in markup.split("<svg viewBox")[1:] if f'data-series="{label}"' in c]
    assert len(charts) == 1, f"{len(charts)} charts draw {label!r}"
    head = re.match(r'="0 0 (\d+) (\d+)"[^>]*>', charts[0])
    assert head, "no chart"
    scale = dict(re.findall(r'data-(x0|x1|y1)="([^"]+)"', head[0]))
    x0, x1, y1 = (float(scale[k]) for k in ("x0", "x1", "y1"))
    inner = int(head[2]) - TOP - BOTTOM
    line = rf'<polyline points="([^"]*)"[^>]*data-series="{re.escape(label)}"'
    runs = re.findall(line, charts[0])
    out = []
    for run in runs:
        pairs = [tuple(map(float, p.split(","))) for p in run.split()]
        out.append([
            (x0 + (x - LEFT) / (WIDTH - LEFT - RIGHT) * (x1 - x0), (TOP + inner - y) / inner * y1)
            for x, y in pairs
        ])  # fmt: skip
    return out


def close(points: list[tuple[float, float]], expected: list[tuple[float, float]]) -> bool:
    """Equal to the drawing's resolution (0.1 of 900 units across, 0.1 of ~200 up)."""
    return len(points) == len(expected) and all(
        abs(t - et) <= 0.01 * max(1.0, abs(et)) and abs(v - ev) <= 0.01 * max(1.0, abs(ev))
        for (t, v), (et, ev) in zip(points, expected, strict=True)
    )


def test_report_draws_its_figures_inline_and_loads_nothing_external(written):
    text, page = parse_report(written[1])
    assert page.images == []
    keys = re.findall(r"<figure id='plot-(\w+)'>", text)
    assert keys == ["rates", "replicas", "queues", "latency"]
    assert len(page.charts) == 3 + len(PIPELINE.operators)  # replicas: a chart per operator
    assert page.external == []
    assert not page.tags & {"script", "link", "iframe"}


def test_report_charts_draw_the_intervals_values(written):
    """The lines read back from the drawing equal the hand-built run's figures (PLAN)."""
    text, _ = parse_report(written[1])
    times = [TD * (k + 1) for k in range(len(PLAN))]
    rates = figure(text, "rates")
    assert close(series_points(rates, "input (ev/s)")[0], [
        (t, lam / TD) for t, (lam, *_) in zip(times, PLAN, strict=True)
    ])  # fmt: skip
    # latency: the interval nothing reached a sink breaks the line in two
    means = series_points(figure(text, "latency"), "interval mean")
    expected = [(t, row[4]) for t, row in zip(times, PLAN, strict=True)]
    assert len(means) == 2
    assert close(means[0], expected[:3]) and close(means[1], expected[4:])
    # op2's active replicas: each interval's count held over that interval, (t - td, t]
    op2 = re.search(r"data-operator='op2'>(.*?</svg>)", figure(text, "replicas"), re.DOTALL)
    assert op2
    steps = series_points(op2[1], "active")[0]
    want = [(p, r2) for t, (_, _, r2, *_) in zip(times, PLAN, strict=True) for p in (t - TD, t)]
    assert close(steps, want)
    queues = series_points(figure(text, "queues"), "op2")[0]
    assert close(queues, [(t, row[3]) for t, row in zip(times, PLAN, strict=True)])


def test_report_shows_every_summary_metric_and_the_run(written):
    result, out = written
    text, page = parse_report(out)
    assert set(page.metrics) == {f.name for f in fields(Summary)}
    for name, value in result.summary.as_dict().items():
        assert page.metrics[name] == ("" if value is None else repr(value))
    assert f"{result.summary.replica_seconds_saved_ratio * 100:.1f}%" in text
    assert f"{result.summary.throughput_degradation * 100:.1f}%" in text
    assert "<title>Run &lt;A&amp;B&gt;</title>" in text
    assert "policy <b>psps</b>" in text
    assert "guards.dead_band" in text  # nested settings are shown flat
    for name in ("op1", "op2"):
        assert f"<td>{name}</td>" in text


def test_report_of_a_single_interval_without_latency(tmp_path):
    result = make_result(1)
    quiet = replace(result.snapshots[0], latency_ms_mean=None)
    result = replace(result, snapshots=[quiet])
    _, page = parse_report(write(tmp_path, result))
    assert len(page.charts) == 3 + len(PIPELINE.operators)


def test_report_of_a_run_without_intervals(tmp_path):
    full = make_result()
    empty = RunResult(
        [], [], full.totals, summarize([], full.totals, PIPELINE.overprovisioned_replicas)
    )
    out = write(tmp_path, empty)
    assert len(load_timeseries(out)) == 0
    assert load_summary(out)["intervals"] == 0
    assert len(parse_report(out)[1].charts) == 3 + len(PIPELINE.operators)


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Loaded before the page: records load errors and, once loaded, each chart's drawn width.
PROBE = """<script>
window.__errs = [];
window.addEventListener('error', e => window.__errs.push(String(e.message || 'resource')), true);
window.addEventListener('load', () => {
  const charts = Array.from(document.querySelectorAll('figure svg[viewBox]'))
    .map(s => Math.round(s.getBoundingClientRect().width));
  const probe = {charts: charts, errs: window.__errs, title: document.title};
  document.documentElement.setAttribute('data-probe', JSON.stringify(probe));
});
</script>"""


class ProbeParser(HTMLParser):
    probe: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "html" and dict(attrs).get("data-probe"):
            self.probe = json.loads(dict(attrs)["data-probe"])


def test_report_loads_in_a_headless_browser(written, tmp_path):
    browser = require_tool(BROWSERS, BROWSER, "chromium")
    page = (written[1] / "report.html").read_text()
    probed = tmp_path / "probe.html"
    probed.write_text(page.replace("<head>", "<head>" + PROBE, 1))
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu"]
    args += ["--disable-background-networking", "--enable-logging=stderr", "--v=0"]
    done = subprocess.run(
        [*args, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    parser = ProbeParser()
    parser.feed(done.stdout)
    assert parser.probe is not None, "the page never finished loading"
    assert parser.probe["title"] == "Run <A&B>"
    assert parser.probe["errs"] == []
    assert len(parser.probe["charts"]) == 3 + len(PIPELINE.operators)
    assert all(width > 300 for width in parser.probe["charts"])  # laid out across the page


# --- live table -----------------------------------------------------------------------------


def test_live_table_render_shows_every_operator():
    console = Console(record=True, width=120)
    live = LiveTable(PIPELINE, console=console)
    snap, decision = make_snapshot(2), make_decision(2)
    console.print(live.render(snap, decision))
    text = console.export_text()
    assert f"t={snap.t:.1f} s" in text
    assert f"input {snap.source_events / TD:.1f} ev/s" in text
    assert f"output {snap.completed / TD:.1f} ev/s" in text
    assert f"latency {snap.latency_ms_mean:.1f} ms" in text
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│ op" in line}
    assert set(rows) == {"op1", "op2"}
    for o in snap.operators:
        cells = [c.strip() for c in rows[o.name].split("│")[1:-1]]
        assert cells[1] == f"{o.received / TD:.1f}"
        assert cells[2] == f"{o.processed / TD:.1f}"
        assert cells[3] == str(o.queue)
        assert cells[4] == f"{o.replicas}/{o.max_replicas}"
        assert cells[5] == str(decision.as_dict()[o.name])
        assert cells[7] == f"{expected_utilization(snap, o.name) * 100:.0f}%"
    assert "because 2" in rows["op2"]


def test_live_table_prints_one_line_per_interval_when_not_a_terminal():
    buf = io.StringIO()
    console = Console(file=buf, width=120)
    assert not console.is_terminal
    with LiveTable(PIPELINE, console=console) as live:
        for k in range(len(PLAN)):
            live(make_snapshot(k), make_decision(k))
    lines = buf.getvalue().splitlines()
    assert len(lines) == len(PLAN)
    assert lines[1].startswith(f"t={2 * TD:.1f} s")
    assert "op2 replicas 2/4->3 queue 40" in lines[1]


def test_live_table_shows_leased_hosts_with_their_btu_clocks_and_the_cost():
    hosts = (HostClock("h1", True, 2, 41.4), HostClock("h2", False, 1, 60.0))
    snap = replace(make_snapshot(1), hosts=hosts, host_cost=3.0)
    console = Console(record=True, width=160)
    live = LiveTable(PIPELINE, console=console)
    console.print(live.render(snap, make_decision(1)))
    live(snap, make_decision(1))  # not a terminal: the compact line carries them too
    text = console.export_text()
    expected = "hosts: h1 BTU 2, 41 s left; h2 booting · cost so far 3.00"
    assert text.count(expected) == 2, text
    assert "hosts:" not in LiveTable.hosts(make_snapshot(1))
    row = metric_interval_rows([snap])[0]
    assert (row["hosts_up"], row["host_cost"]) == (1, 3.0)


def test_the_report_plots_leased_hosts_only_for_a_run_that_leased_them():
    from elastream.report.plots import all_plots
    from elastream.report.series import Interval

    summary = summarize([make_snapshot(0)], RunTotals(10, 10, 10, 0, 0, 0, 5.0, 9.0), 8)
    plain = [Interval(make_snapshot(k), make_decision(k)) for k in range(3)]
    assert [p.key for p in all_plots(plain, PIPELINE, summary)][-1] == "latency"
    clocks = (HostClock("h1", True, 1, 30.0),)
    leased = [Interval(replace(i.snapshot, hosts=clocks, host_cost=k + 1.0), i.decision)
              for k, i in enumerate(plain)]  # fmt: skip
    plots = all_plots(leased, PIPELINE, summary)
    assert plots[-1].key == "hosts"
    cost = series_points(plots[-1].drawing, "cost so far (billing units × price)")
    assert close(cost[0], [(i.snapshot.t, k + 1.0) for k, i in enumerate(plain)])


def test_live_table_shows_brackets_literally():
    decision = Decision.of({"op1": 1, "op2": 2}, {"op1": "[bold]λ̂=3[/]"})
    console = Console(record=True, width=120)
    live = LiveTable(PIPELINE, console=console, title="[x]")
    console.print(live.render(make_snapshot(0), decision))
    live(make_snapshot(0), decision)  # the console is not a terminal: one line, no markup
    text = console.export_text()
    assert "[bold]λ̂=3[/]" in text and "[x] · t=" in text
    assert "op2 replicas 1/4->2" in text


def test_live_table_quiet_prints_nothing():
    buf = io.StringIO()
    with LiveTable(PIPELINE, console=Console(file=buf, force_terminal=True), quiet=True) as live:
        live(make_snapshot(0), make_decision(0))
    assert buf.getvalue() == ""


class ReplayEngine:
    """An engine that plays back the hand-built snapshots (for the observer wiring)."""

    pipeline = PIPELINE
    features: frozenset[type] = frozenset()

    def __init__(self) -> None:
        self.k = 0
        self.enacted: list[Decision] = []

    def start(self) -> None:
        pass

    def collect(self) -> Snapshot:
        self.k += 1
        return make_snapshot(self.k - 1)

    def enact(self, decision: Decision) -> None:
        self.enacted.append(decision)

    def finished(self) -> bool:
        return self.k >= len(PLAN)

    def totals(self) -> RunTotals:
        return make_result().totals

    def stop(self) -> None:
        pass


def test_live_table_as_mape_observer_on_a_terminal(tmp_path):
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120)
    with LiveTable(PIPELINE, console=console, title="replay") as live:
        result = run_mape(ReplayEngine(), Controller.build("psps"), observers=[live])
    out = buf.getvalue()
    last = result.snapshots[-1]
    assert f"t={last.t:.1f} s" in out
    # The redrawn table (headings, box lines), not the compact lines of a non-terminal.
    assert "replay" in out and "processed ev/s" in out and "│ op2" in out
    assert "op2 r=" not in out
    paths = write_outputs(result, PIPELINE, tmp_path, title="replay", settings={"policy": "psps"})
    assert len(load_timeseries(tmp_path)) == len(PLAN) * 2
    assert paths["report"].stat().st_size > 0


# --- documentation --------------------------------------------------------------------------


def test_docs_define_every_field_and_column(written):
    docs = (ROOT / "docs" / "outputs.md").read_text()
    summary = load_summary(written[1])
    names = {*summary, *summary["operators"]["op1"], *TIMESERIES_COLUMNS, *INTERVAL_COLUMNS}
    undocumented = sorted(n for n in names if f"`{n}`" not in docs)
    assert undocumented == []


def test_the_glossary_puts_each_papers_symbol_beside_its_plain_name():
    """Every output whose name replaced a paper's symbol is in docs/glossary.md, on one row
    with that symbol; and the report's own words carry no symbol."""
    from elastream.model.metric_catalog import RUN_METRICS
    from elastream.model.series_columns import INTERVAL_SERIES, OPERATOR_SERIES

    glossary = (ROOT / "docs" / "glossary.md").read_text().splitlines()
    for metric in (*RUN_METRICS, *OPERATOR_SERIES, *INTERVAL_SERIES):
        if metric.symbol:
            symbol = metric.symbol.replace("|", "\\|")
            rows = [r for r in glossary if r.startswith(f"| `{metric.name}` |")]
            assert rows and symbol in rows[0], metric.name
        words = f"{metric.label} {metric.short} {metric.definition}"
        assert not re.search(r"[\u0370-\u03ff]|Σ|PSPS|\btd\b|t_out|q_size|r_over", words), words


def test_the_live_table_says_how_far_the_run_is_and_the_time_left():
    """A run of 600 s of its own time: after the first interval at t = 60 s and another at
    t = 180 s 6 wall seconds later, 420 s are left at 20 run-seconds per wall second: 21 s."""
    live = LiveTable(PIPELINE, length_s=600.0)
    assert live.progress(replace(make_snapshot(0), t=60.0), now=100.0) == "60 of 600 s (10%)"
    text = live.progress(replace(make_snapshot(0), t=180.0), now=106.0)
    assert text == "180 of 600 s (30%), about 21 s left"
    assert LiveTable(PIPELINE).progress(make_snapshot(0)) == ""  # until stopped: no end


def test_a_replica_retired_during_the_interval_counts_in_the_mean_busy_share():
    """Scaled in from 3 to 2: the third replica's last micro-batch (0.3 of td busy) was work of
    the interval, shared by the 2 active replicas: (0.5 + 0.4 + 0.3) / 2 = 0.6."""
    o = OperatorStats("op", 2, 1, 3, 12, (), 12, 12, 0, 0.1, 1.2,
                      replica_processed=(5, 4, 3), utilization=(0.5, 0.4, 0.3))  # fmt: skip
    assert o.mean_utilization == pytest.approx(0.6)
    assert utilization(o, td=1.0) == pytest.approx(0.6)
