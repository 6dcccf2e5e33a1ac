"""The simulator agrees with the Spark runtime on the same workload (integration test on local
Spark, the runtime's default `pipeline` layout against the simulator's `pipeline` model). Where
this test passes is where the simulator's figures are trusted (docs/simulator.md).

For each agreement workload (the tweets example and a slice of DEBS 2015, 40 s each under a
spike that makes psps scale): one Spark run; the simulator calibrated from it (each operator's
per-event time and the batch costs of Eq. P1, from the run's shares and progress reports, not
from the figures compared); the simulator on the same workload. Every figure the workload lists
as trusted (`Workload.trusted`) must be within its tolerance: 10 % (issue 14's target) or, where
Spark is further from itself, the spread measured between repeated Spark runs of the same
workload by `PYTHONPATH=src python -m reproductions.simulator.agreement --write`
(src/reproductions/simulator/calibration/spread.json). The others are printed; docs/simulator.md
says, with the measured differences, that the simulator is not trusted for them."""

import pytest
from support.debs import TRIPS, needs_trips

from reproductions.simulator.agreement import TRIPS_ENV, WORKLOADS, measured_spread
from reproductions.simulator.validate import TARGET, Validation, validate

pytestmark = [pytest.mark.spark, pytest.mark.alone]


def run(name: str, out) -> Validation:
    workload = WORKLOADS[name]
    result = validate(workload.pipeline(), out, runs=1, **workload.config())
    tolerance = Validation.tolerance(measured_spread(name))
    for figure, rel in result.agreement.relative().items():  # shown with -s, and in failures
        print(f"{name} {figure:<24} sim vs Spark {rel:7.1%}  tolerance {tolerance[figure]:.1%}")
    print(f"{name} calibrated: {result.settings}")
    return result


def check(result: Validation, name: str) -> None:
    assert max(result.agreement.replicas_reference) > min(result.agreement.replicas_reference)
    assert result.settings.queue_model == "pipeline"
    outside = result.outside(measured_spread(name))
    print(f"{name} outside tolerance: {outside}")
    trusted = WORKLOADS[name].trusted
    assert set(trusted) <= set(result.agreement.relative())
    assert {figure: outside[figure] for figure in trusted if figure in outside} == {}
    # Without the calibrated pipeline model the simulator's latency is far off.
    assert result.naive.metrics["latency_ms_mean"][2] > 3 * TARGET


def test_the_simulator_agrees_with_spark_on_the_tweet_pipeline(tmp_path):
    check(run("tweets", tmp_path), "tweets")


@needs_trips
def test_the_simulator_agrees_with_spark_on_a_debs_slice(tmp_path, monkeypatch):
    monkeypatch.setenv(TRIPS_ENV, str(TRIPS.resolve()))
    check(run("debs", tmp_path), "debs")
