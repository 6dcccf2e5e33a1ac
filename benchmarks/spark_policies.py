"""Benchmark on real Spark: psps vs static r=1 and r=max on one pipeline and load, and the
runtime's per-event overhead against a plain Structured Streaming query doing the same work.

Prints figures (no asserts). Usage:
    .venv/bin/python benchmarks/spark_policies.py [--duration 120] [--peak-rate 100] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.cli.demo import demo_pipeline_path
from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.model.metric_catalog import PAPER_METRICS
from elastream.model.pipeline import Pipeline
from elastream.report.progress import add_quiet, steps
from elastream.runner.engines import run_engine
from elastream.runner.workload import prepare_workload
from elastream.runtime.spark.runtime import SparkEngine
from elastream.runtime.spark.session import spark_session
from elastream.workloads.generators import constant

METRICS = (
    *PAPER_METRICS,
    "latency_ms_p99",
    "replicas_mean",
    "reconfigurations",
)


def policy_runs(pipeline: Pipeline, args: argparse.Namespace) -> dict[str, dict]:
    """The same pipeline and trace under psps, static r=1 and static r=max."""
    pool = max(op.replicas.max for op in pipeline.operators)
    runs = {
        "psps": {"policy": "psps"},
        "static r=1": {"policy": "static", "replicas": 1},
        f"static r={pool}": {"policy": "static", "replicas": pool},
    }
    results = {}
    for label in steps(runs, "policy runs", quiet=args.quiet):
        settings = runs[label]
        config = make_config(
            trace=f"demo:duration={args.duration:g},peak={args.peak_rate:g}",
            interval_s=args.interval_s,
            out=args.out / label.replace(" ", "_").replace("=", ""),
            drain_s=args.drain_s,
            **settings,
        )
        trace = prepare_workload(config, pipeline)
        engine = SparkEngine(config.starting_pipeline(pipeline), config, trace, keep_session=True)
        started = time.time()
        result = run_engine(engine, config)
        results[label] = result.summary.as_dict() | {"wall_s": time.time() - started}
        print(f"{label}: done in {results[label]['wall_s']:.0f} s", flush=True)
    return results


def no_service_time(pipeline: Pipeline, replicas: int) -> Pipeline:
    """The same operators with no emulated service time and a fixed number of replicas."""
    data = pipeline.model_dump(mode="json", by_alias=True)
    for op in data["operators"]:
        op["service_time_ms"] = 0.0
        op["replicas"] = {"min": replicas, "max": replicas}
    return Pipeline.model_validate(data)


def elastream_per_event(pipeline: Pipeline, events: int, out: Path) -> float:
    """Seconds per event through the elastream runtime (static replicas, saturating load)."""
    trace = constant(rate=float(events), duration=1.0)  # the whole load at once: a backlog
    config = make_config(
        policy="static",
        replicas=2,
        interval_s=2.0,
        out=out,
        drain_s=300,
        event_timeout_s=None,
        queue_capacity=None,
        spark={"batch_s": 600.0},  # admit the whole backlog in one batch per operator
    )
    engine = SparkEngine(pipeline, config, trace, keep_session=True)
    run_engine(engine, config)
    first, last = engine.store.sink_span()
    return (last - first) / events


def plain_spark_per_event(pipeline: Pipeline, events: int, out: Path, batch: int) -> float:
    """Seconds per event for a plain Structured Streaming query applying the same operator
    functions in mapInPandas to the same generated events read from JSON files, all in one
    micro-batch, as the elastream run above admits the whole backlog in one batch per operator."""
    from reproductions.baselines.plain_spark import run_plain_query

    return run_plain_query(pipeline, events, out, batch) / events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=120.0)
    parser.add_argument("--peak-rate", type=float, default=100.0)
    parser.add_argument("--interval-s", type=float, default=5.0)
    parser.add_argument("--drain-s", type=float, default=60.0)
    parser.add_argument("--overhead-events", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="bench-")))
    parser.add_argument(
        "--overhead-only", action="store_true", help="skip the policy runs: per-event overhead only"
    )
    add_quiet(parser)
    args = parser.parse_args()
    pipeline = load_pipeline(demo_pipeline_path())
    spark_session(f"local[{pipeline.overprovisioned_replicas}]")

    results = {} if args.overhead_only else policy_runs(pipeline, args)
    if results:
        print(f"\n{'metric':<24}" + "".join(f"{label:>16}" for label in results))
    for metric in (*METRICS, "wall_s") if results else ():
        row = "".join(f"{_fmt(results[label][metric]):>16}" for label in results)
        print(f"{metric:<24}{row}")

    light = no_service_time(pipeline, 2)
    shutil.rmtree(args.out / "overhead", ignore_errors=True)
    ours = elastream_per_event(light, args.overhead_events, args.out / "overhead" / "elastream")
    plain = plain_spark_per_event(
        light, args.overhead_events, args.out / "overhead" / "plain", batch=args.overhead_events
    )
    print(f"\nper-event time, {args.overhead_events} events, no service time, 2 replicas/op:")
    print(f"  elastream runtime  {ours * 1000:8.3f} ms/event")
    print(f"  plain Spark query  {plain * 1000:8.3f} ms/event")
    print(f"  ratio              {ours / plain:8.2f}x")
    (args.out / "bench.json").write_text(
        json.dumps(
            {"policies": results, "overhead": {"elastream_s": ours, "plain_s": plain}}, indent=2
        )
    )
    print(f"\nresults: {args.out / 'bench.json'}")


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) and abs(value) < 10 else f"{value:.1f}"


if __name__ == "__main__":
    main()
