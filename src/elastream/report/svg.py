"""Line charts as inline SVG text: axes, ticks, lines (steps and gaps), horizontal rules, legend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Literal

WIDTH = 900  # the viewBox: the page scales the drawing to its width
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 12, 40  # margins for the tick labels and the axis titles
STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)  # a tick step is one of these times a power of ten

Step = Literal["", "pre", "post"]


@dataclass(frozen=True, slots=True)
class Line:
    """One series: `values[k]` at `times[k]` (None or NaN: no point, the line breaks there).
    `step` "pre": the value holds over (t[k-1], t[k]]; "post": over [t[k], t[k+1])."""

    label: str
    values: Sequence[float | None]
    color: str
    width: float = 1.8
    dash: str = ""
    step: Step = ""


@dataclass(frozen=True, slots=True)
class Rule:
    """A horizontal line across the chart at `value` (a bound, a pool size, a run's figure)."""

    label: str
    value: float
    color: str
    dash: str = "6 4"


@dataclass(frozen=True, slots=True)
class Frame:
    """The mapping from data to drawing coordinates of one chart."""

    x0: float
    x1: float
    y1: float
    height: int

    def x(self, t: float) -> float:
        return LEFT + (t - self.x0) / ((self.x1 - self.x0) or 1.0) * (WIDTH - LEFT - RIGHT)

    def y(self, v: float) -> float:
        inner = self.height - TOP - BOTTOM
        return TOP + inner - v / self.y1 * inner


def ticks(lo: float, hi: float, most: int = 5) -> list[float]:
    """Round values from lo to hi, at most `most` + 1 of them, a step of 1, 2, 2.5 or 5 × 10^k."""
    span = hi - lo if hi > lo else 1.0
    power = 10.0 ** math.floor(math.log10(span / most))
    step = next((m * power for m in STEPS if span / (m * power) <= most), 10 * power)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 10) for k in range(first, math.floor(hi / step + 1e-9) + 1)]


def _label(v: float) -> str:
    return f"{v:,.0f}" if v == int(v) or abs(v) >= 10 else f"{v:.2g}"


def _known(v: float | None) -> bool:
    return v is not None and not math.isnan(v)


def tag(name: str, text: str | None = None, *, inner: str | None = None, **attrs: object) -> str:
    """One SVG element around `text` (escaped) or `inner` (markup); an attribute's `_` is
    written `-` (stroke_width: stroke-width), a float to 0.1, a None or "" attribute left out."""
    pairs = [
        f'{k.replace("_", "-")}="{f"{v:.1f}" if isinstance(v, float) else escape(str(v))}"'
        for k, v in attrs.items()
        if v is not None and v != ""
    ]
    head = " ".join([name, *pairs])
    if text is None and inner is None:
        return f"<{head}/>"
    return f"<{head}>{escape(text) if inner is None else inner}</{name}>"


def stepped(times: Sequence[float], line: Line, start: float, end: float) -> list[tuple]:
    """The (t, v) corners of a line: its points, or for a step line the level's two ends."""
    if not line.step or not times:
        return list(zip(times, line.values, strict=True))
    if line.step == "pre":
        lefts = [start, *times[:-1]]
        pairs = zip(lefts, times, line.values, strict=True)
    else:
        rights = [*times[1:], end]
        pairs = zip(times, rights, line.values, strict=True)
    corners: list[tuple] = []
    for a, b, v in pairs:
        corners += [(a, v), (b, v)]
    return corners


def polylines(frame: Frame, corners: Sequence[tuple], line: Line) -> list[str]:
    """The line as SVG polylines, one per run of known values."""
    runs: list[list[str]] = [[]]
    for t, v in corners:
        if _known(v):
            runs[-1].append(f"{frame.x(t):.1f},{frame.y(v):.1f}")
        elif runs[-1]:
            runs.append([])
    style = {"stroke": line.color, "stroke_width": line.width, "stroke_dasharray": line.dash}
    return [
        tag("polyline", points=" ".join(run), fill="none", **style, data_series=line.label)
        for run in runs
        if run
    ]


def _axes(frame: Frame, ylabel: str, integer: bool) -> list[str]:
    bottom, right, axis = frame.height - BOTTOM, WIDTH - RIGHT, "#9aa3a9"
    parts = [
        tag("line", x1=LEFT, y1=bottom, x2=right, y2=bottom, stroke=axis),
        tag("line", x1=LEFT, y1=TOP, x2=LEFT, y2=bottom, stroke=axis),
    ]
    for v in ticks(0.0, frame.y1):
        if integer and v != int(v):
            continue
        y = frame.y(v)
        parts.append(tag("line", x1=LEFT, y1=y, x2=right, y2=y, stroke="#eceff1"))
        parts.append(tag("text", _label(v), x=LEFT - 6, y=y + 4, text_anchor="end", data_tick="y"))
    for t in ticks(frame.x0, frame.x1, 8):
        x = frame.x(t)
        parts.append(tag("line", x1=x, y1=bottom, x2=x, y2=bottom + 4, stroke=axis))
        label = _label(t)
        parts.append(tag("text", label, x=x, y=bottom + 17, text_anchor="middle", data_tick="x"))
    mid_x, mid_y = (LEFT + right) / 2, (TOP + bottom) / 2
    title = "time since start (s)"
    parts.append(tag("text", title, x=mid_x, y=frame.height - 4, text_anchor="middle"))
    turn = f"rotate(-90 14 {mid_y:.1f})"
    parts.append(tag("text", ylabel, x=14, y=mid_y, text_anchor="middle", transform=turn))
    return parts


def legend(items: Sequence[Line | Rule]) -> str:
    """The chart's keys as HTML under it: a swatch of each line's colour and dash, its label."""
    keys = []
    for item in items:
        stroke = {"stroke": item.color, "stroke_width": 2.5, "stroke_dasharray": item.dash}
        line = tag("line", x1=0, y1=4, x2=22, y2=4, **stroke)
        swatch = tag("svg", inner=line, width=22, height=8, aria_hidden="true")
        keys.append(f"<span>{swatch} {escape(item.label)}</span>")
    return f"<div class='legend'>{''.join(keys)}</div>"


def chart(
    times: Sequence[float],
    lines: Sequence[Line],
    ylabel: str,
    *,
    rules: Sequence[Rule] = (),
    span: tuple[float, float] | None = None,
    y_max: float | None = None,
    integer: bool = False,
    height: int = 260,
    empty: str = "no data",
) -> str:
    """One chart: the lines against `times`, from 0 up to y_max (None: 10 % over the largest
    value), time over `span` (None: the times'), its legend under it; `empty` when no line has
    a value."""
    start, end = span if span is not None else (times[0], times[-1]) if times else (0.0, 1.0)
    corners = [stepped(times, line, start, end) for line in lines]
    known = [v for c in corners for _, v in c if _known(v)] + [r.value for r in rules]
    top = y_max if y_max is not None else max(known, default=0.0) * 1.1
    frame = Frame(start, end if end > start else start + 1.0, top if top > 0 else 1.0, height)
    parts = _axes(frame, ylabel, integer)
    for rule in rules:
        y, style = frame.y(rule.value), {"stroke": rule.color, "stroke_dasharray": rule.dash}
        parts.append(
            tag("line", x1=LEFT, y1=y, x2=WIDTH - RIGHT, y2=y, **style, stroke_width=1.3,
                data_rule=rule.label, data_value=repr(rule.value))
        )  # fmt: skip
    for line, points in zip(lines, corners, strict=True):
        parts += polylines(frame, points, line)
    if not any(_known(v) for line in lines for v in line.values):
        parts.append(tag("text", empty, x=WIDTH / 2, y=height / 2, text_anchor="middle"))
    svg = tag(
        "svg", inner="".join(parts), viewBox=f"0 0 {WIDTH} {height}", role="img",
        aria_label=ylabel, data_x0=repr(frame.x0), data_x1=repr(frame.x1), data_y1=repr(frame.y1),
        font_size=12, font_family="sans-serif", fill="#55606b",
    )  # fmt: skip
    return svg + legend([*lines, *rules])
