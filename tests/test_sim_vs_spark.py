"""The simulator agrees with the Spark runtime on the same workload (integration test on local
Spark): every figure `compare` reports within 10 %, or within Spark's own run-to-run difference
measured here (a second Spark run) if that is larger. Where this test passes is where the
simulator's figures are trusted (docs/simulator.md)."""

from pathlib import Path

import pytest

from elastream.config.files import load_pipeline
from elastream.experiments.validate import TARGET, validate

pytestmark = pytest.mark.spark
PIPELINE = Path(__file__).parents[1] / "benchmarks" / "pipelines" / "validate3.yaml"
TRACE = "spike:peak=90,magnitude=6,onset=10,ramp=5,hold=25,decay=5,duration=60"


def test_calibrated_simulator_tracks_the_spark_runtime(tmp_path):
    pipeline = load_pipeline(PIPELINE)
    result = validate(pipeline, tmp_path, runs=2, trace=TRACE, td=3.0, drain_s=60, t_out=None)

    tolerance = result.tolerance(TARGET)
    figures = {name: (rel, tolerance[name]) for name, rel in result.agreement.relative().items()}
    for name, (rel, tol) in figures.items():  # shown with -s, and in the log of a failure
        print(f"{name:<24} sim vs Spark {rel:7.1%}  tolerance {tol:6.1%}")
    print(f"fitted batch costs: {result.settings}")

    assert max(result.agreement.replicas_reference) >= 6  # the spike really scaled the pipeline
    walls: dict[str, list[float]] = {}
    for batch in result.calibration.records:
        walls.setdefault(batch.op, []).append(batch.wall_s)
    for op, base_ms in result.settings.batch_overhead_ms.items():  # a cost, in ms, within a batch
        assert 0 < base_ms < 1000 * max(walls[op]), (op, base_ms)
    assert not result.outside(TARGET), figures
    # Without the micro-batch model the simulator's latency is far off: calibration matters.
    assert result.naive.metrics["latency_ms_mean"][2] > 0.5
