"""report.html of a benchmark: per scenario a results table, metric bars and time series, with
every figure embedded as a base64 PNG so the page stands alone."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from html import escape
from io import BytesIO
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from elastream.experiments.bench.tables import METRICS
from elastream.model.metric_catalog import METRICS as METRIC_TABLE
from elastream.model.metric_catalog import PAPER_METRICS, SLA_METRICS
from elastream.report import formatting as fmt
from elastream.report.html import CSS, Plot, figure_html, formatter, png_image

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
MAX_SERIES = 8  # runs drawn in one time-series figure
ARROWS = {"higher": " (↑)", "lower": " (↓)", "": ""}


def short_title(name: str) -> str:
    """A metric's short heading with the direction that is better."""
    metric = METRIC_TABLE[name]
    return metric.short + ARROWS[metric.better]


def _metric_column(name: str) -> tuple[str, str, Any]:
    """(results column, heading, formatter) of a metric of the one table."""
    metric = METRIC_TABLE[name]
    if metric.unit == "ratio" and not name.startswith("sla_"):
        return name, metric.short, lambda v: fmt.number(v, metric.digits)
    return name, metric.short, formatter(metric)


# (results column, heading, formatter) of the per-scenario table.
COLUMNS: tuple[tuple[str, str, Any], ...] = (
    ("policy", "policy", str),
    ("params", "parameters", str),
    *(
        _metric_column(name)
        for name in (
            *PAPER_METRICS,
            "latency_ms_p99",
            *(m.name for m in SLA_METRICS),
            "reconfigurations",
            "replica_seconds",
        )
    ),
    ("wall_s", "wall", lambda v: f"{fmt.number(v, 1)} s"),
)


def _value(value: Any) -> Any:
    """NaN and empty cells from a CSV -> None, so the formatters print a dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


@contextmanager
def _figure(height_in: float, rows: int, cols: int) -> Iterator[tuple[Figure, list[Axes]]]:
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        yield fig, list(fig.subplots(rows, cols, squeeze=False).flat)


def _png(fig: Figure) -> bytes:
    buf = BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _run_labels(runs: pd.DataFrame) -> list[str]:
    return [
        f"{policy}" + (f"\n{params}" if isinstance(params, str) and params else "")
        for policy, params in zip(runs["policy"], runs["params"], strict=True)
    ]


def metrics_plot(scenario: str, runs: pd.DataFrame) -> Plot:
    """The four PSPS metrics of every run of a scenario, as bars."""
    labels = _run_labels(runs)
    with _figure(2.2 + 0.25 * len(runs), 1, 4) as (fig, axes):
        for ax, (column, _, _) in zip(axes, METRICS, strict=True):
            values = [_value(v) for v in runs[column]]
            ax.barh(range(len(runs)), [math.nan if v is None else v for v in values])
            ax.set_title(short_title(column))
            ax.set_yticks(range(len(runs)), labels if ax is axes[0] else [""] * len(runs))
            ax.invert_yaxis()
            if column == "latency_ms_mean" and any(v and v > 0 for v in values):
                ax.set_xscale("log")
        png = _png(fig)
    caption = (
        "Saved resources (higher is better), throughput degradation (lower), processed share "
        "(higher) and mean end-to-end latency (lower, log scale) of every run."
    )
    title = f"{scenario}: metrics"
    return Plot(f"{scenario}-metrics", title, caption, png_image(png, title))


def series_plot(scenario: str, runs: pd.DataFrame, series: pd.DataFrame) -> Plot | None:
    """Σ active replicas and output rate over time (PSPS Figs. 8-11): the first run of each
    policy label, then further runs, up to MAX_SERIES."""
    drawn = runs[runs["run_id"].isin(series["run_id"])]
    firsts = drawn.drop_duplicates("policy")
    chosen = pd.concat([firsts, drawn.drop(firsts.index)]).head(MAX_SERIES)
    if chosen.empty:
        return None
    with _figure(6.0, 2, 1) as (fig, (replicas_ax, rate_ax)):
        first = series[series["run_id"] == chosen.iloc[0]["run_id"]]
        rate_ax.plot(first["t"], first["input_rate"], color="black", lw=1.2, label="input")
        for run_id, label in zip(chosen["run_id"], _run_labels(chosen), strict=True):
            points = series[series["run_id"] == run_id]
            name = label.replace("\n", " ")
            replicas_ax.step(points["t"], points["replicas_total"], where="post", label=name)
            rate_ax.plot(points["t"], points["output_rate"], lw=1.0, label=name)
        replicas_ax.set_ylabel("Σ active replicas")
        rate_ax.set_ylabel("events/s")
        rate_ax.set_xlabel("time (s)")
        for ax in (replicas_ax, rate_ax):
            ax.set_ylim(bottom=0)
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        png = _png(fig)
    caption = (
        "Top: active replicas summed over operators in each interval. Bottom: the input rate "
        "(black) and each run's output rate, source events completed per second."
    )
    title = f"{scenario}: over time"
    return Plot(f"{scenario}-series", title, caption, png_image(png, title))


def results_table(runs: pd.DataFrame) -> str:
    head = "".join(f"<th>{escape(title)}</th>" for _, title, _ in COLUMNS)
    body = []
    for _, run in runs.iterrows():
        if run.get("error"):
            cells = (
                f"<td>{escape(str(run['policy']))}</td><td>{escape(str(run.get('params', '')))}"
                f"</td><td colspan='{len(COLUMNS) - 2}'>failed: {escape(str(run['error']))}</td>"
            )
        else:
            cells = "".join(
                f"<td class='num'>{escape(form(_value(run.get(col))))}</td>"
                if col not in ("policy", "params")
                else f"<td>{escape(str(_value(run.get(col)) or ''))}</td>"
                for col, _, form in COLUMNS
            )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def scenario_section(scenario: str, runs: pd.DataFrame, series: pd.DataFrame) -> str:
    ok = runs[runs["error"].fillna("") == ""]
    parts = [f"<h2>{escape(scenario)}</h2>", results_table(runs)]
    if not ok.empty:
        parts.append(figure_html(metrics_plot(scenario, ok)))
        plot = series_plot(scenario, ok, series)
        if plot is not None:
            parts.append(figure_html(plot))
    return "".join(parts)


def render_report(
    results: pd.DataFrame, series: pd.DataFrame, *, title: str, notes: Sequence[str] = ()
) -> str:
    """The whole page."""
    failed = int((results["error"].fillna("") != "").sum())
    meta = f"{len(results)} runs" + (f", <b>{failed} failed</b>" if failed else "")
    sections = [
        scenario_section(name, results[results["scenario"] == name], series)
        for name in dict.fromkeys(results["scenario"])
    ]
    notes_html = "".join(f"<p class='meta'>{escape(n)}</p>" for n in notes)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>"
        f"<h1>{escape(title)}</h1><p class='meta'>{meta}</p>{notes_html}"
        f"{''.join(sections)}"
        "<p class='meta'>Metrics: PSPS Section V-A.3 (saved resources, throughput degradation, "
        "processed share, mean latency); SLA k×: share of events within k times the "
        "processing-time SLO (seed 004, 'Metrics'). Data: results.csv and intervals.csv "
        "beside this page.</p></main></body></html>\n"
    )
