"""`elastream trace`: statistics and a PNG plot of a trace file or a generated workload."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from elastream.base.extras import require
from elastream.cli._renamed import add_old_option
from elastream.workloads import FORMATS, LoadInfo, Trace, resolve_trace_info
from elastream.workloads.scaling import apply_scaling, human_duration

SMOOTH_ABOVE = 2000  # samples: beyond this the plot adds a moving average over the raw rates


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print statistics of a trace file or generator spec (e.g. "
        "'spike:peak=300,onset=60') and plot it. Scaling order: slice (in original trace "
        "time), then peak rescale, then time compression."
    )
    parser.add_argument("spec", metavar="PATH-or-GENERATOR", help="trace file or generator spec")
    parser.add_argument("--peak-rate", type=float, help="rescale so the maximum is X events/s")
    parser.add_argument("--time-scale", type=float, help="play the trace X times faster")
    parser.add_argument(
        "--slice", metavar="START:END", help="keep [START, END) of the trace; e.g. 600:1200, 1h:2h"
    )
    parser.add_argument("--plot", type=Path, help="PNG to write (default: trace-<name>.png)")
    add_old_option(parser, "--out", "--plot", "plot", type=Path)
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
        out = args.plot or Path("trace-" + re.sub(r"[^\w.-]+", "_", trace.name) + ".png")
        plot_trace(trace, out, scaling)
        print(f"plot: {out}")
    return 0


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
    matplotlib = require("matplotlib", extra="plots", feature="the trace's plot (or --no-plot)")

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
