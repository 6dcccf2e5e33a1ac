"""Slicing, peak rescaling and time compression of a trace, from command-line style text."""

from __future__ import annotations

import re

from elastream.workloads.trace import Trace, TraceError

UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, what: str) -> float:
    """'90', '90s', '1.5m', '2h', '1d' -> seconds."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smhd]?)\s*", text)
    if not match:
        raise TraceError(f"{what}: {text!r} is not a duration (a number with s, m, h or d)")
    return float(match[1]) * UNITS_S[match[2] or "s"]


def parse_slice(text: str) -> tuple[float, float | None]:
    """'START:END' with either side optional -> (start_s, end_s or None)."""
    start, colon, end = text.partition(":")
    if not colon:
        raise TraceError(f"--slice: expected START:END, got {text!r}")
    start_s = parse_duration(start, "--slice start") if start.strip() else 0.0
    end_s = parse_duration(end, "--slice end") if end.strip() else None
    if end_s is not None and end_s <= start_s:
        raise TraceError(f"--slice: end {end_s:g} s is not after start {start_s:g} s")
    return start_s, end_s


def apply_scaling(
    trace: Trace, slice_text: str | None, peak_rate: float | None, time_scale: float | None
) -> tuple[Trace, list[str]]:
    """Slice (original time), rescale the peak, compress time; with a note for each step."""
    notes = []
    if slice_text:
        start_s, end_s = parse_slice(slice_text)
        trace = trace.sliced(start_s, end_s)
        end = "end" if end_s is None else human_duration(end_s)
        notes.append(f"slice {human_duration(start_s)}–{end}")
    if peak_rate is not None:
        trace = trace.rescaled(peak_rate)
        notes.append(f"peak rescaled to {peak_rate:g}/s")
    if time_scale is not None:
        trace = trace.compressed(time_scale)
        notes.append(f"time ×{time_scale:g}")
    return trace, notes


def human_duration(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:.4g} {unit}"
    return f"{seconds:.4g} s"
