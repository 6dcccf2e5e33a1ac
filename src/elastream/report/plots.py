"""The report's figures, drawn on matplotlib's Agg canvas (no pyplot, no global backend)."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import matplotlib
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from elastream.model.metrics import Summary
from elastream.model.objective import Objective
from elastream.model.pipeline import Pipeline
from elastream.report.series import Interval, per_second

WIDTH_IN = 10.0
DPI = 110
STYLE = {
    "font.size": 11,
    "axes.titlesize": 13,
    "axes.titleweight": "bold",
    "axes.labelsize": 11,
    "legend.fontsize": 10,
    "legend.frameon": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
INPUT_COLOR = "#1f77b4"
OUTPUT_COLOR = "#ff7f0e"
POOL_COLOR = "#d62728"
MARKER_MAX_POINTS = 120  # beyond this, point markers only clutter a line

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


@dataclass(frozen=True, slots=True)
class Plot:
    """One rendered figure: a short title, a caption for the page and the PNG bytes."""

    key: str
    title: str
    caption: str
    png: bytes


@contextmanager
def _figure(height_in: float, rows: int = 1) -> Iterator[tuple[Figure, list[Axes]]]:
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0].tolist()
        yield fig, axes


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def operator_colors(names: Sequence[str]) -> dict[str, str]:
    cycle = matplotlib.colormaps["tab10"].colors
    return {name: matplotlib.colors.to_hex(cycle[i % len(cycle)]) for i, name in enumerate(names)}


def _times(items: Sequence[Interval]) -> list[float]:
    return [item.snapshot.t for item in items]


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _finish(ax: Axes, ylabel: str, *, legend: bool = True) -> None:
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))


def rates_plot(items: Sequence[Interval]) -> Plot:
    """Input rate against output rate, events per second (the two sides of throughput
    degradation, PSPS V-A.3: λ_G/td and completed/td)."""
    t = _times(items)
    with _figure(3.6) as (fig, (ax,)):
        inp = [per_second(i.snapshot.source_events, i.snapshot.interval_s) for i in items]
        out = [per_second(i.snapshot.completed, i.snapshot.interval_s) for i in items]
        ax.plot(t, inp, color=INPUT_COLOR, lw=2, label="input (ev/s)")
        ax.plot(t, out, color=OUTPUT_COLOR, lw=1.6, ls="--", label="output: completed (ev/s)")
        if any(i.snapshot.source_backlog for i in items):  # external sources that can tell
            demand = [per_second(i.snapshot.demand_events, i.snapshot.interval_s) for i in items]
            ax.plot(t, demand, color=INPUT_COLOR, lw=1.2, ls=":", label="input + external backlog")
        ax.set_title("Input and output rate")
        ax.set_xlabel("time since start (s)")
        _finish(ax, "events / s")
        return Plot("rates", "Input and output rate", _RATES_CAPTION, _png(fig))


def _replica_steps(ax: Axes, items: Sequence[Interval], name: str, color: str) -> None:
    t = _times(items)
    active = [_field(item, name, "replicas") for item in items]
    target = [_nan(item.decision.as_dict().get(name)) for item in items]
    # r_i(t) held during (t - td, t]: a step ending at t. The target decided at t holds during
    # (t, t + td]: a step starting at t. Both get their first/last interval drawn.
    start, end = t[0] - items[0].snapshot.interval_s, t[-1] + items[-1].snapshot.interval_s
    ax.step([start, *t], [active[0], *active], where="pre", color=color, lw=2, label="active")
    ax.step(
        [*t, end],
        [*target, target[-1]],
        where="post",
        color="0.35",
        lw=1.2,
        ls=":",
        label="target (next)",
    )


def replicas_plot(items: Sequence[Interval], pipeline: Pipeline) -> Plot:
    """Active replicas per operator (step), the decided target and the pool bounds."""
    names = pipeline.topological_order
    colors = operator_colors(names)
    with _figure(max(2.4, 1.7 * len(names) + 0.8), rows=len(names)) as (fig, axes):
        for ax, name in zip(axes, names, strict=True):
            pool = pipeline.operator(name).replicas
            if items:
                _replica_steps(ax, items, name, colors[name])
            ax.axhline(pool.max, color=POOL_COLOR, lw=1, ls="--", label=f"pool max ({pool.max})")
            ax.set_ylim(0, pool.max + 0.5)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
            ax.set_ylabel(name)
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        axes[0].set_title("Active replicas per operator")
        axes[-1].set_xlabel("time since start (s)")
        fig.supylabel("replicas")
        return Plot("replicas", "Active replicas", _REPLICAS_CAPTION, _png(fig))


def queues_plot(items: Sequence[Interval], pipeline: Pipeline) -> Plot:
    """Queue length per operator at the end of each interval."""
    names = pipeline.topological_order
    colors = operator_colors(names)
    t = _times(items)
    with _figure(3.6) as (fig, (ax,)):
        for name in names:
            queue = [_field(item, name, "queue") for item in items]
            ax.plot(t, queue, color=colors[name], lw=1.6, label=name)
        ax.set_title("Queue length per operator")
        ax.set_xlabel("time since start (s)")
        _finish(ax, "events waiting")
        return Plot("queues", "Queue length", _QUEUES_CAPTION, _png(fig))


def _field(item: Interval, name: str, attr: str) -> float:
    ops = {o.name: o for o in item.snapshot.operators}
    return float(getattr(ops[name], attr)) if name in ops else math.nan


def latency_plot(
    items: Sequence[Interval], summary: Summary, objective: Objective | None = None
) -> Plot:
    """End-to-end latency of the events that reached a sink in each interval, mean and p99,
    against the objective's bound."""
    t = _times(items)
    latency = [_nan(item.snapshot.latency_ms_mean) for item in items]
    p99 = [_nan(item.snapshot.latency_ms_p99) for item in items]
    with _figure(3.6) as (fig, (ax,)):
        if all(math.isnan(v) for v in latency):
            ax.text(0.5, 0.5, "no event reached a sink", ha="center", transform=ax.transAxes)
        else:
            marker = "." if len(t) <= MARKER_MAX_POINTS else None
            ax.plot(t, latency, color="#2ca02c", lw=1.6, marker=marker, label="interval mean")
            ax.plot(t, p99, color="#2ca02c", lw=0.9, alpha=0.7, label="interval p99")
        if objective is not None:
            bound = objective.bound_s * 1000
            ax.axhline(bound, color=POOL_COLOR, lw=1.2, label=f"objective {objective.statistic}"
                       f" ≤ {bound:,.0f} ms")  # fmt: skip
        for value, label, style in (
            (summary.latency_ms_mean, "run mean", "--"),
            (summary.latency_ms_p99, "run p99", ":"),
        ):
            if value is not None:
                ax.axhline(value, color="0.4", lw=1, ls=style, label=f"{label} ({value:,.0f} ms)")
        ax.set_title("End-to-end latency")
        ax.set_xlabel("time since start (s)")
        _finish(ax, "latency (ms)", legend=bool(ax.get_legend_handles_labels()[0]))
        return Plot("latency", "End-to-end latency", _LATENCY_CAPTION, _png(fig))


def hosts_plot(items: Sequence[Interval]) -> Plot:
    """Leased hosts up and the cost so far (a run with `spark.leasing`)."""
    t = _times(items)
    with _figure(3.2) as (fig, (ax,)):
        ax.step(t, [i.snapshot.hosts_up for i in items], where="post", color="#1f77b4", lw=2,
                label="hosts up")  # fmt: skip
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        cost = ax.twinx()
        cost.plot(t, [i.snapshot.host_cost for i in items], color="#d62728", lw=1.4, ls="--",
                  label="cost so far (billing units × price)")  # fmt: skip
        cost.set_ylabel("cost")
        ax.set_title("Leased hosts and their cost")
        ax.set_xlabel("time since start (s)")
        ax.legend(*[a + b for a, b in zip(ax.get_legend_handles_labels(),
                                         cost.get_legend_handles_labels(), strict=True)],
                  loc="upper left", fontsize=8)  # fmt: skip
        _finish(ax, "hosts", legend=False)
        return Plot("hosts", "Leased hosts", _HOSTS_CAPTION, _png(fig))


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
