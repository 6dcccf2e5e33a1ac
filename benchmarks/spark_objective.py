"""On real Spark: the objective policy against psps and static counts (r = 4 unless `--static`)
on the demo pipeline and trace, one run each with the same objective (docs/policies.md).

Prints, per run, the share of intervals that met the objective, the run's p99 latency, the
replica-seconds, the reconfigurations and the processed ratio (no asserts), then the objective
run's intervals one per line: the replicas that ran, the measured p99 against the latency the
policy had predicted for them, the measured micro-batch time D(t) (Eq. O13) against the model's
D (O12), what it decided, and the interval's O13 point (R, o). Run under the machine's Spark lock:
    flock /work/spark.lock .venv/bin/python benchmarks/spark_objective.py [--objective-s 5]
        [--static 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from elastream.cli.demo import demo_pipeline_path
from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.control.policies.objective import (
    batch_point,
    busiest_utilisation,
    measured_batch_s,
)
from elastream.control.policy import Decision
from elastream.model.objective import Objective, ObjectiveTally, judge
from elastream.model.snapshot import Snapshot
from elastream.report.progress import add_quiet, steps
from elastream.runner.engines import run_engine
from elastream.runner.workload import prepare_workload
from elastream.runtime.spark.runtime import SparkEngine
from elastream.runtime.spark.session import spark_session

COLUMNS = ("met_share", "latency_ms_p99", "replica_seconds", "reconfigurations", "processed_ratio")


def runs(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The three policies' settings: the objective's engine overhead and guard as benchmarked."""
    return {
        "objective": {
            "policy": "objective",
            "policy_options": {
                "overhead_s": args.overhead_s,
                "bound": args.bound,
                **{k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)},
            },
            "guards": {"stabilization_s": args.stabilization_s},
        },
        "psps": {"policy": "psps"},
        **{f"static r={r}": {"policy": "static", "replicas": r} for r in args.static or [4]},
    }


def run_one(label: str, settings: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    pipeline = load_pipeline(demo_pipeline_path())
    objective = Objective(latency_p99_s=args.objective_s)
    config = make_config(
        trace=f"demo:duration={args.duration:g},peak={args.peak_rate:g}",
        interval_s=args.interval_s,
        event_timeout_s=None,
        queue_capacity=None,
        drain_s=args.drain_s,
        objective=objective.model_dump(),
        out=args.out / label.replace(" ", "_").replace("=", ""),
        **settings,
    )
    trace = prepare_workload(config, pipeline)
    engine = SparkEngine(config.starting_pipeline(pipeline), config, trace, keep_session=True)
    tally = ObjectiveTally(objective)
    intervals: list[dict[str, Any]] = []

    def record(snapshot: Snapshot, decision: Decision | None = None) -> None:
        """Per interval: the counts that ran, the measured p99, the verdict, what was decided."""
        first = snapshot.operators[0].name
        intervals.append(
            {
                "t": snapshot.t,
                "replicas": snapshot.replicas(),
                "latency_ms_p99": snapshot.latency_ms_p99,
                "batch_s": measured_batch_s(snapshot),
                "batch_point": batch_point(snapshot),
                "busiest": busiest_utilisation(snapshot),
                "met": judge(snapshot, objective).met,
                "decided": None if decision is None else decision.as_dict(),
                "reason": None if decision is None else decision.detail(first),
                "reasons": {}
                if decision is None
                else {o.name: decision.detail(o.name) for o in snapshot.operators},
            }
        )

    started = time.time()
    summary = run_engine(engine, config, [tally, record]).summary.as_dict()
    row = summary | tally.as_dict() | {"wall_s": time.time() - started, "intervals": intervals}
    print(f"{label}: done in {row['wall_s']:.0f} s", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--objective-s", type=float, default=5.0, help="p99 bound, s (issue 41's Spark target: 5)"
    )
    parser.add_argument(
        "--overhead-s", type=float, default=0.0, help="objective's h, s (O12 models the batches)"
    )
    parser.add_argument(
        "--stabilization-s",
        type=float,
        default=0.0,
        help="the objective policy's scale-down window, s (its step 6 is the hysteresis)",
    )
    parser.add_argument(
        "--bound",
        choices=("auto", "errors", "upper", "point"),
        default="auto",
        help="the objective policy's forecast: auto (O17), the point widened by its measured "
        "errors (O18), the forecaster's interval's upper edge, or the point",
    )
    parser.add_argument(
        "--set", action="append", default=[], help="another objective policy option, X=V"
    )
    parser.add_argument(
        "--static",
        type=int,
        action="append",
        help="a static run of R replicas an operator (repeatable; default 4)",
    )
    parser.add_argument("--duration", type=float, default=120.0)
    parser.add_argument("--peak-rate", type=float, default=100.0)
    parser.add_argument("--interval-s", type=float, default=5.0)
    parser.add_argument("--only", action="append", help="run only this label (repeatable)")
    parser.add_argument("--drain-s", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="objective-")))
    add_quiet(parser)
    args = parser.parse_args()
    pipeline = load_pipeline(demo_pipeline_path())
    spark_session(f"local[{pipeline.overprovisioned_replicas}]")
    chosen = {k: v for k, v in runs(args).items() if not args.only or k in args.only}
    results = {
        label: run_one(label, chosen[label], args)
        for label in steps(chosen, "policy runs", quiet=args.quiet)
    }
    print(f"\n{'p99 <= ' + format(args.objective_s, 'g') + ' s':<20}", end="")
    print("".join(f"{label:>14}" for label in results))
    for column in COLUMNS:
        cells = "".join(f"{_fmt(results[label][column]):>14}" for label in results)
        print(f"{column:<20}{cells}")
    if "objective" in results:
        print_intervals(results["objective"]["intervals"])
    (args.out / "objective.json").write_text(json.dumps(results, indent=2, default=str))
    print(f"\nresults: {args.out / 'objective.json'}")


def print_intervals(intervals: list[dict[str, Any]]) -> None:
    """One line per interval: counts that ran, p99 measured vs predicted, D(t) vs the model's."""
    print(
        "\nobjective, per interval: t, replicas ran, p99 measured / predicted (s), D(t) / model "
        "(s), decided, verdict, burst factor, batch spread, O13 fit, the busiest share's u(t) "
        "and the interval's O13 point (R, o)"
    )
    predicted = "-"
    for row in intervals:
        ran = "/".join(str(n) for n in row["replicas"].values())
        p99 = row["latency_ms_p99"]
        measured = "-" if p99 is None else f"{p99 / 1000:.2f}"
        batch = "-" if row["batch_s"] is None else f"{row['batch_s']:.2f}"
        reason = row["reason"] or ""
        model = _field(reason, "D=") or "-"
        fit = f"a={_field(reason, '(a=') or '-'} b={_field(reason, 'b=') or '-'}"
        beta = _field(reason, "β=") or "-"
        spread = (_field(reason, "φ=") or "-").rstrip(")")
        decided = "-" if row["decided"] is None else "/".join(map(str, row["decided"].values()))
        print(
            f"{row['t']:7.1f} {ran:>9} {measured:>7}/{predicted:<7} {batch:>6}/{model:<7} "
            f"-> {decided:>9} {'met' if row['met'] else 'MISSED' if row['met'] is False else ''} "
            f"β={beta} φ={spread} {fit} {_point(row)}"
        )
        predicted = (_field(reason, "path=") or "-").split("/")[0].rstrip("s")


def _point(row: dict[str, Any]) -> str:
    """The busiest share's measured utilisation and the interval's O13 point (R, o), if any."""
    point = row["batch_point"]
    return f"u={row['busiest']:.2f} (R, o)=" + (
        "-" if point is None else f"({point[0]}, {point[1]:.3f})"
    )


def _field(reason: str, key: str) -> str | None:
    """The value after `key` in a decision's reason (up to the next space)."""
    at = reason.find(key)
    return None if at < 0 else reason[at + len(key) :].split(" ")[0]


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.4g}" if isinstance(value, float) else f"{value:,}"


if __name__ == "__main__":
    main()
