"""Long traces on the simulator: wall time, peak memory and output size of month-long runs.

Targets (issue 28, item 4): the 55-day NAB trace (twitter volume of AAPL, 5-minute buckets,
at its own scale: peak about 45 events/s) through the tweet pipeline with the CLI's default
settings in at most 60 s and 500 MB; one week of the per-second Twitter sample (its 3 days
repeated) at a peak of 200 events/s in at most 120 s. Each case runs the CLI's run path
(`run_session`: live table off, outputs and metrics history written) in a child process, so the
peak RSS is the case's own; on a shared machine the CPU seconds are the steadier figure. The
defaults are the CLI's: fast-forward where exact (on for psps), one series row per snapshot.
No asserts: figures only, with the targets beside them.

Usage:
    .venv/bin/python benchmarks/long_traces.py [--quick] [--data-dir ../shared/data]
        [--resolution SECONDS] [--fast-forward | --no-fast-forward] [--keep DIR]
        [--case nab-55d|twitter-week]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elastream.config import RunConfig
from elastream.config.files import load_pipeline
from elastream.report.progress import add_quiet, steps
from elastream.runner.session import run_session
from elastream.runtime.sim import SimSettings, profile_pipeline
from elastream.workloads import resolve_trace
from elastream.workloads.resolve import default_data_dir

TWEETS = Path(__file__).resolve().parents[1] / "src/elastream/examples/tweets.yaml"
DAY_S = 86_400


@dataclass(frozen=True)
class Case:
    name: str
    trace: str
    days: float  # run length (the per-second trace is repeated to reach it)
    peak_rate: float | None  # None: the trace's own scale
    target_s: float
    target_mb: float | None
    quick_days: float


CASES = (
    Case("nab-55d", "nab_twitter_volume_aapl_5min.csv", 55.2, None, 60.0, 500.0, 2.0),
    Case("twitter-week", "twitter_sample_per_second_3days.txt", 7.0, 200.0, 120.0, None, 0.25),
)


def repeated_trace(case: Case, days: float, data_dir: Path, folder: Path) -> str:
    """The case's trace file, repeated to `days` when it is shorter (written into `folder`)."""
    trace = resolve_trace(case.trace, data_dir)
    seconds = int(days * DAY_S)
    if trace.duration_s >= seconds:
        return case.trace
    copies = int(np.ceil(seconds / trace.duration_s))
    rates = np.tile(trace.rates, copies)[: int(seconds / trace.step_s)]
    path = folder / f"{Path(case.trace).stem}_{days:g}d.txt"
    path.write_text("\n".join(str(round(r * trace.step_s)) for r in rates) + "\n")
    return str(path)


def run_case(case: Case, days: float, args: argparse.Namespace, folder: Path) -> dict:
    """One run through the CLI's path; returns its figures (in the child process)."""
    data_dir = args.data_dir or default_data_dir()
    trace = repeated_trace(case, days, data_dir, folder)
    out = folder / case.name
    config = RunConfig(
        engine="sim",
        policy="psps",
        # the PSPS paper's timeout and queue bound (the defaults drop nothing)
        event_timeout_s=30.0,
        queue_capacity=100_000,
        trace=trace,
        data_dir=data_dir,
        peak_rate=case.peak_rate,
        duration=days * DAY_S,
        out=out,
        history=folder / f"{case.name}-history.sqlite",
        series_resolution_s=args.resolution,
    )
    pipeline = load_pipeline(TWEETS)
    settings = SimSettings(fast_forward=args.fast_forward)  # None: the CLI's default
    profile_pipeline(pipeline, settings, config.seed)  # the profiling pass, cached: not timed
    started, cpu = time.perf_counter(), time.process_time()
    result, paths = run_session(pipeline, config, title=case.name, quiet=True, sim=settings)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    sizes = {kind: path.stat().st_size for kind, path in paths.items()}
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "outputs_mb": sum(sizes.values()) / 1e6,
        "timeseries_mb": sizes["timeseries"] / 1e6,
        "history_mb": config.history_path().stat().st_size / 1e6,
        "intervals": result.summary.intervals,
        "events_in": result.summary.events_in,
        "processed_ratio": result.summary.processed_ratio,
        "latency_ms_mean": result.summary.latency_ms_mean,
        "replicas_mean": result.summary.replicas_mean,
    }


def child(args: argparse.Namespace) -> None:
    case = next(c for c in CASES if c.name == args.case)
    days = case.quick_days if args.quick else case.days
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        figures = run_case(case, days, args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="long_traces_") as tmp:
            figures = run_case(case, days, args, Path(tmp))
    print(json.dumps(figures | {"days": days}))


def target(value: float, limit: float | None) -> str:
    if limit is None:
        return "-"
    return f"≤ {limit:g} ({'met' if value <= limit else 'MISSED'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short stretch of each trace")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument(
        "--resolution",
        type=float,
        default=None,
        help="series_resolution_s of the outputs (default: the CLI's, a row per snapshot)",
    )
    parser.add_argument(
        "--fast-forward",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force fast-forward on or off (default: the CLI's, on where exact)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="keep the outputs in this folder")
    parser.add_argument("--case", help="run only this case")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    add_quiet(parser)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    ff = {None: "as the CLI (on where exact)", True: "forced on", False: "off"}[args.fast_forward]
    series = "a row per snapshot" if args.resolution is None else f"every {args.resolution:g} s"
    print(f"tweets pipeline, psps, td 5 s, steps of 0.1 s, fast-forward {ff}, series {series}")
    print(
        f"{'case':<14} {'days':>5} {'wall s':>7} {'target':>16} {'cpu s':>7} {'peak MB':>8} "
        f"{'target':>16} "
        f"{'outputs MB':>10} {'history MB':>10} {'intervals':>9} {'processed':>9}"
    )
    chosen = [case for case in CASES if not args.case or case.name == args.case]
    for case in steps(chosen, "long traces", quiet=args.quiet):
        command = [sys.executable, __file__, "--child", "--case", case.name, *sys.argv[1:]]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{case.name:<14} failed:\n{done.stderr}")
            continue
        f = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{case.name:<14} {f['days']:>5g} {f['wall_s']:>7.1f} "
            f"{target(f['wall_s'], case.target_s):>16} {f['cpu_s']:>7.1f} {f['peak_rss_mb']:>8.0f} "
            f"{target(f['peak_rss_mb'], case.target_mb):>16} {f['outputs_mb']:>10.2f} "
            f"{f['history_mb']:>10.2f} {f['intervals']:>9} {f['processed_ratio']:>9.4f}"
        )


if __name__ == "__main__":
    main()
