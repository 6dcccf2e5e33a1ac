"""Check the simulator against the Spark runtime on the same workload, and calibrate it.

Runs one scenario (a 3-operator pipeline under a spike, policy psps) on local Spark `--repeat`
times (their spread is the runtime's own noise), calibrates the simulator's micro-batch model
from the first run's progress reports, simulates the same pipeline, trace and settings, and
prints the four PSPS metrics and the replica series side by side. Prints figures, no asserts.
Usage: .venv/bin/python benchmarks/validate_sim.py [--repeat 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.experiments.calibrate import calibrated_settings
from elastream.experiments.compare import compare
from elastream.experiments.session import build_engine, prepare_workload, run_engine, simulate
from elastream.model.metrics import PAPER_METRICS
from elastream.runtime.sim import SimSettings

PIPELINE = Path(__file__).parent / "pipelines" / "validate3.yaml"
TRACE = "spike:peak=90,magnitude=6,onset=20,ramp=10,hold=30,decay=10,duration=100"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="Spark runs (their spread = noise)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="validate-")))
    args = parser.parse_args()
    pipeline = load_pipeline(PIPELINE)
    sparks, settings = [], None
    for k in range(args.repeat):
        config = make_config(
            trace=TRACE, td=3.0, out=args.out / f"spark{k}", drain_s=60, t_out=None
        )
        trace = prepare_workload(config, pipeline)
        engine = build_engine(pipeline, config, trace)
        sparks.append(run_engine(engine, config))
        settings = settings or calibrated_settings(engine, seed=0)
    assert settings is not None
    sim_config = config.model_copy(update={"engine": "sim"})
    sim = simulate(pipeline, sim_config, trace, settings)
    naive = simulate(pipeline, sim_config, trace, SimSettings())

    agreement = compare(sparks[0], sim)
    spread = [compare(sparks[0], other) for other in sparks[1:]]
    print(f"calibrated batch overhead: {settings.batch_overhead_s * 1000:.0f} ms per micro-batch")
    head = f"{'metric':<24}{'spark':>11}{'sim':>11}{'sim vs spark':>14}"
    print(head + "".join(f"{'spark run ' + str(k + 2):>14}" for k in range(len(spread))))
    report: dict = {"batch_overhead_s": settings.batch_overhead_s, "metrics": {}}
    for metric in PAPER_METRICS:
        a, b, rel = agreement.metrics[metric]
        again = [s.metrics[metric] for s in spread]
        row = f"{metric:<24}{a:>11.4f}{b:>11.4f}{rel:>13.1%} "
        print(row + "".join(f"{x[1]:>8.4f} ({x[2]:.0%})" for x in again))
        report["metrics"][metric] = {
            "spark": a,
            "sim": b,
            "rel": rel,
            "spark_repeats": [x[1] for x in again],
            "uncalibrated_sim": getattr(naive.summary, metric),
        }
    print(f"total replicas per interval, spark: {agreement.replicas_reference}")
    print(f"total replicas per interval, sim:   {agreement.replicas_other}")
    print(f"mean absolute difference: {agreement.replicas_mean_abs_diff:.2f} replicas")
    report["replicas_mean_abs_diff"] = agreement.replicas_mean_abs_diff
    (args.out / "validate.json").write_text(json.dumps(report, indent=2))
    print(f"results: {args.out / 'validate.json'}")


if __name__ == "__main__":
    main()
