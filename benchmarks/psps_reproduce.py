"""Regenerate docs/reproduction/psps.md and psps-comparisons.md: every PSPS table (IV-XII) beside
ours, Figs. 8-11 and 14, the workload and the throughput-degradation experiments, from one command:

    .venv/bin/python benchmarks/psps_reproduce.py [--out runs/psps] [--jobs 2]
                                                      [--from-results]

It runs `elastream bench benchmarks/psps_twitter.yaml` (simulator only), rewrites every
`<!-- bench-table: ID -->` block of the two pages (Tables IV-VII and the workload on psps.md,
Tables VIII-XII and the policies on psps-comparisons.md) and writes the figures as small PNGs
beside them. `--from-results` redraws everything from an earlier --out without running.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from rich.console import Console

from elastream.experiments.bench.outputs import (
    REPORT_FILE,
    read_results,
    read_timeseries,
    write_results,
)
from elastream.experiments.bench.report import render_report
from elastream.experiments.bench.runner import SIM_BACKEND, run_matrix
from elastream.experiments.bench.scenario import BenchError, load_bench
from elastream.experiments.bench.tables import BLOCK, render_tables, select_run, update_markdown
from elastream.report.progress import add_quiet
from elastream.workloads import covid_selection, resolve_trace
from elastream.workloads.covid import COVID_START_UTC

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "psps_twitter.yaml"
DOCS = (
    ROOT / "docs" / "reproduction" / "psps.md",
    ROOT / "docs" / "reproduction" / "psps-comparisons.md",
)
FIG_DIR = DOCS[0].parent
DPI = 80
SIZE = (6.4, 2.5)

# Runs drawn in the figures and compared in the degradation experiments: label -> selector.
MAIN = {"PSPS": {"policy": "psps", "interval_s": 30}}
STORM = {f"r = {r}": {"policy": "storm", "replicas": r} for r in (1, 4, 8)}
DABS = {"DABS": {"policy": "dabs"}}
DEGRADATION_RUNS = {
    **MAIN,
    **STORM,
    **DABS,
    "q_size = 100": {"policy": "psps-qsize", "queue_capacity": 100},
    "Shuffle": {"policy": "psps-shuffle"},
    "Alg. 1, U once per td": {"policy": "psps-alg1-td"},
    "r = 4, 100 in flight": {"policy": "storm-pending", "replicas": 4},
    "PSPS, 100 in flight": {"policy": "psps-pending"},
    "DABS, 100 in flight": {"policy": "dabs-pending"},
}


def run_bench(out: Path, jobs: int, console: Console, quiet: bool = False) -> pd.DataFrame:
    _, specs = load_bench(BENCH)
    console.print(f"{len(specs)} runs, {jobs} at a time -> {out}")
    records = run_matrix(specs, SIM_BACKEND, jobs=jobs, console=console, quiet=quiet)
    results, _ = write_results(records, out)
    return results


def run_of(results: pd.DataFrame, scenario: str, select: dict) -> pd.Series:
    return select_run(results, scenario, select, f"psps_reproduce {scenario} {select}")


def series_of(series: pd.DataFrame, run_id: str) -> pd.DataFrame:
    return series[series["run_id"] == run_id].sort_values("t")


# ------------------------------------------------------------------ throughput degradation


def degradation_variants(intervals: pd.DataFrame) -> dict[str, float]:
    """Throughput degradation of one run under several definitions (PSPS V-A.3 leaves open
    what "rate" and which intervals): ours is the mean over intervals with input."""
    src = intervals[intervals["input"] > 0]
    inp, out = src["input"].to_numpy(float), src["completed"].to_numpy(float)
    ratio = np.abs(inp - out) / inp
    total_in, total_out = intervals["input"].sum(), intervals["completed"].sum()
    return {
        "per interval (ours)": float(ratio.mean()),
        "from shortfall": float(np.where(out < inp, ratio, 0).mean()),
        "from catch-up": float(np.where(out > inp, ratio, 0).mean()),
        "input-weighted": float(np.abs(inp - out).sum() / inp.sum()),
        "over the run": float(abs(total_in - total_out) / total_in),
        "intervals with out > 1.5 in": float((out > 1.5 * inp).mean()),
    }


def degradation_table(results: pd.DataFrame, series: pd.DataFrame) -> str:
    rows = []
    for label, select in DEGRADATION_RUNS.items():
        run = run_of(results, "covid", select)
        values = degradation_variants(series_of(series, run["run_id"]))
        rows.append((label, values, run))
    head = ["", *rows[0][1], "latency (ms)", "processed"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, values, run in rows:
        cells = [f"{v:.4f}" for v in values.values()]
        cells += [f"{run['latency_ms_mean']:,.0f}", f"{run['processed_ratio']:.4f}"]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the workload


def workload_table() -> str:
    sel = covid_selection(hours=24, periods=4)
    start = pd.Timestamp(COVID_START_UTC)
    lines = [
        "| period | from (UTC) | to (UTC) | tweets/h min | max | CV of the 3-h mean |",
        "|---|---|---|---|---|---|",
    ]
    for k, a in enumerate(sel.starts, start=1):
        window = sel.counts[a : a + sel.hours]
        smooth = pd.Series(window).rolling(3, center=True, min_periods=1).mean()
        cv = smooth.std(ddof=0) / smooth.mean()
        lines.append(
            f"| {k} | {(start + pd.Timedelta(hours=a)):%Y-%m-%d %H:%M} | "
            f"{(start + pd.Timedelta(hours=a + sel.hours)):%Y-%m-%d %H:%M} | "
            f"{window.min():,.0f} | {window.max():,.0f} | {cv:.2f} |"
        )
    lines += ["", "| variant | duration | mean/s | median/s | p99/s | max/s | events |"]
    lines.append("|---|---|---|---|---|---|---|")
    for name, spec in (("smoothed", "covid:peak=338"), ("raw", "covid:smooth=0,peak=338")):
        st = resolve_trace(spec).stats()
        lines.append(
            f"| {name} (`{spec}`) | {st.duration_s:.0f} s | {st.mean:.1f} | {st.median:.1f} | "
            f"{st.p99:.1f} | {st.max:.0f} | {st.total_events:,.0f} |"
        )
    lines.append("")
    lines.append(f"Start-up skipped: the first {sel.warmup_h} hours of the file.")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ figures


def _save(fig: plt.Figure, name: str) -> Path:
    path = FIG_DIR / name
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def fig_workload() -> Path:
    fig, ax = plt.subplots(figsize=SIZE)
    raw, smooth = resolve_trace("covid:smooth=0,peak=338"), resolve_trace("covid:peak=338")
    ax.plot(raw.rates, lw=0.4, color="0.6", label="raw (Table IX)")
    ax.plot(smooth.rates, lw=1.2, color="C0", label="smoothed (Tables IV-VIII, X, XI)")
    ax.set(xlabel="t (s)", ylabel="events/s", title="The covid workload")
    ax.legend(fontsize=7, loc="upper left")
    return _save(fig, "psps_workload.png")


def _lines(
    ax: plt.Axes,
    results: pd.DataFrame,
    series: pd.DataFrame,
    scenario: str,
    runs: dict[str, dict],
    column: str,
) -> None:
    for k, (label, select) in enumerate(runs.items()):
        data = series_of(series, run_of(results, scenario, select)["run_id"])
        ax.step(data["t"], data[column], where="post", lw=1.1, label=label, color=f"C{k}")


def fig_replicas(
    results: pd.DataFrame, series: pd.DataFrame, runs: dict, name: str, title: str
) -> Path:
    fig, ax = plt.subplots(figsize=SIZE)
    _lines(ax, results, series, "covid", runs, "replicas_total")
    ax.axhline(32, ls=":", color="k", lw=0.8, label="r_over = 32")
    ax.set(xlabel="t (s)", ylabel="active replicas", title=title, ylim=(0, 44))
    ax.legend(fontsize=7, ncol=5, loc="upper left")
    return _save(fig, name)


def fig_throughput(
    results: pd.DataFrame, series: pd.DataFrame, runs: dict, name: str, title: str
) -> Path:
    fig, ax = plt.subplots(figsize=SIZE)
    first = series_of(series, run_of(results, "covid", next(iter(runs.values())))["run_id"])
    ax.step(first["t"], first["input_rate"], where="post", color="0.5", lw=2, label="input")
    _lines(ax, results, series, "covid", runs, "output_rate")
    ax.set(xlabel="t (s)", ylabel="events/s", title=title, ylim=(0, 460))
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    return _save(fig, name)


def fig_dns(results: pd.DataFrame, series: pd.DataFrame) -> Path:
    fig, ax = plt.subplots(figsize=SIZE)
    data = series_of(series, run_of(results, "dns", {"policy": "psps"})["run_id"])
    ax.step(data["t"], data["input_rate"], where="post", color="0.5", lw=2, label="input")
    ax.step(data["t"], data["output_rate"], where="post", color="C0", label="PSPS throughput")
    ax.set(xlabel="t (s)", ylabel="events/s", title="Fig. 14: PSPS on the DNS-like stream")
    ax.set_ylim(0, 1.4 * data["input_rate"].max())
    right = ax.twinx()
    right.step(data["t"], data["replicas_total"], where="post", color="C3", label="replicas")
    right.set_ylabel("active replicas")
    right.set_ylim(0, 17)
    handles = ax.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=7, ncol=3, loc="upper left")
    return _save(fig, "psps_fig14.png")


def draw_figures(results: pd.DataFrame, series: pd.DataFrame) -> list[Path]:
    return [
        fig_workload(),
        fig_replicas(results, series, {**MAIN, **STORM}, "psps_fig8.png", "Fig. 8: replicas"),
        fig_throughput(results, series, {**MAIN, **STORM}, "psps_fig9.png", "Fig. 9: throughput"),
        fig_replicas(results, series, {**MAIN, **DABS}, "psps_fig10.png", "Fig. 10: replicas"),
        fig_throughput(results, series, {**MAIN, **DABS}, "psps_fig11.png", "Fig. 11: throughput"),
        fig_dns(results, series),
    ]


def write_tables(blocks: dict[str, str], docs: Sequence[Path] = DOCS) -> dict[Path, list[str]]:
    """Rewrite each page's marked blocks with the rendered tables it holds; a rendered table that
    is on no page is an error naming it."""
    written = {}
    for doc in docs:
        ids = {m["id"].strip() for m in BLOCK.finditer(doc.read_text())}
        written[doc] = update_markdown(doc, {i: text for i, text in blocks.items() if i in ids})
    missing = sorted(set(blocks) - {i for ids in written.values() for i in ids})
    if missing:
        pages = ", ".join(str(doc) for doc in docs)
        raise BenchError(f"no '<!-- bench-table: ID -->' block for {', '.join(missing)} in {pages}")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "psps")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--from-results", action="store_true")
    add_quiet(parser)
    args = parser.parse_args(argv)
    console = Console()
    bench, _ = load_bench(BENCH)
    results = (
        read_results(args.out)
        if args.from_results
        else run_bench(args.out, args.jobs, console, args.quiet)
    )
    results["error"] = results["error"].fillna("")
    failed = results[results["error"] != ""]
    if len(failed):
        console.print(f"[red]{len(failed)} run(s) failed: {', '.join(failed['run_id'])}")
        return 1
    series = read_timeseries(args.out)
    report = render_report(results, series, title="PSPS reproduction", notes=[f"{BENCH}"])
    (args.out / REPORT_FILE).write_text(report)
    blocks = render_tables(bench.tables, results)
    blocks["workload"] = workload_table()
    blocks["degradation"] = degradation_table(results, series)
    for doc, written in write_tables(blocks).items():
        console.print(f"tables {', '.join(written)} rewritten in {doc}")
    for path in draw_figures(results, series):
        console.print(f"{path} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
