"""report.html: one self-contained page (inline CSS and SVG figures, no script) describing a run."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from elastream.model.metric_catalog import RUN_METRICS, Metric
from elastream.report import formatting as fmt

Formatter = Callable[[Any], str]


@dataclass(frozen=True, slots=True)
class Plot:
    """One figure of a page: a key, a short title, a caption and its drawing as HTML (inline
    SVG, or an <img> of a PNG: `png_image`)."""

    key: str
    title: str
    caption: str
    drawing: str


def png_image(png: bytes, alt: str) -> str:
    """A PNG as an <img> carrying its bytes (base64), so the page stands alone."""
    data = base64.b64encode(png).decode("ascii")
    return f"<img alt='{escape(alt)}' src='data:image/png;base64,{data}'>"


# How each unit of the metrics table is shown.
BY_UNIT: dict[str, Formatter] = {"ratio": fmt.pct, "ms": fmt.ms, "replicas": fmt.number}


def formatter(metric: Metric) -> Formatter:
    """The display of a metric of the one table (model/metric_catalog.py), by its unit."""
    return BY_UNIT.get(metric.unit, fmt.count)


# (aggregate key, column heading, formatter) for the per-operator table.
OPERATOR_COLUMNS: tuple[tuple[str, str, Formatter], ...] = (
    ("replicas_mean", "replicas mean", fmt.number),
    ("replicas_max", "replicas max", fmt.count),
    ("max_replicas", "pool", fmt.count),
    ("received", "received", fmt.count),
    ("processed", "processed", fmt.count),
    ("emitted", "emitted", fmt.count),
    ("dropped_timeout", "dropped timeout", fmt.count),
    ("dropped_overflow", "dropped overflow", fmt.count),
    ("queue_max", "queue max", fmt.count),
    ("utilization_mean", "utilization", fmt.pct),
    ("service_ms_mean", "service time (ms)", lambda v: fmt.number(v, 2)),
)

CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #1d2329; background: #fff; margin: 0; line-height: 1.45; font-size: 15px; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #dde2e6; }
.meta { color: #55606b; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
table.operators { display: block; overflow-x: auto; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid #eceff1; }
th { background: #f5f7f8; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.explain { color: #55606b; }
figure { margin: 18px 0 26px; }
figure img, figure svg[viewBox] { width: 100%; height: auto; display: block; }
figure .legend { font-size: 13px; color: #444; margin: 2px 0 6px 64px; }
figure .legend span { margin-right: 16px; white-space: nowrap; }
figure .operator b { font-size: 13px; }
figcaption { color: #55606b; font-size: 14px; margin-top: 4px; }
code { font-size: 13px; }
table.settings { width: auto; min-width: 50%; }
tr.paper td:not(.explain) { font-weight: 600; }
"""


def _cell(text: str, *, cls: str = "", attrs: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f"<td{klass}{attrs}>{escape(text)}</td>"


def headline_table(summary: Mapping[str, Any]) -> str:
    """Metric, value, explanation; the raw value sits in data-value for machines."""
    rows = []
    for metric in RUN_METRICS:
        value = summary.get(metric.name)
        attrs = f' data-metric="{escape(metric.name)}" data-value="{escape(_raw(value))}"'
        klass = " class='paper'" if metric.paper else ""
        rows.append(
            f"<tr{klass}>"
            + _cell(metric.label)
            + _cell(formatter(metric)(value), cls="num", attrs=attrs)
            + _cell(metric.definition[:1].upper() + metric.definition[1:] + ".", cls="explain")
            + "</tr>"
        )
    head = "<tr><th>metric</th><th class='num'>value</th><th>meaning</th></tr>"
    return f"<table class='headline'>{head}{''.join(rows)}</table>"


def objective_paragraph(objective: Mapping[str, Any] | None) -> str:
    """The run's latency objective and the intervals that met it ('' without an objective)."""
    if not objective:
        return ""
    share = objective.get("met_share")
    statistic = escape(str(objective["statistic"]))
    bound = f"{objective['bound_s']:g}"
    measured = objective.get("measured_s")
    verdict = objective.get("met")
    run = (
        ""
        if measured is None
        else f" Over the whole run the {statistic} was {measured:.2f} s: "
        f"<b class='verdict'>{'met' if verdict else 'missed'}</b>."
    )
    return (
        f"<p class='objective' data-met-share='{escape(_raw(share))}' "
        f"data-met='{escape(_raw(verdict))}'>Latency objective: "
        f"{statistic} ≤ {escape(bound)} s, "
        f"met in <b>{escape(fmt.pct(share, 1))}</b> of the intervals judged "
        f"({objective['intervals_met']} met, {objective['intervals_missed']} missed, "
        f"{objective['intervals_unjudged']} without sink events or waiting events).{run}</p>"
    )


def _raw(value: Any) -> str:
    return "" if value is None else repr(value)


def operator_table(operators: Mapping[str, Mapping[str, Any]]) -> str:
    head = (
        "<tr><th>operator</th>"
        + "".join(f"<th class='num'>{escape(h)}</th>" for _, h, _ in OPERATOR_COLUMNS)
        + "</tr>"
    )
    rows = [
        "<tr>"
        + _cell(name)
        + "".join(_cell(show(agg.get(key)), cls="num") for key, _, show in OPERATOR_COLUMNS)
        + "</tr>"
        for name, agg in operators.items()
    ]
    return f"<table class='operators'>{head}{''.join(rows)}</table>"


def _flatten(settings: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(_flatten(value, f"{name}."))
        else:
            out.append((name, value))
    return out


def settings_table(settings: Mapping[str, Any]) -> str:
    if not settings:
        return "<p class='meta'>No settings recorded.</p>"
    rows = [
        f"<tr><td><code>{escape(k)}</code></td><td>{escape(_setting(v))}</td></tr>"
        for k, v in _flatten(settings)
    ]
    return f"<table class='settings'><tr><th>setting</th><th>value</th></tr>{''.join(rows)}</table>"


def _setting(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list | dict) and not value:
        return "—"
    return str(value)


def figure_html(plot: Plot) -> str:
    return (
        f"<figure id='plot-{escape(plot.key)}'>{plot.drawing}"
        f"<figcaption>{escape(plot.caption)}</figcaption></figure>"
    )


def render_page(document: Mapping[str, Any], plots: Sequence[Plot]) -> str:
    """The whole page from the summary.json document and the rendered figures."""
    title = str(document["title"])
    meta = (
        f"pipeline <b>{escape(str(document['pipeline']))}</b> · "
        f"policy <b>{escape(str(document.get('policy') or '—'))}</b> · "
        f"{escape(fmt.count(document.get('intervals')))} intervals"
    )
    body = [
        f"<h1>{escape(title)}</h1>",
        f"<p class='meta'>{meta}</p>",
        "<h2>Summary</h2>",
        objective_paragraph(document.get("objective")),
        headline_table(document),
        "<h2>Over time</h2>",
        *(figure_html(p) for p in plots),
        "<h2>Per operator</h2>",
        operator_table(document["operators"]),
        "<h2>Settings</h2>",
        settings_table(document.get("settings") or {}),
        "<p class='meta'>Definitions of every figure: docs/outputs.md. Data: summary.json, "
        "timeseries.csv, intervals.csv beside this page.</p>",
    ]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
