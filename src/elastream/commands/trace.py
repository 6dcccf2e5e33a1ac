"""`elastream trace`: statistics and a PNG plot of a trace file or a generated workload."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from elastream.workloads import FORMATS, LoadInfo, Trace, TraceError, resolve_trace_info

UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
SMOOTH_ABOVE = 2000  # samples: beyond this the plot adds a moving average over the raw rates


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "trace",
        help="statistics and a plot of a workload trace",
        description="Print statistics of a trace file or generator spec (e.g. "
        "'spike:peak=300,onset=60') and plot it. Scaling order: slice (in original trace "
        "time), then peak rescale, then time compression.",
    )
    parser.add_argument("spec", metavar="PATH-or-GENERATOR", help="trace file or generator spec")
    parser.add_argument("--peak-rate", type=float, help="rescale so the maximum is X events/s")
    parser.add_argument("--time-scale", type=float, help="play the trace X times faster")
    parser.add_argument(
        "--slice", metavar="START:END", help="keep [START, END) of the trace; e.g. 600:1200, 1h:2h"
    )
    parser.add_argument("--out", type=Path, help="PNG to write (default: trace-<name>.png)")
    parser.add_argument("--no-plot", action="store_true", help="print the statistics only")
    parser.add_argument("--data-dir", type=Path, help="where to look for trace files by name")
    parser.add_argument("--format", choices=FORMATS.names(), help="force the file format")
    parser.add_argument("--bin-s", type=float, default=1.0, help="bin for event logs (s)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    trace, info = resolve_trace_info(args.spec, args.data_dir, fmt=args.format, bin_s=args.bin_s)
    trace, scaling = apply_scaling(trace, args.slice, args.peak_rate, args.time_scale)
    print(format_report(trace, info, scaling))
    if not args.no_plot:
        out = args.out or Path("trace-" + re.sub(r"[^\w.-]+", "_", trace.name) + ".png")
        plot_trace(trace, out, scaling)
        print(f"plot: {out}")
    return 0


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


def format_report(trace: Trace, info: LoadInfo | None, scaling: list[str]) -> str:
    s = trace.stats()
    if info is None:
        source = f"generated ({trace.name})"
    else:
        filled = f", {info.filled} missing steps filled" if info.filled else ""
        source = f"{info.path} ({info.format}, {info.rows} rows{filled})"
    rows = [
        ("source", source),
        ("scaling", ", ".join(scaling) or "none"),
        ("duration", f"{s.duration_s:,.6g} s ({human_duration(s.duration_s)})"),
        ("samples", f"{s.samples}"),
        ("step", f"{s.step_s:.6g} s"),
        ("mean", f"{s.mean:.4g} events/s"),
        ("median", f"{s.median:.4g} events/s"),
        ("p99", f"{s.p99:.4g} events/s"),
        ("max", f"{s.max:.4g} events/s"),
        ("peak/median", f"{s.peak_to_median:.3g}"),
        ("total events", f"{s.total_events:,.0f}"),
    ]
    return "\n".join(f"{key:<14}{value}" for key, value in rows)


def _time_axis(trace: Trace) -> tuple[np.ndarray, str]:
    t = np.arange(trace.rates.size) * trace.step_s
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if trace.duration_s >= 3 * size:
            return t / size, unit
    return t, "seconds"


def plot_trace(trace: Trace, out: Path, scaling: list[str]) -> Path:
    """A rate-over-time panel with median/p99 lines, and the rate distribution beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = trace.stats()
    t, unit = _time_axis(trace)
    fig, (ax, hist) = plt.subplots(
        1, 2, figsize=(11, 4.2), sharey=True, gridspec_kw={"width_ratios": [5, 1]}
    )
    dense = trace.rates.size > SMOOTH_ABOVE
    ax.plot(
        t,
        trace.rates,
        lw=0.4 if dense else 1.2,
        color="#7aa6d6" if dense else "#1f5fa8",
        drawstyle="steps-post",
        label="rate",
    )
    if dense:
        window = max(3, trace.rates.size // 400)
        smooth = np.convolve(trace.rates, np.ones(window) / window, mode="same")
        ax.plot(t, smooth, lw=1.2, color="#1f3f77", label=f"moving mean ({window} samples)")
    ax.axhline(s.median, color="#2a9d4b", ls="--", lw=1, label=f"median {s.median:.3g}/s")
    ax.axhline(s.p99, color="#d1495b", ls=":", lw=1, label=f"p99 {s.p99:.3g}/s")
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("events/s")
    ax.set_xlim(t[0], t[-1] if t.size > 1 else 1.0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1), ncol=4, fontsize=8, frameon=False)
    subtitle = ", ".join(scaling) or "unscaled"
    fig.suptitle(
        f"{trace.name} — {subtitle}; step {s.step_s:g} s, peak/median {s.peak_to_median:.3g}",
        fontsize=10,
    )
    hist.hist(
        trace.rates,
        bins=min(60, max(10, trace.rates.size // 20)),
        orientation="horizontal",
        color="#7aa6d6",
    )
    hist.set_xlabel("samples")
    hist.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
