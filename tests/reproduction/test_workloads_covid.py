"""The PSPS test workload built from the COVID-19 hourly trace: selection, smoothing, scale."""

from __future__ import annotations

import numpy as np
import pytest
from support.paths import SHARED_DATA

from elastream.workloads import TraceError, covid_selection, resolve_trace
from elastream.workloads.covid import centred_mean, select_periods, warmup_hours

REAL_DATA = SHARED_DATA
needs_data = pytest.mark.skipif(not REAL_DATA.is_dir(), reason="../shared/data is absent")


def test_select_periods_prefers_spikes_and_skips_missing_hours():
    counts = np.full(200, 100.0)
    counts[120:126] = 600.0  # a spike
    counts[40:44] = 900.0  # a bigger "spike" made of collection gaps
    missing = np.zeros(200, dtype=bool)
    missing[40:44] = True
    (start,) = select_periods(counts, missing, hours=24, periods=1)
    assert start < 126 and start + 24 > 120  # the window holds (part of) the spike
    assert not missing[start : start + 24].any()


def test_warmup_skips_a_growing_start_and_moving_mean_keeps_level():
    counts = np.concatenate([np.linspace(1, 100, 48), np.full(200, 100.0)])
    assert 24 <= warmup_hours(counts) <= 48
    assert centred_mean(np.full(10, 7.0), 3) == pytest.approx(np.full(10, 7.0))
    assert centred_mean(np.array([0.0, 3.0, 0.0]), 3)[1] == pytest.approx(1.0)


@needs_data
def test_covid_workload_peak_volume_and_raw_variant():
    smooth = resolve_trace("covid:peak=300,duration=960")
    raw = resolve_trace("covid:smooth=0,peak=300,duration=960,seed=3")
    assert smooth.peak == pytest.approx(300.0)
    assert smooth.duration_s == raw.duration_s == 960.0
    # the same hours and scale: volumes agree within the moving mean's edge effects
    assert raw.stats().total_events == pytest.approx(smooth.stats().total_events, rel=0.03)
    # raw is burstier second to second; smoothing removes the jitter
    assert np.abs(np.diff(raw.rates)).mean() > 5 * np.abs(np.diff(smooth.rates)).mean()
    assert not np.array_equal(raw.rates, resolve_trace("covid:smooth=0,duration=960").rates)


@needs_data
def test_selected_periods_are_real_traffic_with_spikes():
    sel = covid_selection(hours=24, periods=4)
    assert len(sel.starts) == 4 and list(sel.starts) == sorted(sel.starts)
    assert all(b - a >= 24 for a, b in zip(sel.starts, sel.starts[1:], strict=False))
    for a in sel.starts:
        window = sel.counts[a : a + 24]
        assert a >= sel.warmup_h and not sel.missing[a : a + 24].any()
        assert window.max() / window.min() > 2.5  # a spike or an under-spike in every period


def test_bad_parameters_are_named():
    with pytest.raises(TraceError, match="smooth"):
        resolve_trace("covid:smooth=2")
    with pytest.raises(TraceError, match="periods"):
        resolve_trace("covid:periods=0")
