"""The `auto` forecaster on hand-made series: its backtest's MASE values recomputed here, naive
chosen on a random walk, a seasonal model on a clean seasonal series, and the optional models
named by their extra when statsforecast is missing."""

import importlib.util

import numpy as np
import pytest

from elastream.base import extras
from elastream.base.extras import MissingExtraError
from elastream.prediction.auto import AutoParams, select, selection_origins
from elastream.prediction.forecasting import forecast
from elastream.prediction.series import Series


def naive_mase(y: np.ndarray, origins: list[int], h: int) -> float:
    """Mean over origins of MAE(last value repeated) / mean |one-step difference| before o."""
    out = []
    for o in origins:
        scale = np.mean(np.abs(np.diff(y[:o])))
        out.append(np.mean(np.abs(y[o : o + h] - y[o - 1])) / scale)
    return float(np.mean(out))


def test_the_origins_tile_the_end_of_the_window():
    assert selection_origins(100, 10, 3) == ((70, 80, 90), 10)
    assert selection_origins(25, 10, 4) == ((5, 15), 10)  # two fit: 2 samples before the first
    assert selection_origins(8, 10, 3) == ((2,), 6)  # shorter horizon when the window is short


def test_auto_picks_naive_on_a_random_walk():
    """A random walk away from its median: the median repeated (summary) is far worse than the
    last value; both MASE values recomputed from the samples."""
    y = 100.0 + np.cumsum(np.random.default_rng(7).normal(0.5, 1.0, 200))
    params = AutoParams(candidates=["summary"], horizon=5, origins=3)
    got = select(Series(y, 60.0), params)
    origins = [185, 190, 195]
    assert got.origins == tuple(origins)
    assert got.scores["naive"] == pytest.approx(naive_mase(y, origins, 5))
    median = [
        np.mean(np.abs(y[o : o + 5] - np.median(y[:o]))) / np.mean(np.abs(np.diff(y[:o])))
        for o in origins
    ]
    assert got.scores["summary"] == pytest.approx(np.mean(median))
    assert got.chosen == "naive"
    fc = forecast(Series(y, 60.0), "auto", 3, {"candidates": ["summary"], "horizon": 5})
    assert list(fc.point) == [y[-1]] * 3


def test_auto_picks_the_seasonal_model_on_a_clean_seasonal_series():
    """Hourly, a 24-hour cycle repeated exactly for 5 days: seasonal-naive is exact (MASE 0),
    naive is not (its MASE recomputed here), so auto forecasts yesterday's same hours."""
    day = np.array([10.0 + 8.0 * np.sin(2 * np.pi * k / 24) + (k % 5) for k in range(24)])
    y = np.tile(day, 5)
    params = AutoParams(candidates=["seasonal-naive"], horizon=12, origins=2)
    got = select(Series(y, 3600.0), params)
    assert got.origins == (96, 108)
    assert got.scores["seasonal-naive"] == pytest.approx(0.0, abs=1e-12)
    assert got.scores["naive"] == pytest.approx(naive_mase(y, [96, 108], 12))
    assert got.scores["naive"] > 0.5
    assert got.chosen == "seasonal-naive"
    fc = forecast(Series(y, 3600.0), "auto", 6, params.model_dump())
    np.testing.assert_allclose(fc.point, day[:6])


def test_one_lucky_origin_does_not_replace_naive():
    """Naive's errors: origin 1 bad, origins 2-4 good; summary (the window's median) is exact
    at origin 1 only. Summary's mean MASE is lower, but it beats naive at 1 of 4 origins."""
    y = np.array([0.0, 1.0] * 10 + [10.0] * 4 + [0.5] * 4 + [0.5] * 4 + [0.5] * 4)
    params = AutoParams(candidates=["summary"], horizon=4, origins=4)
    got = select(Series(y, 60.0), params)
    assert got.origins == (20, 24, 28, 32)
    assert got.scores["summary"] < got.scores["naive"]
    assert got.chosen == "naive"


def test_the_default_backtest_needs_wins_at_six_origins_to_replace_naive():
    """A flat series (median 0.5) jumps to 9 and holds for two blocks of 4 (naive 8 off at
    the jump, then exact; the median 8.5 off), then four blocks return to 0.5 and jump to 9
    at their end (the median exact three steps in four, naive 8.5 off). Summary wins the last
    four origins, not the two before: at 4 origins it replaces naive (a 1-in-16 chance for
    a model no better than naive), at the default 6 (1 in 64) it does not."""
    held = [9.0] * 8
    back = [0.5, 0.5, 0.5, 9.0] * 4
    y = np.array([0.0, 1.0] * 30 + held + back)
    four = select(Series(y, 60.0), AutoParams(candidates=["summary"], horizon=4, origins=4))
    assert four.origins == (68, 72, 76, 80)
    assert four.chosen == "summary"
    default = select(Series(y, 60.0), AutoParams(candidates=["summary"], horizon=4))
    assert default.origins == (60, 64, 68, 72, 76, 80)
    assert default.chosen == "naive"


def test_auto_is_never_worse_than_naive_in_its_own_backtest():
    rng = np.random.default_rng(3)
    for trial in range(5):
        y = np.abs(50 + np.cumsum(rng.normal(0, 3, 300)) + 10 * rng.standard_normal(300))
        got = select(Series(y, 60.0), AutoParams(candidates=["holt", "summary"], horizon=10))
        assert got.scores[got.chosen] <= got.scores["naive"], trial


def test_a_missing_statsforecast_names_its_extra(monkeypatch):
    real = extras.importlib.import_module

    def without(name, *args):
        if name.startswith("statsforecast"):
            raise ModuleNotFoundError(f"No module named {name!r}", name="statsforecast")
        return real(name, *args)

    monkeypatch.setattr(extras.importlib, "import_module", without)
    with pytest.raises(MissingExtraError, match=r"elastream\[forecast\]"):
        forecast(Series(np.arange(50.0), 60.0), "auto-ets", 3)


@pytest.mark.skipif(
    importlib.util.find_spec("statsforecast") is None, reason="statsforecast not installed"
)
def test_statsforecast_models_fit_on_a_bounded_window():
    """MSTL on a clean hourly cycle forecasts the next hours of it; a season beyond what MSTL
    fits in seconds is refused with the way out."""
    day = 10.0 + 5.0 * np.sin(2 * np.pi * np.arange(24) / 24)
    fc = forecast(Series(np.tile(day, 4), 3600.0), "mstl", 6)
    np.testing.assert_allclose(fc.point, day[:6], atol=0.05)
    assert np.all(fc.lower <= fc.point) and np.all(fc.point <= fc.upper)
    minutes = Series(np.tile(np.arange(1440.0), 2), 60.0)
    with pytest.raises(Exception, match="beyond 300"):
        forecast(minutes, "mstl", 3)
