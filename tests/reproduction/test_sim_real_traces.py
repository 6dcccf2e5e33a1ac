"""`elastream simulate` on every real trace of ../shared/data (skipped when it is absent)."""

import pytest

from elastream.cli import main
from elastream.cli.demo import demo_pipeline_path
from elastream.report import load_summary
from elastream.workloads import default_data_dir

DATA = default_data_dir()
TRACES = {  # file -> how many trace seconds to play back per simulated second
    "traces/twitter_sample_per_second_3days.txt": 1,
    "traces/covid19_tweets_per_hour.csv": 3600,
    "traces/nab_twitter_volume_aapl_5min.csv": 300,
    "traces/nab_twitter_volume_amzn_5min.csv": 300,
    "traces/nab_elb_request_count_5min.csv": 300,
    "traces/nab_nyc_taxi_passengers_30min.csv": 1800,
    "traces/azure_llm_inference_code_arrivals.csv": 1,
    "debs2015/taxi_trips_2013-01-01_first10k.csv": 1,
}


@pytest.mark.skipif(DATA is None, reason="../shared/data is not beside the repository")
@pytest.mark.parametrize(("name", "time_scale"), TRACES.items())
def test_simulate_runs_on_every_real_trace(tmp_path, name, time_scale):
    out = tmp_path / "out"
    args = [
        "simulate",
        str(demo_pipeline_path()),
        "--trace",
        str(DATA / name),
        "--out",
        str(out),
        "--peak-rate",
        "150",
        "--time-scale",
        str(time_scale),
        "--duration",
        "300",
        "--interval-s",
        "5",
        "--quiet",
    ]
    assert main(args) == 0
    for produced in ("summary.json", "timeseries.csv", "report.html"):
        assert (out / produced).stat().st_size > 0
    summary = load_summary(out)
    assert summary["events_in"] > 0
    assert 0.0 <= summary["replica_seconds_saved_ratio"] <= 1.0
