"""The simulator agrees with the Spark runtime on the same workload (integration test on local
Spark): where this test passes is where the simulator's figures are trusted."""

from pathlib import Path

import pytest

from elastream.config import make_config
from elastream.config.files import load_pipeline
from elastream.experiments.calibrate import calibrated_settings
from elastream.experiments.compare import compare
from elastream.experiments.session import build_engine, prepare_workload, run_engine, simulate
from elastream.runtime.sim import SimSettings

pytestmark = pytest.mark.spark
PIPELINE = Path(__file__).parents[1] / "benchmarks" / "pipelines" / "validate3.yaml"
TRACE = "spike:peak=90,magnitude=6,onset=10,ramp=5,hold=25,decay=5,duration=60"


def test_calibrated_simulator_tracks_the_spark_runtime(tmp_path):
    pipeline = load_pipeline(PIPELINE)
    config = make_config(trace=TRACE, td=3.0, out=tmp_path / "spark", drain_s=60, t_out=None)
    trace = prepare_workload(config, pipeline)
    engine = build_engine(pipeline, config, trace)
    spark = run_engine(engine, config)
    settings = calibrated_settings(engine, seed=0)
    assert 0.05 < settings.batch_overhead_s < 1.0  # Spark's fixed cost per micro-batch

    sim_config = config.model_copy(update={"engine": "sim"})
    calibrated = compare(spark, simulate(pipeline, sim_config, trace, settings))
    naive = compare(spark, simulate(pipeline, sim_config, trace, SimSettings()))

    assert calibrated.replicas_mean_abs_diff < 0.75, calibrated
    assert max(calibrated.replicas_reference) >= 6  # the spike really scaled the pipeline
    for metric, tolerance in (
        ("saved_resources", 0.05),
        ("processed_ratio", 0.01),
        ("latency_ms_mean", 0.4),
    ):
        assert calibrated.metrics[metric][2] < tolerance, (metric, calibrated.metrics[metric])
    # Without the micro-batch model the simulator's latency is far off: calibration matters.
    assert naive.metrics["latency_ms_mean"][2] > 0.5
