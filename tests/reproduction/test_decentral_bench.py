"""`elastream bench` compares the decentralized agents with psps and ds2 on the Twitter trace."""

from pathlib import Path

import pytest
import yaml
from support.paths import ROOT

from elastream.experiments.bench import run_matrix
from elastream.experiments.bench.outputs import results_frame
from elastream.experiments.bench.scenario import load_bench
from elastream.experiments.bench.tables import render_tables
from elastream.workloads import default_data_dir

SCENARIOS = ROOT / "benchmarks" / "decentral_twitter.yaml"
DATA = default_data_dir()


def ci_sized(tmp_path: Path) -> Path:
    """The benchmark's scenario on 20 minutes around the slice's first burst (~245 tweets/s)."""
    bench = yaml.safe_load(SCENARIOS.read_text())
    (scenario,) = bench["scenarios"]
    scenario["pipeline"] = str(SCENARIOS.parent / scenario["pipeline"])
    scenario["slice"] = "21600:22800"
    scenario["policies"] = scenario["policies"][:3]  # psps, ds2, decentralized
    table = bench["tables"][0]
    table["rows"] = table["rows"][:3]
    path = tmp_path / "decentral_ci.yaml"
    path.write_text(yaml.safe_dump(bench))
    return path


@pytest.mark.skipif(DATA is None, reason="../shared/data is not beside the repository")
def test_decentralized_agents_against_psps_and_ds2_on_the_twitter_trace(tmp_path):
    bench, specs = load_bench(ci_sized(tmp_path), data_dir=str(DATA))
    records = run_matrix(specs, jobs=2)
    assert [r.row["error"] for r in records] == ["", "", ""]
    rows = {r.row["policy"]: r.row for r in records}
    assert rows["psps"]["messages"] == rows["ds2"]["messages"] == 0
    mine = rows["decentralized"]
    assert mine["messages"] > 0 and mine["reconfigurations"] > 0  # the agents scaled
    for row in rows.values():  # the four PSPS metrics, in the same range for every policy
        assert 0.3 < row["replica_seconds_saved_ratio"] < 1
        assert 0 <= row["throughput_degradation"] < 0.2
        assert row["processed_ratio"] > 0.9
        assert row["latency_ms_mean"] > 0
    table = render_tables(bench.tables, results_frame(records))["decentralized"]
    assert "| messages |" in table and "| decentralized |" in table
