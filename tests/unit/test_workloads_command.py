"""`elastream trace` end to end through `elastream.cli.main`."""

from __future__ import annotations

import re

import numpy as np
import pytest

from elastream.cli import main
from elastream.workloads import TraceError, demo_trace
from elastream.workloads.scaling import parse_duration, parse_slice

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def report(text: str) -> dict[str, str]:
    return dict(
        re.match(r"(\S+(?: \S+)?)\s{2,}(.*)", line).groups()
        for line in text.splitlines()
        if re.match(r"\S+(?: \S+)?\s{2,}", line)
    )


def test_trace_of_a_generator_prints_stats_and_writes_a_png(tmp_path, capsys):
    out = tmp_path / "plots" / "demo.png"
    assert main(["trace", "demo:duration=240,peak=500,seed=2", "--plot", str(out)]) == 0
    fields = report(capsys.readouterr().out)
    expected = demo_trace(240, 500, 2).stats()
    assert fields["samples"] == "240" and fields["max"] == "500 events/s"
    assert fields["median"] == f"{expected.median:.4g} events/s"
    assert fields["total events"] == f"{expected.total_events:,.0f}"
    assert out.read_bytes()[:8] == PNG_MAGIC and out.stat().st_size > 10_000


def test_trace_of_a_file_with_scaling(tmp_path, capsys):
    counts = tmp_path / "counts.txt"
    counts.write_text("\n".join(str(v) for v in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 12))
    out = tmp_path / "c.png"
    args = ["--slice", "10:1m", "--peak-rate", "90", "--time-scale", "2", "--plot", str(out)]
    assert main(["trace", str(counts), *args]) == 0
    fields = report(capsys.readouterr().out)
    assert fields["samples"] == "50" and fields["step"] == "0.5 s"
    assert fields["duration"].startswith("25 s") and fields["max"] == "90 events/s"
    assert fields["total events"] == f"{np.sum([1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 5) * 9 * 0.5:,.0f}"
    assert "lines, 120 rows" in fields["source"]
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_no_plot_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "constant:rate=3,duration=5", "--no-plot"]) == 0
    assert "peak/median   1" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["trace", "wave:x=1"], "unknown generator 'wave'"),
        (["trace", "spike:size=3"], "unknown parameter 'size'"),
        (["trace", "no_such_file.txt", "--data-dir", "."], "neither a trace file"),
        (["trace", "constant", "--slice", "20"], "expected START:END"),
        (["trace", "constant", "--slice", "1x:2"], "not a duration"),
        (["trace", "constant", "--peak-rate", "-3"], "peak rate must be > 0"),
    ],
)
def test_trace_errors_exit_2_with_a_message(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--no-plot"]) == 2
    assert message in capsys.readouterr().err


def test_bad_file_error_names_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n2\nthree\n")
    assert main(["trace", str(bad), "--no-plot"]) == 2
    assert f"{bad}:3: count 'three' is not a number" in capsys.readouterr().err


def test_duration_and_slice_parsing():
    assert parse_duration("90", "x") == 90 and parse_duration("1.5m", "x") == 90
    assert parse_duration("2h", "x") == 7200 and parse_duration("1d", "x") == 86400
    assert parse_slice(":30") == (0.0, 30.0) and parse_slice("1h:") == (3600.0, None)
    with pytest.raises(TraceError, match="not after start"):
        parse_slice("60:30")
