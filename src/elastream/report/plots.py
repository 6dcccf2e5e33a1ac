"""The report's figures: the run's intervals drawn as inline SVG charts (report/svg.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from elastream.model.metrics import Summary
from elastream.model.objective import Objective
from elastream.model.pipeline import Pipeline
from elastream.report.html import Plot
from elastream.report.series import Interval, per_second
from elastream.report.svg import Line, Rule, chart

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
          "#bcbd22", "#7f7f7f", "#d62728")  # fmt: skip
INPUT_COLOR, OUTPUT_COLOR, LATENCY_COLOR = COLORS[:3]
POOL_COLOR = "#d62728"
TARGET_COLOR = "#595959"

_RATES_CAPTION = (
    "Events offered by the sources per second against source events whose processing finished "
    "per second. The gap between the two lines is what throughput degradation averages. With "
    "external sources that can tell their backlog (files, Redis, Spark sources that report "
    "offsets), a dotted line adds it: the input the policies see."
)
_REPLICAS_CAPTION = (
    "Replicas active during each interval (solid), the target the controller decided at the end "
    "of the interval for the next one (dotted) and the size of the pre-allocated pool (dashed)."
)
_QUEUES_CAPTION = "Events waiting in each operator's input queue at the end of every interval."
_LATENCY_CAPTION = (
    "Time from entering the pipeline to reaching a sink, for the events that reached a sink "
    "in each interval: the mean (solid) and the 99th percentile (thin), against the run's "
    "latency objective when it has one (red); gaps are intervals where none did."
)
_HOSTS_CAPTION = (
    "Hosts (executors) leased and up at the end of every interval, and what the leases cost so "
    "far: every billing time unit a host starts is paid in full (spark.leasing, docs/leasing.md)."
)


def operator_colors(names: Sequence[str]) -> dict[str, str]:
    """One colour per operator, in the pipeline's order."""
    return {name: COLORS[i % len(COLORS)] for i, name in enumerate(names)}


def _times(items: Sequence[Interval]) -> list[float]:
    return [item.snapshot.t for item in items]


def _span(items: Sequence[Interval]) -> tuple[float, float] | None:
    """From the first interval's start to the last one's end (None: no interval)."""
    if not items:
        return None
    return items[0].snapshot.t - items[0].snapshot.interval_s, items[-1].snapshot.t


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _field(item: Interval, name: str, attr: str) -> float:
    ops = {o.name: o for o in item.snapshot.operators}
    return float(getattr(ops[name], attr)) if name in ops else math.nan


def rates_plot(items: Sequence[Interval]) -> Plot:
    """Input rate against output rate, events per second (the two sides of throughput
    degradation, PSPS V-A.3: λ_G/td and completed/td)."""
    snaps = [i.snapshot for i in items]
    lines = [
        Line("input (ev/s)", [per_second(s.source_events, s.interval_s) for s in snaps],
             INPUT_COLOR, width=2.2),
        Line("output: completed (ev/s)", [per_second(s.completed, s.interval_s) for s in snaps],
             OUTPUT_COLOR, dash="7 4"),
    ]  # fmt: skip
    if any(s.source_backlog for s in snaps):  # external sources that can tell
        demand = [per_second(s.demand_events, s.interval_s) for s in snaps]
        lines.append(Line("input + external backlog", demand, INPUT_COLOR, width=1.3, dash="2 3"))
    svg = chart(_times(items), lines, "events / s", span=_span(items))
    return Plot("rates", "Input and output rate", _RATES_CAPTION, svg)


def _replica_lines(items: Sequence[Interval], name: str, color: str) -> list[Line]:
    """r_i(t) held during (t - td, t]: a step ending at t; the target decided at t holds during
    (t, t + td]: a step starting at t."""
    active = [_field(item, name, "replicas") for item in items]
    target = [_nan(item.decision.as_dict().get(name)) for item in items]
    return [
        Line("active", active, color, width=2.2, step="pre"),
        Line("target (next)", target, TARGET_COLOR, width=1.3, dash="2 3", step="post"),
    ]


def replicas_plot(items: Sequence[Interval], pipeline: Pipeline) -> Plot:
    """Active replicas per operator (steps), the decided target and the pool's maximum: one
    chart per operator."""
    names = pipeline.topological_order
    colors = operator_colors(names)
    times, span = _times(items), _span(items)
    if span is not None:  # the last target holds one interval past the run's end
        span = (span[0], span[1] + items[-1].snapshot.interval_s)
    charts = []
    for name in names:
        pool = pipeline.operator(name).replicas.max
        head = f"<div class='operator' data-operator='{escape(name)}'><b>{escape(name)}</b>"
        charts.append(head + chart(
            times, _replica_lines(items, name, colors[name]), "replicas", span=span,
            rules=[Rule(f"pool max ({pool})", pool, POOL_COLOR)], y_max=pool + 0.5,
            integer=True, height=190,
        ) + "</div>")  # fmt: skip
    return Plot("replicas", "Active replicas", _REPLICAS_CAPTION, "".join(charts))


def queues_plot(items: Sequence[Interval], pipeline: Pipeline) -> Plot:
    """Queue length per operator at the end of each interval."""
    colors = operator_colors(pipeline.topological_order)
    lines = [
        Line(name, [_field(item, name, "queue") for item in items], color)
        for name, color in colors.items()
    ]
    svg = chart(_times(items), lines, "events waiting", span=_span(items))
    return Plot("queues", "Queue length", _QUEUES_CAPTION, svg)


def latency_plot(
    items: Sequence[Interval], summary: Summary, objective: Objective | None = None
) -> Plot:
    """End-to-end latency of the events that reached a sink in each interval, mean and p99,
    against the objective's bound and the run's own mean and p99."""
    lines = [
        Line("interval mean", [_nan(i.snapshot.latency_ms_mean) for i in items], LATENCY_COLOR),
        Line("interval p99", [_nan(i.snapshot.latency_ms_p99) for i in items], LATENCY_COLOR,
             width=1.0, dash="4 2"),
    ]  # fmt: skip
    rules = []
    if objective is not None:
        bound = objective.bound_s * 1000
        rules.append(Rule(f"objective {objective.statistic} ≤ {bound:,.0f} ms", bound, POOL_COLOR,
                          dash=""))  # fmt: skip
    for value, label, dash in (
        (summary.latency_ms_mean, "run mean", "6 4"),
        (summary.latency_ms_p99, "run p99", "2 3"),
    ):
        if value is not None:
            rules.append(Rule(f"{label} ({value:,.0f} ms)", value, "#666666", dash))
    svg = chart(_times(items), lines, "latency (ms)", rules=rules, span=_span(items),
                empty="no event reached a sink")  # fmt: skip
    return Plot("latency", "End-to-end latency", _LATENCY_CAPTION, svg)


def hosts_plot(items: Sequence[Interval]) -> Plot:
    """Leased hosts up (steps) and the cost so far, one chart each (a run with `spark.leasing`)."""
    times, span = _times(items), _span(items)
    up = Line("hosts up", [i.snapshot.hosts_up for i in items], INPUT_COLOR, width=2.2,
              step="post")  # fmt: skip
    cost = Line("cost so far (billing units × price)", [i.snapshot.host_cost for i in items],
                POOL_COLOR, dash="7 4")  # fmt: skip
    svg = chart(times, [up], "hosts", span=span, integer=True, height=200) + chart(
        times, [cost], "cost", span=span, height=200
    )
    return Plot("hosts", "Leased hosts", _HOSTS_CAPTION, svg)


def all_plots(
    items: Sequence[Interval],
    pipeline: Pipeline,
    summary: Summary,
    objective: Objective | None = None,
) -> list[Plot]:
    plots = [
        rates_plot(items),
        replicas_plot(items, pipeline),
        queues_plot(items, pipeline),
        latency_plot(items, summary, objective),
    ]
    if any(item.snapshot.hosts for item in items):
        plots.append(hosts_plot(items))
    return plots
