"""Trace loaders (every format, their errors, the real data files), trace scaling and resolution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.paths import SHARED_DATA

from elastream.workloads import (
    FORMATS,
    Trace,
    TraceError,
    default_data_dir,
    detect_format,
    load_trace,
    load_trace_info,
    parse_generator_spec,
    resolve_trace,
)

REAL_DATA = SHARED_DATA
needs_data = pytest.mark.skipif(not REAL_DATA.is_dir(), reason="../shared/data is absent")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def debs_row(dropoff: str, fields: int = 17) -> str:
    row = ["M", "H", "2013-01-01 00:00:00", dropoff, "60", "0.5", "-73.9", "40.7", "-73.9"]
    row += ["40.7", "CSH", "3.5", "0.5", "0.5", "0", "0", "4.5"]
    return ",".join(row[:fields])


# ----------------------------------------------------------------------------- one count per line


def test_lines_are_counts_per_second(tmp_path):
    trace, info = load_trace_info(write(tmp_path, "c.txt", "3\n0\n7.5\n\n\n"))
    assert info.format == "lines" and info.rows == 3
    assert trace.step_s == 1.0 and trace.name == "c"
    np.testing.assert_array_equal(trace.rates, [3, 0, 7.5])


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("3\nabc\n5\n", ":2:", "'abc' is not a number"),
        ("3\n4\n-5\n", ":3:", "negative"),
        ("3\n\n5\n", ":2:", "missing"),
        ("3\ninf\n", ":2:", "not a number"),
    ],
)
def test_lines_errors_name_file_and_line(tmp_path, text, where, problem):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert f"{path}{where}" in str(err.value) and problem in str(err.value)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_file_is_an_error(tmp_path, text):
    path = write(tmp_path, "empty.txt", text)
    with pytest.raises(TraceError, match=r"empty\.txt.*empty"):
        load_trace(path)


# ----------------------------------------------------------------------------- binned CSVs


def test_nab_value_csv_divides_by_the_step(tmp_path):
    text = "timestamp,value\n2014-04-10 00:04:00,300\n2014-04-10 00:09:00,600.0\n"
    trace, info = load_trace_info(write(tmp_path, "nab.csv", text + "2014-04-10 00:14:00,0\n"))
    assert info.format == "binned" and trace.step_s == 300.0
    np.testing.assert_allclose(trace.rates, [1.0, 2.0, 0.0])


def test_hourly_csv(tmp_path):
    rows = "".join(f"2020-01-21T{h:02d}:00:00Z,{7200 * (h + 1)}\n" for h in range(4))
    trace = load_trace(write(tmp_path, "h.csv", "hour_utc,tweets\n" + rows))
    assert trace.step_s == 3600.0
    np.testing.assert_allclose(trace.rates, [2, 4, 6, 8])


def test_plain_timestamp_count_csv_in_seconds(tmp_path):
    trace = load_trace(write(tmp_path, "p.csv", "timestamp,count\n10,5\n11,7\n12,0\n"))
    assert trace.step_s == 1.0
    np.testing.assert_array_equal(trace.rates, [5, 7, 0])


def test_rate_column_is_already_per_second(tmp_path):
    trace = load_trace(write(tmp_path, "r.csv", "time,rate\n0,5\n60,7\n"))
    assert trace.step_s == 60.0
    np.testing.assert_array_equal(trace.rates, [5, 7])


@pytest.mark.parametrize(("gaps", "middle"), [("interpolate", 3.0), ("zero", 0.0)])
def test_missing_steps_are_filled(tmp_path, gaps, middle):
    path = write(tmp_path, "g.csv", "timestamp,count\n0,2\n1,2\n3,4\n")
    trace, info = load_trace_info(path, gaps=gaps)
    assert info.filled == 1
    np.testing.assert_allclose(trace.rates, [2, 2, middle, 4])


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("timestamp,value\n2014-04-10 00:04:00,1\n2014-13-45 00:09:00,2\n", ":3:", "timestamp"),
        ("timestamp,value\n2014-04-10 00:04:00,1\n2014-04-10 00:09:00,x\n", ":3:", "'x' is not"),
        ("timestamp,value\n2014-04-10 00:04:00,-1\n2014-04-10 00:09:00,2\n", ":2:", "negative"),
        ("timestamp,value\n0,1\n5,1\n3,1\n", ":4:", "does not increase"),
        ("timestamp,value\n0,1\n,2\n", ":3:", "timestamp ''"),
    ],
)
def test_binned_errors_name_file_and_line(tmp_path, text, where, problem):
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert f"{path}{where}" in str(err.value) and problem in str(err.value)


def test_header_only_and_single_row_csvs(tmp_path):
    with pytest.raises(TraceError, match="no data rows"):
        load_trace(write(tmp_path, "h.csv", "timestamp,value\n"))
    one = write(tmp_path, "one.csv", "timestamp,value\n0,30\n")
    with pytest.raises(TraceError, match="one row"):
        load_trace(one)
    np.testing.assert_array_equal(load_trace(one, step_s=30).rates, [1.0])


# ----------------------------------------------------------------------------- arrivals and DEBS


def test_arrivals_are_binned_per_second(tmp_path):
    rows = ["2023-11-16 18:17:03.9", "2023-11-16 18:17:03.5", "2023-11-16 18:17:04.7"]
    rows += ["2023-11-16 18:17:06.6"]  # unsorted on purpose: 3.9 before 3.5
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(f"{r},10,2\n" for r in rows)
    path = write(tmp_path, "a.csv", text)
    trace, info = load_trace_info(path)
    assert info.format == "arrivals" and info.rows == 4
    np.testing.assert_array_equal(trace.rates, [2, 1, 0, 1])
    np.testing.assert_allclose(load_trace(path, bin_s=2.0).rates, [1.5, 0.5])


def test_arrivals_bad_timestamp(tmp_path):
    path = write(tmp_path, "a.csv", "TIMESTAMP,x\n2023-11-16 18:17:03,1\nyesterday,2\n")
    with pytest.raises(TraceError, match=r"a\.csv:3: cannot parse timestamp 'yesterday'"):
        load_trace(path)


def test_debs_trips_per_second_by_dropoff(tmp_path):
    drops = ["2013-01-01 00:02:00", "2013-01-01 00:02:00", "2013-01-01 00:02:03"]
    trace, info = load_trace_info(write(tmp_path, "d.csv", "\n".join(map(debs_row, drops))))
    assert info.format == "debs2015" and info.rows == 3
    np.testing.assert_array_equal(trace.rates, [2, 0, 0, 1])


def test_debs_short_row_and_bad_dropoff(tmp_path):
    good = debs_row("2013-01-01 00:02:00")
    short = write(tmp_path, "s.csv", f"{good}\n{good}\n{debs_row('2013-01-01 00:03:00', 16)}\n")
    with pytest.raises(TraceError, match=r"s\.csv:3: expected 17 fields"):
        load_trace(short)
    bad = write(tmp_path, "b.csv", f"{good}\n{debs_row('soon')}\n")
    with pytest.raises(TraceError, match=r"b\.csv:2: cannot parse timestamp 'soon'"):
        load_trace(bad, "debs2015")


# ----------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("12\n13\n", "lines"),
        ("timestamp,value\n2014-04-10 00:04:00,1\n", "binned"),
        ("hour_utc,tweets\n2020-01-21T22:00:00Z,68\n", "binned"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,1,2\n", "arrivals"),
        (debs_row("2013-01-01 00:02:00") + "\n", "debs2015"),
    ],
)
def test_detect_format(tmp_path, text, fmt):
    assert detect_format(write(tmp_path, "x.csv", text)) == fmt


def test_undetectable_file_lists_the_formats(tmp_path):
    path = write(tmp_path, "odd.csv", "when,how_many\n0,1\n1,2\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert "odd.csv" in str(err.value) and all(name in str(err.value) for name in FORMATS)
    np.testing.assert_array_equal(load_trace(path, "binned").rates, [1, 2])  # forced: cols 0, 1


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(TraceError, match="unknown trace format 'xml'"):
        load_trace(write(tmp_path, "x.txt", "1\n"), "xml")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        load_trace(tmp_path / "nope.txt")


# ----------------------------------------------------------------------------- real files


@needs_data
@pytest.mark.parametrize(
    ("name", "fmt", "step_s"),
    [
        ("traces/twitter_sample_per_second_3days.txt", "lines", 1.0),
        ("traces/covid19_tweets_per_hour.csv", "binned", 3600.0),
        ("traces/nab_twitter_volume_aapl_5min.csv", "binned", 300.0),
        ("traces/nab_twitter_volume_amzn_5min.csv", "binned", 300.0),
        ("traces/nab_elb_request_count_5min.csv", "binned", 300.0),
        ("traces/nab_nyc_taxi_passengers_30min.csv", "binned", 1800.0),
        ("traces/azure_llm_inference_code_arrivals.csv", "arrivals", 1.0),
        ("debs2015/taxi_trips_2013-01-01_first10k.csv", "debs2015", 1.0),
    ],
)
def test_real_files_load(name, fmt, step_s):
    trace, info = load_trace_info(REAL_DATA / name, gaps="zero")
    assert info.format == fmt and trace.step_s == step_s
    assert trace.rates.size == info.rows + info.filled or fmt in ("arrivals", "debs2015")
    assert trace.peak > 0


@needs_data
def test_real_twitter_matches_its_readme():
    stats = load_trace(REAL_DATA / "traces/twitter_sample_per_second_3days.txt").stats()
    assert stats.samples == 259_200
    assert 60 < stats.mean < 68 and 300 < stats.max < 400  # "mean about 64/s, bursts to ~390"


@needs_data
def test_real_event_logs_count_every_row():
    for name in (
        "traces/azure_llm_inference_code_arrivals.csv",
        "debs2015/taxi_trips_2013-01-01_first10k.csv",
    ):
        path = REAL_DATA / name
        rows = sum(1 for line in path.read_text().splitlines() if line.strip())
        rows -= name.startswith("traces/")  # the Azure file has a header line
        trace = load_trace(path, bin_s=60.0)
        assert trace.stats().total_events == pytest.approx(rows)


@needs_data
def test_real_covid_total_and_gaps():
    trace, info = load_trace_info(REAL_DATA / "traces/covid19_tweets_per_hour.csv", gaps="zero")
    assert info.filled > 0  # collection restarts leave hours without a row
    assert 70e6 < trace.stats().total_events < 75e6  # "72 M tweets"
    assert trace.peak * 3600 == pytest.approx(238_640)  # "peak 238,640/h"


# ----------------------------------------------------------------------------- Trace operations


def test_stats_of_a_small_trace():
    s = Trace(np.array([1.0, 2.0, 3.0, 10.0]), step_s=2.0).stats()
    assert (s.samples, s.duration_s, s.median, s.max, s.mean) == (4, 8.0, 2.5, 10.0, 4.0)
    assert s.peak_to_median == 4.0 and s.total_events == 32.0
    assert s.p99 == pytest.approx(np.percentile([1, 2, 3, 10], 99))
    assert Trace(np.array([0.0, 0.0, 5.0])).stats().peak_to_median == float("inf")


def test_rescale_compress_slice():
    trace = Trace(np.array([1.0, 4.0, 2.0, 8.0]), step_s=10.0, name="t")
    np.testing.assert_allclose(trace.rescaled(100).rates, [12.5, 50, 25, 100])
    fast = trace.compressed(5)
    assert fast.step_s == 2.0 and fast.duration_s == 8.0 and fast.rate_at(2.5) == 4.0
    np.testing.assert_array_equal(trace.sliced(10, 30).rates, [4, 2])
    np.testing.assert_array_equal(trace.sliced(15).rates, [4, 2, 8])
    np.testing.assert_array_equal(fast.per_second(), [1, 1, 4, 4, 2, 2, 8, 8])
    with pytest.raises(TraceError):
        trace.sliced(50, 60)
    with pytest.raises(TraceError):
        Trace(np.zeros(3)).rescaled(10)


# ----------------------------------------------------------------------------- resolution


def test_resolve_generator_specs():
    trace = resolve_trace("constant:rate=7, duration=12")
    assert trace.duration_s == 12 and trace.peak == 7 and "rate=7" in trace.name
    assert resolve_trace("constant").duration_s == 120  # defaults
    assert parse_generator_spec("randomwalk:seed=3,unit=2.5") == (
        "randomwalk",
        {"seed": 3, "unit": 2.5},
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("wave:rate=3", "unknown generator 'wave'"),
        ("constant:speed=3", "unknown parameter 'speed'"),
        ("constant:rate=fast", "'rate' must be a number"),
        ("brownian:seed=1.5", "'seed' must be an integer"),
        ("constant:rate", "expected key=value"),
        ("constant:rate=1,rate=2", "given twice"),
        ("spike:magnitude=0.5", "magnitude must be >= 1"),
    ],
)
def test_bad_generator_specs(spec, message):
    with pytest.raises(TraceError, match=message):
        resolve_trace(spec)


def test_errors_list_the_valid_names():
    with pytest.raises(TraceError) as err:
        resolve_trace("wave:rate=3")
    assert all(name in str(err.value) for name in ("spike", "brownian", "constant", "demo"))
    with pytest.raises(TraceError) as err:
        resolve_trace("constant:speed=3")
    assert all(name in str(err.value) for name in ("rate", "duration", "step"))


def test_resolve_files_directly_and_under_the_data_dir(tmp_path):
    (tmp_path / "traces").mkdir()
    write(tmp_path / "traces", "mine.txt", "4\n5\n")
    by_name = resolve_trace("mine.txt", data_dir=tmp_path)
    np.testing.assert_array_equal(by_name.rates, [4, 5])
    direct = resolve_trace(str(tmp_path / "traces" / "mine.txt"), data_dir=None)
    np.testing.assert_array_equal(direct.rates, [4, 5])
    with pytest.raises(FileNotFoundError, match="neither a trace file.*spike"):
        resolve_trace("missing.txt", data_dir=tmp_path)


def test_default_data_dir_next_to_the_cwd(tmp_path, monkeypatch):
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    assert default_data_dir() == (tmp_path / "shared" / "data").resolve()


@needs_data
def test_default_data_dir_finds_the_real_data_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_data_dir() == REAL_DATA.resolve()
    assert resolve_trace("nab_elb_request_count_5min.csv").step_s == 300.0
