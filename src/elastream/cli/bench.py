"""`elastream bench`: run a scenario matrix on the simulator, write results.csv and report.html."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from elastream.base.extras import require
from elastream.cli._renamed import add_old_option
from elastream.experiments.bench.outputs import (
    REPORT_FILE,
    RESULTS_FILE,
    read_results,
    read_timeseries,
    write_results,
)
from elastream.experiments.bench.runner import DEFAULT_JOBS, SIM_BACKEND, Backend, run_matrix
from elastream.experiments.bench.scenario import BenchError, BenchFile, RunSpec, load_bench
from elastream.experiments.bench.tables import render_tables, update_markdown
from elastream.report.progress import add_quiet


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run every (scenario, policy, grid point) of SCENARIOS.yaml on the simulator, "
        "in parallel processes, and write results.csv, intervals.csv and report.html to --out. "
        "Format of the file: docs/policies.md#benchmarks."
    )
    parser.add_argument("scenarios", type=Path, metavar="SCENARIOS.yaml")
    parser.add_argument(
        "--out", type=Path, default=Path("runs/bench"), help="output directory (default runs/bench)"
    )
    parser.add_argument(
        "--jobs", type=int, default=DEFAULT_JOBS, help=f"parallel runs (default {DEFAULT_JOBS})"
    )
    parser.add_argument("--data-dir", type=Path, help="where trace files are looked up by name")
    parser.add_argument(
        "--only", action="append", metavar="SCENARIO", help="run only this scenario (repeatable)"
    )
    parser.add_argument(
        "--label", action="append", metavar="LABEL", help="run only this policy label (repeatable)"
    )
    add_old_option(parser, "--policy", "--label", "label", append=True)
    add_quiet(parser)
    parser.add_argument(
        "--markdown",
        type=Path,
        help="rewrite the <!-- bench-table: ID --> blocks of this file from the results",
    )
    parser.add_argument(
        "--history",
        type=Path,
        help="metrics history database the runs are recorded in (default: --out/history.sqlite)",
    )
    parser.add_argument(
        "--no-history", action="store_true", help="do not record the runs' metrics history"
    )
    parser.add_argument(
        "--from-results",
        action="store_true",
        help="do not run: rebuild report.html (and --markdown) from --out/results.csv",
    )
    parser.set_defaults(handler=run)


def select(
    specs: Sequence[RunSpec], only: Sequence[str] | None, policies: Sequence[str] | None
) -> list[RunSpec]:
    """The specs of the named scenarios and policy labels; unknown names are errors."""
    for names, attr, what in ((only, "scenario", "scenario"), (policies, "label", "policy label")):
        known = {getattr(s, attr) for s in specs}
        for name in names or ():
            if name not in known:
                raise BenchError(f"unknown {what} {name!r} (known: {', '.join(sorted(known))})")
    return [
        s
        for s in specs
        if (not only or s.scenario in only) and (not policies or s.label in policies)
    ]


def print_summary(results: pd.DataFrame, console: Console) -> None:
    table = Table(title="bench results", show_lines=False)
    for heading in ("run", "saved", "thr.degr.", "processed", "latency ms", "p99 ms", "SLA 2×"):
        table.add_column(heading, justify="left" if heading == "run" else "right")
    for _, row in results.iterrows():
        if row["error"]:
            table.add_row(str(row["run_id"]), f"[red]failed: {row['error']}")
            continue
        cells = [
            f"{row['replica_seconds_saved_ratio']:.4f}",
            f"{row['throughput_degradation']:.4f}",
            f"{row['processed_ratio']:.4f}",
            f"{row['latency_ms_mean']:.1f}",
            f"{row['latency_ms_p99']:.1f}",
            "–" if pd.isna(row["sla_2x"]) else f"{row['sla_2x']:.1%}",
        ]
        table.add_row(str(row["run_id"]), *cells)
    console.print(table)


def write_report(out: Path, results: pd.DataFrame, source: Path) -> Path:
    require("matplotlib", extra="plots", feature="the bench's report.html")
    from elastream.experiments.bench.report import render_report

    html = render_report(
        results,
        read_timeseries(out),
        title=f"elastream bench: {source.name}",
        notes=[f"scenario file: {source}"],
    )
    path = out / REPORT_FILE
    path.write_text(html)
    return path


def rewrite_markdown(bench: BenchFile, results: pd.DataFrame, path: Path) -> list[str]:
    if not bench.tables:
        raise BenchError(f"--markdown: the scenario file defines no 'tables' to write to {path}")
    return update_markdown(path, render_tables(bench.tables, results))


def run(args: argparse.Namespace, backend: Backend = SIM_BACKEND) -> int:
    console = Console()
    data_dir = str(args.data_dir) if args.data_dir else None
    bench, specs = load_bench(args.scenarios, data_dir)
    if args.from_results:
        results = read_results(args.out / RESULTS_FILE)
    else:
        chosen = select(specs, args.only, args.label)
        console.print(f"{len(chosen)} run(s), {args.jobs} at a time -> {args.out}")
        history = None if args.no_history else args.history or args.out / "history.sqlite"
        records = run_matrix(
            chosen, backend, jobs=args.jobs, console=console, history=history, quiet=args.quiet
        )
        results, _ = write_results(records, args.out)
        print_summary(results, console)
    results["error"] = results["error"].fillna("")
    report = write_report(args.out, results, args.scenarios)
    console.print(f"results: {args.out / RESULTS_FILE}\nreport:  {report}")
    if args.markdown:
        written = rewrite_markdown(bench, results, args.markdown)
        console.print(f"tables {', '.join(written)} rewritten in {args.markdown}")
    failed = int((results["error"] != "").sum())
    if failed:
        console.print(f"[red]{failed} run(s) failed; see the 'error' column of results.csv")
    return 1 if failed else 0
