"""Check the simulator against the Spark runtime on the same workload, and calibrate it.

Runs one scenario (a 3-operator pipeline under a spike, policy psps) on local Spark `--repeat`
times (their spread is the runtime's own noise), calibrates the simulator's micro-batch model
(Eq. O1, docs/simulator.md) from the first run's progress reports, simulates the same pipeline,
trace and settings, and prints every figure `compare` reports side by side with the tolerance
the test applies (10 %, or Spark's own spread if larger). Prints figures, no asserts.
Usage: .venv/bin/python benchmarks/validate_sim.py [--repeat 2] [--trace SPEC] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from elastream.config.files import load_pipeline
from elastream.experiments.validate import TARGET, validate
from elastream.report.progress import add_quiet, clock

PIPELINE = Path(__file__).parent / "pipelines" / "validate3.yaml"
TEST_TRACE = "spike:peak=90,magnitude=6,onset=10,ramp=5,hold=25,decay=5,duration=60"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="Spark runs (their spread = noise)")
    parser.add_argument("--trace", default=TEST_TRACE, help="workload (default: the CI test's)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="validate-")))
    add_quiet(parser)
    args = parser.parse_args()
    pipeline = load_pipeline(PIPELINE)
    started = time.monotonic()
    # the measured length of the whole validation: about 4 minutes per Spark run
    with clock(240.0 * (args.repeat + 1), "Spark runs and the simulator", quiet=args.quiet):
        v = validate(
            pipeline,
            args.out,
            args.repeat,
            trace=args.trace,
            interval_s=3.0,
            drain_s=60,
            event_timeout_s=None,
        )
    s = v.settings
    total = time.monotonic() - started
    print(f"Spark run wall times: {', '.join(f'{w:.0f} s' for w in v.spark_wall_s)}", end="")
    print(f"; everything (what the test does): {total:.0f} s")
    print(
        "batch overhead (Eq. O1): base "
        + ", ".join(f"{op} {ms:.0f} ms" for op, ms in s.batch_overhead_ms.items())
        + f"; +{s.batch_overhead_per_replica_ms:.0f} ms per task beyond the first"
        + f"; +{s.batch_overhead_per_busy_query_ms:.0f} ms per other busy query"
    )
    model = v.calibration.model
    print(
        f"commit share {s.batch_commit_share:.2f}; "
        f"fitted spread (Eq. O2, not used) CV {model.cv:.2f}"
    )
    tolerance, rel = v.tolerance(TARGET), v.agreement.relative()
    head = f"{'figure':<24}{'spark 1':>11}{'sim':>11}{'sim vs 1':>10}{'tolerance':>11}"
    print(head + "".join(f"{'spark ' + str(k + 2):>11}{'vs 1':>7}" for k in range(len(v.spreads))))
    report: dict = {
        "settings": s.model_dump(),
        "overhead_cv": model.cv,
        "batches": [asdict(rec) for rec in v.calibration.records],
        "spark_wall_s": v.spark_wall_s,
        "figures": {},
    }
    for name, (a, b, _) in v.agreement.metrics.items():
        again = [x.metrics[name] for x in v.spreads]
        row = f"{name:<24}{a:>11.4f}{b:>11.4f}{rel[name]:>10.1%}{tolerance[name]:>11.1%}"
        print(row + "".join(f"{x[1]:>11.4f}{x[2]:>7.1%}" for x in again))
        report["figures"][name] = {
            "spark": a,
            "sim": b,
            "rel": rel[name],
            "tolerance": tolerance[name],
            "spark_repeats": [x[1] for x in again],
            "uncalibrated_sim": v.naive.metrics[name][1],
        }
    spread = "".join(
        f"{x.replicas_mean_abs_diff:>11.2f}{x.replicas_rel_diff:>7.1%}" for x in v.spreads
    )
    print(
        f"{'replicas (mean abs diff)':<24}{'':>11}{v.agreement.replicas_mean_abs_diff:>11.2f}"
        f"{rel['replicas']:>10.1%}{tolerance['replicas']:>11.1%}{spread}"
    )
    print(f"total replicas per interval, spark 1: {v.agreement.replicas_reference}")
    print(f"total replicas per interval, sim:     {v.agreement.replicas_other}")
    outside = v.outside(TARGET)
    print("outside the tolerance: " + (", ".join(outside) if outside else "none"))
    report["replicas_mean_abs_diff"] = v.agreement.replicas_mean_abs_diff
    report["total_s"] = total
    report["outside"] = outside
    (args.out / "validate.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"results: {args.out / 'validate.json'}")


if __name__ == "__main__":
    main()
