"""Check the simulator against the Spark runtime on the same workload, and calibrate it.

Runs one scenario (a 3-operator pipeline under a spike, policy psps) on local Spark, measures the
runtime's fixed cost per micro-batch from the queries' progress reports, then simulates the same
pipeline, trace and settings with the simulator's micro-batch model using that overhead, and
prints the four PSPS metrics and the replica time series side by side. Prints figures, no
asserts. Usage: .venv/bin/python benchmarks/validate_sim.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from elastream.config import make_config
from elastream.core.topology import load_pipeline
from elastream.engine import RunResult, run_mape
from elastream.run import workload_for
from elastream.sim import SimSettings, simulate
from elastream.spark.engine import SparkEngine

PIPELINE = Path(__file__).parent / "pipelines" / "validate3.yaml"
TRACE = "spike:peak=90,magnitude=6,onset=20,ramp=10,hold=30,decay=10,duration=100"
METRICS = ("saved_resources", "throughput_degradation", "processed_ratio", "latency_ms_mean")


def batch_overhead_s(engine: SparkEngine) -> float:
    """Median over non-empty micro-batches of (batch wall time - slowest replica's busy time):
    what one batch costs beyond the operator's own work (planning, WAL, scheduling, workers)."""
    busiest = dict(
        ((op, batch), busy)
        for op, batch, busy in engine.store.conn.execute(
            "SELECT op, batch, MAX(busy) FROM tasks GROUP BY op, batch"
        )
    )
    gaps = []
    for name, query in engine.queries.items():
        for progress in query.recentProgress:
            source = progress["sources"][0]
            start, end = source.get("startOffset"), source.get("endOffset")
            if not start or not end or start == end:
                continue
            batch = f"{json.loads(start)['off']}-{json.loads(end)['off']}"
            if (name, batch) in busiest:
                wall = progress["durationMs"]["triggerExecution"] / 1000.0
                gaps.append(wall - busiest[(name, batch)])
    return statistics.median(gaps) if gaps else 0.0


def replica_series(result: RunResult) -> list[int]:
    return [sum(o.replicas for o in s.operators) for s in result.snapshots]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="validate-")))
    args = parser.parse_args()
    pipeline = load_pipeline(PIPELINE)
    config = make_config(trace=TRACE, td=3.0, out=args.out / "spark", drain_s=60, t_out=None)
    trace = workload_for(config, pipeline)

    engine = SparkEngine(pipeline, config, trace)
    spark = run_mape(engine, config.controller())
    overhead = batch_overhead_s(engine)
    settings = SimSettings(queue_model="micro_batch", batch_overhead_s=overhead, seed=0)
    sim = simulate(pipeline, config.model_copy(update={"engine": "sim"}), trace, settings)
    naive = simulate(pipeline, config.model_copy(update={"engine": "sim"}), trace, SimSettings())

    print(f"calibrated batch overhead: {overhead * 1000:.0f} ms per micro-batch")
    print(f"{'metric':<24}{'spark':>12}{'sim (calib.)':>14}{'rel. diff':>11}{'sim (pool)':>12}")
    report = {"batch_overhead_s": overhead, "metrics": {}}
    for metric in METRICS:
        a = getattr(spark.summary, metric)
        b = getattr(sim.summary, metric)
        c = getattr(naive.summary, metric)
        diff = abs(a - b) / abs(a) if a else abs(b)
        report["metrics"][metric] = {"spark": a, "sim": b, "sim_uncalibrated": c, "rel": diff}
        print(f"{metric:<24}{a:>12.4f}{b:>14.4f}{diff:>10.1%}{c:>12.4f}")
    ours, theirs = replica_series(spark), replica_series(sim)
    n = min(len(ours), len(theirs))
    mae = sum(abs(x - y) for x, y in zip(ours[:n], theirs[:n], strict=True)) / max(n, 1)
    print(f"total replicas per interval, spark: {ours}")
    print(f"total replicas per interval, sim:   {theirs}")
    print(f"mean absolute difference: {mae:.2f} replicas over {n} intervals")
    report["replicas"] = {"spark": ours, "sim": theirs, "mean_abs_diff": mae}
    (args.out / "validate.json").write_text(json.dumps(report, indent=2))
    print(f"results: {args.out / 'validate.json'}")


if __name__ == "__main__":
    main()
