"""One settings style: every settings file is read by one YAML reader whose errors name the file,
the line and the setting, and a key that would do nothing where it is written says where it
belongs."""

from pathlib import Path

import pytest
import yaml
from support.builders import linear_pipeline

from elastream.base.settings import SettingsError, read_settings
from elastream.cli import main
from elastream.config import RunConfig
from elastream.experiments.bench.scenario import BenchError, load_bench

MISPLACED_BENCH = """\
scenarios:
  - name: steps
    pipeline: pipe.yaml
    trace: "constant:rate=5,duration=30"
    run: {interval_s: 5, peak_rate: 340, time_scale: 10}
    policies: [psps]
"""


def test_a_misplaced_bench_key_is_an_error_that_says_where_it_belongs(tmp_path: Path):
    (tmp_path / "pipe.yaml").write_text(yaml.safe_dump(linear_pipeline(1)))
    path = tmp_path / "bench.yaml"
    path.write_text(MISPLACED_BENCH)
    with pytest.raises(BenchError) as caught:
        load_bench(path)
    message = str(caught.value)
    assert f"{path}:5: scenarios.0.run" in message
    assert "'peak_rate' does nothing under run: it belongs at the scenario level" in message


def test_a_misplaced_bench_grid_key_is_an_error(tmp_path: Path):
    (tmp_path / "pipe.yaml").write_text(yaml.safe_dump(linear_pipeline(1)))
    path = tmp_path / "bench.yaml"
    path.write_text(
        MISPLACED_BENCH.replace("peak_rate: 340, time_scale: 10", "drain_s: 0")
        + "    grid: {run.time_scale: [1, 2]}\n"
    )
    with pytest.raises(BenchError, match="grid key 'run.time_scale' does nothing"):
        load_bench(path)


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        (
            "interval_s: 5\nguards:\n  interval_s: 3\n",
            3,
            "guards.interval_s: Extra inputs are not permitted: 'interval_s' does nothing here, "
            "it belongs at interval_s",
        ),
        (
            "interval_s: 5\nspark:\n  batch_s: -1\n",
            3,
            "spark.batch_s: Input should be greater than 0",
        ),
        (
            "interval_s: 5\nwhatever: 1\n",
            2,
            "whatever: Extra inputs are not permitted (unknown setting",
        ),
    ],
)
def test_run_settings_errors_name_file_line_and_setting(tmp_path: Path, text, line, expected):
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError) as caught:
        read_settings(RunConfig, path, "settings")
    assert f"{path}:{line}: {expected}" in str(caught.value)


def test_pipeline_errors_name_the_line(tmp_path: Path):
    data = linear_pipeline(2)
    data["operators"][1]["service_time_ms"] = -5
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    from elastream.config.files import load_pipeline
    from elastream.model.pipeline import TopologyError

    with pytest.raises(TopologyError) as caught:
        load_pipeline(path)
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "service_time_ms: -5" in text)
    assert f"{path}:{line}: operators.1.service_time_ms" in str(caught.value)


def test_config_describe_prints_every_option_with_its_meaning(capsys):
    assert main(["config", "--describe"]) == 0
    out = capsys.readouterr().out
    for option in (
        "interval_s: float > 0 = 5.0",
        "guards.stabilization_s",
        "queue_model",
        "target_utilization",
    ):
        assert option in out
    assert "control interval, s" in out
    assert "FieldInfo" not in out and "Annotated" not in out  # readable types only


def test_config_describe_lists_the_fields_of_an_optional_group(capsys):
    """`spark.leasing` is off by default (None) and its fields, the release rule among them, are
    listed under it with their defaults (they were missing: only the group's line was printed)."""
    assert main(["config", "--describe"]) == 0
    out = capsys.readouterr().out
    assert "spark.leasing: LeasingSettings | None = None" in out
    assert "spark.leasing.release_rule: Literal[last_btu, lulls, now] = 'lulls'" in out
    assert "spark.leasing.btu_s: float > 0 = 3600.0" in out


def test_config_prints_what_its_flag_asks_for(capsys):
    """`--describe` prints the settings and not the policy list, `--policies` the list and not
    the settings; with neither (or both) argparse says the one it needs."""
    assert main(["config", "--policies"]) == 0
    out = capsys.readouterr().out
    listed = {line.split(":")[0] for line in out.splitlines()}  # the README's table of policies
    assert listed == {"psps", "objective", "ds2", "lagaware", "proactive", "threshold", "dabs",
                      "static", "decentralized"}  # fmt: skip
    assert "interval_s" not in out
    assert main(["config", "--describe"]) == 0
    assert "\npsps: " not in capsys.readouterr().out
    for flags in ([], ["--describe", "--policies"]):
        with pytest.raises(SystemExit) as caught:
            main(["config", *flags])
        assert caught.value.code == 2
        assert "--describe" in capsys.readouterr().err
