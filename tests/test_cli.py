"""CLI errors: every bad input is named, with exit code 2 and no traceback."""

import pytest

from elastream.cli import main
from elastream.cli.demo import demo_pipeline_path


def simulate_demo(tmp_path, *flags):
    """`elastream simulate` on the demo pipeline with `flags`; returns the exit code."""
    return main(
        ["simulate", str(demo_pipeline_path()), *flags, "--quiet", "--out", str(tmp_path / "o")]
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("- just\n- a list\n", "expected a mapping of settings"),
        ("interval_s: [unclosed\n", "cannot read settings"),
        ("interval_s: -3\n", "interval_s: Input should be greater than 0"),
        ("policy: magic\n", "unknown policy 'magic'"),
        ("colour: blue\n", "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_settings_file_is_named(tmp_path, capsys, settings, message):
    path = tmp_path / "settings.yaml"
    path.write_text(settings)
    code = simulate_demo(tmp_path, "--config", str(path))
    assert code == 2
    assert message in capsys.readouterr().err


def test_bad_sim_settings_file_is_named(tmp_path, capsys):
    path = tmp_path / "sim.yaml"
    path.write_text("[1, 2]\n")
    code = simulate_demo(tmp_path, "--sim-config", str(path))
    assert code == 2
    assert f"{path}: expected a mapping of simulator settings" in capsys.readouterr().err


def test_negative_rate_trace_and_missing_pipeline(tmp_path, capsys):
    trace = tmp_path / "rates.txt"
    trace.write_text("5\n-2\n")
    code = simulate_demo(tmp_path, "--trace", str(trace))
    assert code == 2
    assert "rates.txt" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml does not exist" in capsys.readouterr().err


def test_old_option_names_still_work_with_a_one_line_warning(tmp_path, capsys):
    settings = tmp_path / "settings.yaml"
    settings.write_text("t_out: 3\n")
    code = simulate_demo(
        tmp_path, "--td", "2", "--q-size", "none", "--duration", "4", "--config", str(settings)
    )
    err = capsys.readouterr().err.splitlines()
    assert code == 0
    notices = [line for line in err if "is now called" in line]
    assert notices == [
        "elastream: warning: option '--td' is now called '--interval'; the old name is "
        "accepted until the next release",
        "elastream: warning: option '--q-size' is now called '--queue-capacity'; the old name "
        "is accepted until the next release",
        "elastream: warning: setting 't_out' is now called 'event_timeout_s'; the old name is "
        "accepted until the next release",
    ]
    summary = (tmp_path / "o" / "summary.json").read_text()
    assert '"interval_s": 2.0' in summary and '"event_timeout_s": 3.0' in summary
