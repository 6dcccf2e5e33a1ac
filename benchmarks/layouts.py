"""The two Spark layouts side by side (`spark.layout`: `operator`, a query per operator;
`pipeline`, one query for the whole pipeline): per-hop latency at low load, the highest sustained
rate of 3 pass-through operators with its ratio to plain Spark, and how latency, driver-side
memory and the sustained rate scale with 3, 10 and 20 operators.

Prints figures (no asserts). Each part is a separate command (keep each under the shared lock
short):
    .venv/bin/python benchmarks/layouts.py latency [--replicas 1,2]
    .venv/bin/python benchmarks/layouts.py ladder --backends sqlite \
        --kinds columns --rates 50000,75000,100000 [--plain]
    .venv/bin/python benchmarks/layouts.py scale [--operators 3,10,20]
    .venv/bin/python benchmarks/layouts.py demo [--layouts pipeline]
Common options: --layouts operator,pipeline  --seconds S (per run)  --trigger S
    --spark JSON (more spark.* settings, e.g. '{"ui": false}'; several: each a variant, run in
    turn and printed side by side)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from itertools import count, pairwise
from pathlib import Path
from statistics import mean

from throughput import (
    FUNCTIONS,
    PROGRESS_KEYS,
    RateStep,
    _backends,
    _kinds,
    _rates,
    addresses,
    plain_in_subprocess,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.config import make_config
from elastream.model.pipeline import Pipeline, pipeline_from_dict
from elastream.report.progress import add_quiet, steps
from elastream.runner.engines import run_engine
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads.generators import constant
from reproductions.harness.redis_server import LocalRedis

LAYOUTS = ("operator", "pipeline")
HELPER = "python_streaming_source_runner"
# Each run in its own folder: Python workers outlive a run in the shared session and keep their
# connection to the store they opened, so a store at a reused path would be the old one to them.
RUN_IDS = count()


def chain_pipeline(n: int, kind: str, replicas: int) -> Pipeline:
    """src -> op1 -> ... -> opN -> out, each a pass-through (`kind`: events or columns) with a
    pool of `replicas`."""
    function, vectorized = FUNCTIONS[kind]
    ops = [f"op{i}" for i in range(1, n + 1)]
    chain = ["src", *ops, "out"]
    return pipeline_from_dict(
        {
            "name": f"passthrough{n}",
            "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate"}],
            "operators": [
                {
                    "name": name,
                    "function": function,
                    "vectorized": vectorized,
                    "et_ms": 0.01,  # a first admission cap that does not throttle the start
                    "replicas": {"min": 1, "max": replicas},
                }
                for name in ops
            ],
            "sinks": [{"name": "out"}],
            "streams": [{"from": a, "to": b} for a, b in pairwise(chain)],
        }
    )


def rss_mb(pid: int) -> float:
    """Resident set size of process `pid` in MB (0 if it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0.0
    lines = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(lines[0].split()[1]) / 1024 if lines else 0.0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:  # ended since it was listed
        return found
    for task in tasks:
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:  # the thread ended while we looked
            continue
    return found


def driver_side_mb() -> tuple[float, int]:
    """RSS of the driver (this process), the Spark JVM and the source helpers (MB), and the number
    of helpers; the executors' Python workers are not counted (the same pool in both layouts)."""
    total, helpers, todo = rss_mb(os.getpid()), 0, _children(os.getpid())
    while todo:
        pid = todo.pop()
        todo += _children(pid)
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # gone since it was listed
            continue
        if exe.endswith("java"):
            total += rss_mb(pid)
        elif HELPER.encode() in cmdline:
            total += rss_mb(pid)
            helpers += 1
    return total, helpers


@dataclass
class Peak:
    """The highest driver-side RSS seen by a sampling thread, and the helpers then."""

    mb: float = 0.0
    helpers: int = 0

    def sample(self, stop: threading.Event, every_s: float = 2.0) -> None:
        while not stop.wait(every_s):
            mb, helpers = driver_side_mb()
            if mb > self.mb:
                self.mb, self.helpers = mb, helpers


@dataclass(frozen=True)
class LayoutRun:
    """One constant-rate run of one layout."""

    step: RateStep
    hops: int
    peak: Peak
    batch_s: float | None  # mean micro-batch that read events, over the run's queries
    batches: int  # micro-batches that read events, over the run's queries
    phases: dict[str, float]  # mean s per phase (PROGRESS_KEYS) of those micro-batches

    @property
    def hop_s(self) -> float | None:
        return None if self.step.mean_s is None else self.step.mean_s / self.hops


def run_layout(
    pipeline: Pipeline,
    layout: str,
    rate: float,
    args: argparse.Namespace,
    out: Path,
    queues: str | None = None,
    replicas: int = 2,
) -> LayoutRun:
    """`pipeline` at a constant `rate` for args.seconds with static `replicas` in `layout`."""
    out = out / f"run{next(RUN_IDS)}"
    spark = {"layout": layout, **args.variant}
    if args.trigger is not None:  # else spark.trigger_s's default
        spark.setdefault("trigger_s", args.trigger)
    config = make_config(
        spark=spark,
        policy="static",
        replicas=replicas,
        interval_s=5.0,
        out=out,
        drain_s=15,
        event_timeout_s=30.0,
        queue_capacity=None,
        queues=queues,
    )
    trace = constant(rate=float(rate), duration=args.seconds)
    engine = SparkEngine(pipeline, config, trace, keep_session=True)
    peak, stop = Peak(), threading.Event()
    sampler = threading.Thread(target=peak.sample, args=(stop,), daemon=True)
    sampler.start()
    try:
        result = run_engine(engine, config)
    finally:
        stop.set()
        sampler.join()
    progress = [
        p["durationMs"]
        for q in engine.queries.running.values()
        for p in q.recentProgress
        if p["numInputRows"] and "durationMs" in p
    ]
    rows = [d["triggerExecution"] / 1000 for d in progress]
    phases = {k: mean(d.get(k, 0) for d in progress) / 1000 for k in PROGRESS_KEYS} if rows else {}
    totals = result.totals
    step = RateStep(
        int(rate),
        result.summary.processed_ratio,
        None if totals.latency_ms_p99 is None else totals.latency_ms_p99 / 1000,
        None if totals.latency_ms_mean is None else totals.latency_ms_mean / 1000,
    )
    shutil.rmtree(out, ignore_errors=True)
    batch_s = mean(rows) if rows else None
    return LayoutRun(step, len(pipeline.operators), peak, batch_s, len(rows), phases)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def describe(layout: str, run: LayoutRun) -> str:
    step = run.step
    return (
        f"{layout:<8} processed {step.processed_ratio:.4f}  mean {_fmt(step.mean_s)} s  "
        f"p99 {_fmt(step.p99_s, 2)} s  per hop {_fmt(run.hop_s)} s  batch {_fmt(run.batch_s)} s "
        f"x {run.batches}  driver+JVM+helpers {run.peak.mb:,.0f} MB ({run.peak.helpers} helpers)"
    )


def describe_phases(run: LayoutRun) -> str:
    """The micro-batch's phases (Spark's durationMs, mean s), and the load average now."""
    shown = "  ".join(f"{k} {v:.3f}" for k, v in run.phases.items())
    return f"batch phases: {shown}  (load {os.getloadavg()[0]:.2f})"


def _variant_label(variant: dict) -> str:
    return json.dumps(variant) if variant else "defaults"


def latency(args: argparse.Namespace, out: Path) -> None:
    """Per-hop latency at 10 events/s, 3 operators, each layout, r = 1 and r = 2."""
    for replicas in steps(args.replicas, "replicas", quiet=args.quiet):
        print(f"3 pass-through operators at 10 events/s, r = {replicas}:", flush=True)
        for layout in args.layouts:
            for variant in args.spark:
                args.variant = variant
                pipeline = chain_pipeline(3, "events", replicas)
                run = run_layout(pipeline, layout, 10, args, out / layout, replicas=replicas)
                label = f"  [{_variant_label(variant)}]" if len(args.spark) > 1 else ""
                print("  " + describe(layout, run) + label, flush=True)
                print("    " + describe_phases(run), flush=True)


def ladder(args: argparse.Namespace, out: Path) -> None:
    """The highest sustained rate of 3 pass-through operators (r = 2), per backend, operator
    kind and layout: rates rise until a rung fails."""
    capacity = None
    if args.plain:
        capacity, used = plain_in_subprocess(50_000, 30, out)
        print(f"plain Spark, 3 x mapInPandas: capacity {capacity:,.0f} rows/s ({used:.2f} s of "
              "each 1 s trigger used)", flush=True)  # fmt: skip
    server = LocalRedis(out / "redis") if "redis" in args.backends else None
    try:
        if server is not None:
            server.start()
        for backend in steps(args.backends, "backends", quiet=args.quiet):
            queues, _ = addresses(backend, out, server)
            for kind in args.kinds:
                for layout in args.layouts:
                    best = climb(backend, kind, layout, args, out, queues)
                    ratio = f"; ratio to plain Spark {best / capacity:.3f}" if capacity else ""
                    print(f"{backend} {kind} {layout}: highest sustained {best:,} ev/s{ratio}")
    finally:
        if server is not None:
            server.stop()


def climb(
    backend: str,
    kind: str,
    layout: str,
    args: argparse.Namespace,
    out: Path,
    queues: str | None,
) -> int:
    """Rising rates until one is not sustained; the highest sustained (0: none)."""
    best = 0
    for rate in args.rates:
        pipeline = chain_pipeline(3, kind, 2)
        run = run_layout(pipeline, layout, rate, args, out / f"{backend}-{layout}", queues)
        ok = run.step.sustained
        print(f"  {backend} {kind} {rate:>8,} ev/s  " + describe(layout, run), flush=True)
        if not ok:
            break
        best = rate
    return best


def scale(args: argparse.Namespace, out: Path) -> None:
    """3, 10 and 20 operators (r = 1): per-hop latency and driver-side RSS at 10 events/s, then
    the sustained rate at args.rates (first failing rung ends the climb)."""
    for n in steps(args.operators, "operators", quiet=args.quiet):
        print(f"{n} pass-through operators, r = 1:", flush=True)
        for layout in args.layouts:
            pipeline = chain_pipeline(n, "columns", 1)
            run = run_layout(pipeline, layout, 10, args, out / f"{n}-{layout}", replicas=1)
            print(f"  10 ev/s {describe(layout, run)}", flush=True)
            for rate in args.scale_rates:
                run = run_layout(pipeline, layout, rate, args, out / f"{n}-{layout}", replicas=1)
                print(f"  {rate:,} ev/s {describe(layout, run)}", flush=True)
                if not run.step.sustained:
                    break


def demo(args: argparse.Namespace, out: Path) -> None:
    """The tweet demo (`elastream demo`: psps, the demo trace to 100 events/s over 180 s) in
    each layout: mean and p99 end-to-end latency, processed ratio, wall time."""
    for layout in steps(args.layouts, "layouts", quiet=args.quiet):
        folder = out / f"demo-{layout}"
        folder.mkdir(parents=True, exist_ok=True)
        settings = folder / "run.yaml"
        settings.write_text(f"spark:\n  layout: {layout}\n")
        command = [sys.executable, "-m", "elastream.cli", "demo", "--quiet"]
        command += ["--config", str(settings), "--out", str(folder / "run")]
        began = time.time()
        subprocess.run(command, check=True, capture_output=True)
        summary = json.loads((folder / "run" / "summary.json").read_text())
        mean_s, p99_s = (summary[k] / 1000 for k in ("latency_ms_mean", "latency_ms_p99"))
        print(
            f"demo {layout:<8} mean {mean_s:.2f} s  p99 {p99_s:.2f} s  processed "
            f"{summary['processed_ratio']:.4f}  ({time.time() - began:.0f} s)",
            flush=True,
        )


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(","))


def _spark_variant(text: str) -> dict:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"--spark: a JSON object, got {text!r}")
    return value


def _layouts(text: str) -> tuple[str, ...]:
    names = tuple(text.split(","))
    if any(n not in LAYOUTS for n in names):
        raise argparse.ArgumentTypeError(f"--layouts: {text!r} (known: {', '.join(LAYOUTS)})")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("latency", "ladder", "scale", "demo"))
    parser.add_argument("--layouts", type=_layouts, default=LAYOUTS)
    parser.add_argument("--seconds", type=float, default=30.0, help="trace length of each run")
    parser.add_argument("--trigger", type=float, default=None, help="spark.trigger_s, s")
    parser.add_argument(
        "--spark",
        type=_spark_variant,
        action="append",
        default=None,
        help="JSON object of more spark.* settings; given several times: variants side by side",
    )
    parser.add_argument("--replicas", type=_ints, default=(1, 2), help="latency: r per operator")
    parser.add_argument("--backends", type=_backends, default=("sqlite",))
    parser.add_argument("--kinds", type=_kinds, default=("columns",))
    parser.add_argument("--rates", type=_rates, default=(20_000, 50_000, 75_000, 100_000))
    parser.add_argument("--plain", action="store_true", help="ladder: measure plain Spark first")
    parser.add_argument("--operators", type=_ints, default=(3, 10, 20))
    parser.add_argument("--scale-rates", type=_rates, default=(), help="scale: rates to climb")
    parser.add_argument("--out", type=Path, default=None, help="work directory (default: temp)")
    add_quiet(parser)
    args = parser.parse_args()
    args.spark = args.spark or [{}]
    args.variant = args.spark[0]  # the settings of the run going on (latency: each in turn)
    out = args.out or Path(tempfile.mkdtemp(prefix="elastream-layouts-"))
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    try:
        parts = {"latency": latency, "ladder": ladder, "scale": scale, "demo": demo}
        parts[args.part](args, out)
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
