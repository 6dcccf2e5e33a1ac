"""The simulator agrees with the Spark runtime on the same workload (integration test on local
Spark). Where this test passes is where the simulator's figures are trusted (docs/simulator.md).

The bounds that always hold here are asserted; the issue's target — every figure within 10 % of
Spark — is checked in a test marked `xfail` (not strict: the log says XPASS when it holds), with
the measured shortfall as its reason: one Spark run differs from the next by up to 19 % in mean
latency and 22 % in throughput degradation on this shared 2-core machine, more than the target
(`benchmarks/validate_sim.py --repeat 2` measures that spread)."""

import pytest
from support.paths import ROOT

from elastream.config.files import load_pipeline
from elastream.experiments.validate import TARGET, Validation, validate

pytestmark = pytest.mark.spark
PIPELINE = ROOT / "benchmarks" / "pipelines" / "validate3.yaml"
TRACE = "spike:peak=90,magnitude=6,onset=10,ramp=5,hold=25,decay=5,duration=60"
BOUNDS = {
    "replica_seconds_saved_ratio": 0.05,
    "processed_ratio": 0.01,
    "latency_ms_mean": 0.4,
    "latency_ms_p99": 0.4,
}


@pytest.fixture(scope="module")
def validation(tmp_path_factory) -> Validation:
    """One Spark run of the spike, the simulator calibrated from it, and their agreement."""
    out = tmp_path_factory.mktemp("validate")
    result = validate(
        load_pipeline(PIPELINE),
        out,
        runs=1,
        trace=TRACE,
        interval_s=3.0,
        drain_s=60,
        event_timeout_s=None,
    )
    for name, rel in result.agreement.relative().items():  # shown with -s, and in failures
        print(f"{name:<24} sim vs Spark {rel:7.1%}  target {TARGET:.0%}")
    print(f"fitted batch costs: {result.settings}")
    return result


def test_calibrated_simulator_tracks_the_spark_runtime(validation):
    assert max(validation.agreement.replicas_reference) >= 6  # the spike really scaled it
    walls: dict[str, list[float]] = {}
    for batch in validation.calibration.records:
        walls.setdefault(batch.op, []).append(batch.wall_s)
    for op, base_ms in validation.settings.batch_overhead_ms.items():  # a cost within a batch
        assert 0 < base_ms < 1000 * max(walls[op]), (op, base_ms)
    assert validation.agreement.replicas_mean_abs_diff < 0.75, validation.agreement
    relative = validation.agreement.relative()
    assert {name: relative[name] for name, bound in BOUNDS.items() if relative[name] > bound} == {}
    # Without the micro-batch model the simulator's latency is far off: calibration matters.
    assert validation.naive.metrics["latency_ms_mean"][2] > 0.5


@pytest.mark.xfail(
    reason="not reliably met on this machine (load 10-30 from other jobs): throughput "
    "degradation 15-20 % apart (Spark's own two runs up to 22 %: it is made in the 5-6 drain "
    "intervals, where one batch moves it about 14 %), replica series 2-10.6 %, mean latency "
    "0.3-12 % (Spark's own spread up to 19 %); docs/simulator.md",
    strict=False,
)
def test_every_figure_within_10_percent(validation):
    relative = validation.agreement.relative()
    assert {name: rel for name, rel in relative.items() if rel > TARGET} == {}
