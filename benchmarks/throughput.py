"""Data-path benchmark on real Spark: the highest constant rate a 3-operator pass-through pipeline
sustains (processed ratio >= 0.999, p99 latency <= 5 s), next to a plain Structured Streaming query
on the built-in `rate` source doing three pass-through `mapInPandas` steps; the mean latency per
hop at low load and where it goes; the feeder's append rate. Each queue backend side by side:
the embedded SQLite file, and Redis Streams on a redis-server the benchmark starts (AOF with
`appendfsync always`, the exactly-once setting).

Prints figures (no asserts). Usage:
    .venv/bin/python benchmarks/throughput.py [--quick] [--rates R1,R2] [--out D]
        [--backends sqlite,redis] [--kinds events,columns]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from statistics import mean

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.config import make_config
from elastream.model.batch import EventBatch
from elastream.model.events import Event, Outcome, OutcomeKind
from elastream.model.pipeline import Pipeline, pipeline_from_dict
from elastream.report.progress import add_quiet, steps
from elastream.runner.engines import run_engine
from elastream.runtime.queues import QueueStore, open_store, reset_store
from elastream.runtime.queues.records import share_commit
from elastream.runtime.spark import task
from elastream.runtime.spark.feeder import SourceStream
from elastream.runtime.spark.runtime import SparkEngine
from elastream.runtime.spark.session import spark_session
from elastream.runtime.spark.source import plan_partitions
from elastream.workloads.generators import constant
from reproductions.harness.redis_server import LocalRedis

OPERATORS = ("first", "second", "third")
RATES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
QUICK_RATES = (1_000, 2_000, 5_000)
MIN_PROCESSED = 0.999
MAX_P99_S = 5.0
PROGRESS_KEYS = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")


@dataclass(frozen=True)
class RateStep:
    """One constant-rate run of the pipeline."""

    rate: int
    processed_ratio: float
    p99_s: float | None
    mean_s: float | None

    @property
    def sustained(self) -> bool:
        return self.processed_ratio >= MIN_PROCESSED and (self.p99_s or 0.0) <= MAX_P99_S


FUNCTIONS = {  # operator kind -> (the pass-through function, vectorized)
    "events": ("elastream.examples.synthetic:passthrough", False),
    "columns": ("elastream.examples.synthetic:passthrough_columns", True),
}


def passthrough_pipeline(replicas: int, kind: str = "events") -> Pipeline:
    """src -> first -> second -> third -> out, each operator a pass-through at `replicas`: the
    per-event function (`kind` "events") or the vectorized one ("columns")."""
    function, vectorized = FUNCTIONS[kind]
    chain = ["src", *OPERATORS, "out"]
    return pipeline_from_dict(
        {
            "name": "passthrough3",
            "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate"}],
            "operators": [
                {
                    "name": name,
                    "function": function,
                    "vectorized": vectorized,
                    "et_ms": 0.01,  # a first admission cap that does not throttle the start
                    "replicas": {"min": 1, "max": replicas},
                }
                for name in OPERATORS
            ],
            "sinks": [{"name": "out"}],
            "streams": [{"from": a, "to": b} for a, b in pairwise(chain)],
        }
    )


def run_rate(
    pipeline: Pipeline,
    rate: int,
    duration_s: float,
    out: Path,
    queues: str | None,
    spark: dict | None = None,
) -> tuple[RateStep, dict]:
    """One run at a constant `rate` (queues at `queues`, None: the embedded default; `spark`:
    Spark settings); its result and the queries' mean progress durations."""
    config = make_config(
        spark=spark or {},
        policy="static",
        replicas=2,
        interval_s=5.0,
        out=out,
        drain_s=15,
        event_timeout_s=30.0,
        queue_capacity=None,
        queues=queues,
    )
    engine = SparkEngine(
        pipeline, config, constant(rate=float(rate), duration=duration_s), keep_session=True
    )
    result = run_engine(engine, config)
    durations = progress_durations(engine.queries.running.values())
    totals = result.totals
    step = RateStep(
        rate,
        result.summary.processed_ratio,
        None if totals.latency_ms_p99 is None else totals.latency_ms_p99 / 1000,
        None if totals.latency_ms_mean is None else totals.latency_ms_mean / 1000,
    )
    return step, durations


def progress_durations(queries) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Mean seconds per micro-batch that read events, by phase, over all queries."""
    rows = [
        p["durationMs"]
        for q in queries
        for p in q.recentProgress
        if p["numInputRows"] and "durationMs" in p
    ]
    keys = ("triggerExecution", *PROGRESS_KEYS)
    return {k: mean(r.get(k, 0) for r in rows) / 1000 for k in keys} if rows else {}


def highest_sustained(
    pipeline: Pipeline, rates: tuple[int, ...], duration_s: float, out: Path, queues: str | None
) -> list[RateStep]:
    """Rising rates until one is not sustained."""
    steps = []
    for rate in rates:
        step, _ = run_rate(pipeline, rate, duration_s, out / f"rate-{rate}", queues)
        steps.append(step)
        p99 = "-" if step.p99_s is None else f"{step.p99_s:.2f}"
        print(
            f"  {rate:>8,} ev/s  processed {step.processed_ratio:.4f}  p99 {p99} s  "
            f"{'sustained' if step.sustained else 'NOT sustained'}",
            flush=True,
        )
        shutil.rmtree(out / f"rate-{rate}", ignore_errors=True)
        if not step.sustained:
            break
    return steps


def plain_spark_capacity(rate: int, batches: int, out: Path) -> tuple[float, float]:
    """A plain query: `rate` source -> three pass-through mapInPandas -> noop, 1 s trigger, over
    `batches` triggers after 3 of warm-up. Returns (rows per second of busy trigger time, mean
    seconds of each 1 s trigger used)."""
    spark = spark_session("local[2]")
    frame = spark.readStream.format("rate").option("rowsPerSecond", rate).load()
    for _ in range(3):
        frame = frame.mapInPandas(_same_frames, frame.schema)
    query = (
        frame.writeStream.format("noop")
        .trigger(processingTime="1 second")
        .option("checkpointLocation", str(out / "plain-checkpoint"))
        .start()
    )
    deadline = time.time() + 120 + 2 * batches
    while len(_busy_batches(query)) < batches + 3 and time.time() < deadline:
        time.sleep(1)
    progress = _busy_batches(query)[3:]
    spark.sparkContext.setLogLevel("FATAL")  # a stop mid-batch logs aborted writes
    query.stop()
    spark.sparkContext.setLogLevel("ERROR")
    rows = sum(p["numInputRows"] for p in progress)
    busy = sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000
    return (rows / busy if busy else 0.0), (busy / len(progress) if progress else 0.0)


def _busy_batches(query) -> list[dict]:  # type: ignore[no-untyped-def]
    return [p for p in query.recentProgress if p["numInputRows"]]


def _same_frames(frames: Iterator) -> Iterator:  # type: ignore[type-arg]
    yield from frames


def bench_store(address: str) -> QueueStore:
    """A fresh store at `address` for a micro-benchmark."""
    reset_store(address)
    return open_store(address)


def feeder_rate(pipeline: Pipeline, events: int, tick_events: int, address: str) -> float:
    """Events per second the feeder's generate-and-append path reaches, alone."""
    store = bench_store(address)
    for name in OPERATORS:
        store.create_queue(name, None)
    stream = SourceStream(pipeline.sources[0], pipeline, store, seed=0)
    started = time.perf_counter()
    for due in range(tick_events, events + 1, tick_events):
        stream.feed_until(due)
    elapsed = time.perf_counter() - started
    store.close()
    return events / elapsed


def store_round_trip_s(address: str, share: int = 10, rounds: int = 200) -> float:
    """Seconds for one small batch's store work: append, plan, read, commit (with its outputs),
    release."""
    store = bench_store(address)
    store.create_queue("a", None)
    store.create_queue("b", None)
    started = time.perf_counter()
    for k in range(rounds):
        now = time.time()
        arrived = [Event(i, "k", now, {"i": i}) for i in range(k * share, (k + 1) * share)]
        store.append("a", arrived, "src", k * share)
        plan = store.plan_batch("a", k * share, (k + 1) * share, 1, lambda keys: [0] * len(keys))
        outcomes = _forward(store.read_share(plan, 0).events(), "b")
        store.commit_share(share_commit("a", plan.batch, 0, outcomes, (), 0.0))
        store.drop_consumed("a", plan.end)
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed / rounds


def store_path_rate(address: str, kind: str, events: int = 100_000, batch: int = 10_000) -> float:
    """Events per second through the store and the replicas' task code alone, one process, no
    Spark: a source appends batches of `batch`; each of the three operators plans each batch for
    2 replicas (PSPS Alg. 1) and runs both shares (`task.run_share`: read, the `kind`
    pass-through, commit). The ceiling of the data path outside Spark, all hops included."""
    pipeline = passthrough_pipeline(2, kind)
    store = bench_store(address)
    store.set_meta("pipeline", pipeline.model_dump(mode="json", by_alias=True))
    store.set_meta("t_out", 30.0)
    store.set_meta("td", 5.0)
    for name in OPERATORS:
        store.create_queue(name, None)
        store.set_control(name, 2, batch, 1e-5, [1e-5, 1e-5])
    store.create_queue("out", None, sink=True)
    task.store_for.cache_clear()
    task.context_for.cache_clear()
    started = time.perf_counter()
    for first in range(0, events, batch):
        now = time.time()
        numbers = np.arange(first, first + batch)
        arrived = EventBatch.build(numbers, pa.array(["k"] * batch), now, pa.table({"i": numbers}))
        store.append(OPERATORS[0], arrived, "src", first)
        for op in OPERATORS:
            plan_partitions(address, op, first, first + batch)
            for replica in (0, 1):
                task.run_share(address, op, first, first + batch, replica)
    elapsed = time.perf_counter() - started
    store.close()
    return events / elapsed


def _forward(events: list[Event], target: str) -> list[Outcome]:
    return [
        Outcome(
            e.id,
            e.root,
            OutcomeKind.PROCESSED,
            ((target, Event(e.id + ">", e.key, e.ts, e.payload, e.root)),),
        )
        for e in events
    ]


def low_load_latency(
    pipeline: Pipeline, duration_s: float, out: Path, queues: str | None, micro: str
) -> None:
    """Mean latency per hop at 10 events/s, and where a hop's time goes (`micro`: a store
    address for the store's own round trip)."""
    step, phases = run_rate(pipeline, 10, duration_s, out / "low-load", queues)
    shutil.rmtree(out / "low-load", ignore_errors=True)
    if step.mean_s is None:
        print("  no event reached the sink")
        return
    hop = step.mean_s / len(OPERATORS)
    print(f"  end to end {step.mean_s:.3f} s over {len(OPERATORS)} hops: {hop:.3f} s per hop")
    if phases:
        batch = phases["triggerExecution"]
        print(f"  one micro-batch that read events: {batch:.3f} s, of which")
        for key in PROGRESS_KEYS:
            print(f"    {key:<14} {phases[key]:.3f} s")
        print(
            f"  waiting for the next trigger / batch start: {max(0.0, hop - batch):.3f} s per hop"
        )
    round_trip_ms = store_round_trip_s(micro) * 1000
    print(f"  store round trip of a 10-event share (plan, read, commit): {round_trip_ms:.2f} ms")


def _rates(text: str) -> tuple[int, ...]:
    try:
        rates = tuple(int(r) for r in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"--rates: {text!r} is not a comma-separated list of integers"
        ) from exc
    if sorted(rates) != list(rates) or rates[0] <= 0:
        raise argparse.ArgumentTypeError(f"--rates: {text!r} must rise and be positive")
    return rates


BACKENDS = ("sqlite", "redis")


def _kinds(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    if not names or any(n not in FUNCTIONS for n in names):
        raise argparse.ArgumentTypeError(
            f"--kinds: {text!r} names unknown kinds (known: {', '.join(FUNCTIONS)})"
        )
    return names


def _backends(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"--backends: {text!r} names unknown backends (known: {', '.join(BACKENDS)})"
        )
    return names


def addresses(backend: str, out: Path, server: LocalRedis | None) -> tuple[str | None, str]:
    """(the runs' `queues` setting, a store address for the micro-benchmarks) of `backend`."""
    if backend == "redis":
        assert server is not None
        return server.url, f"{server.url}?prefix=bench-micro"
    return None, str(out / "micro.db")


def bench_backend(
    backend: str, args: argparse.Namespace, out: Path, server: LocalRedis | None
) -> dict[str, int]:
    """The figures of one backend; its highest sustained rate per operator kind."""
    queues, micro = addresses(backend, out, server)
    duration = 20.0 if args.quick else 60.0
    print(f"== {backend} queues", flush=True)
    rate = feeder_rate(passthrough_pipeline(2), 200_000, 5_000, micro)
    print(f"feeder alone: {rate:,.0f} events/s appended", flush=True)
    for kind in args.kinds:
        rate = store_path_rate(micro, kind)
        print(
            f"store + replica tasks alone ({kind} pass-through), 3 hops, 2 replicas, batches of "
            f"10,000: {rate:,.0f} events/s",
            flush=True,
        )
    best = {}
    for kind in args.kinds:
        print(f"elastream, 3 {kind} pass-through operators, static r = 2 (rising constant rate):")
        rates = args.rates or (QUICK_RATES if args.quick else RATES)
        pipeline = passthrough_pipeline(2, kind)
        steps = highest_sustained(pipeline, rates, duration, out / backend / kind, queues)
        best[kind] = max((s.rate for s in steps if s.sustained), default=0)
    print("latency per hop at 10 events/s:")
    low_load_latency(passthrough_pipeline(2), duration, out / backend, queues, micro)
    return best


def plain_in_subprocess(rate: int, batches: int, out: Path) -> tuple[float, float]:
    """`plain_spark_capacity` in a fresh process (its own SparkSession, before any of ours)."""
    command = [sys.executable, __file__, "--plain-only", str(rate), "--batches", str(batches)]
    command += ["--out", str(out / "plain")]
    lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    figures = json.loads(lines.strip().splitlines()[-1])
    return figures["capacity"], figures["used"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs and a short rate ladder")
    parser.add_argument(
        "--rates", type=_rates, default=None, help="rising rates to try, e.g. 5000,20000,50000"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="work directory (default: a temp dir)"
    )
    parser.add_argument(
        "--backends",
        type=_backends,
        default=BACKENDS,
        help="queue backends to run, side by side (default: sqlite,redis)",
    )
    parser.add_argument(
        "--kinds",
        type=_kinds,
        default=tuple(FUNCTIONS),
        help="pass-through operators to run: events (per-event function), columns (vectorized)",
    )
    parser.add_argument("--plain-only", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--batches", type=int, default=40, help=argparse.SUPPRESS)
    add_quiet(parser)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="elastream-throughput-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.plain_only is not None:
        capacity, used = plain_spark_capacity(args.plain_only, args.batches, out)
        print(json.dumps({"capacity": capacity, "used": used}))
        return
    plain_rate = 20_000 if args.quick else 50_000
    capacity, used = plain_in_subprocess(plain_rate, 10 if args.quick else 40, out)
    print(
        f"plain Spark (first, in its own process), rate source at {plain_rate:,} rows/s, "
        f"3 x mapInPandas: {used:.2f} s of each 1 s trigger used -> "
        f"capacity {capacity:,.0f} rows/s",
        flush=True,
    )
    server = LocalRedis(out / "redis") if "redis" in args.backends else None
    try:
        if server is not None:
            server.start()
            print(f"redis-server {server.url} (AOF, appendfsync {server.appendfsync})")
        best = {
            b: bench_backend(b, args, out, server)
            for b in steps(args.backends, "queue backends", quiet=args.quiet)
        }
    finally:
        if server is not None:
            server.stop()
    for backend, kinds in best.items():
        for kind, rate in kinds.items():
            ratio = f"{rate / capacity:.3f}" if capacity else "n/a (plain Spark processed nothing)"
            print(
                f"{backend}, {kind} pass-through: highest sustained rate {rate:,} ev/s; "
                f"ratio to plain Spark: {ratio}"
            )
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
