"""Forecasters and their backtest on seeded synthetic series with known seasonality."""

from __future__ import annotations

import importlib.util
from statistics import NormalDist

import numpy as np
import pytest

from elastream.base.registry import Registry
from elastream.cli.forecast import backtest_models, default_windows, run_backtests, scores
from elastream.prediction.backtest import backtest, coverage, mase, origins_for, skill, smape
from elastream.prediction.forecasting import FORECASTERS, FitCache, forecast
from elastream.prediction.graph import ModelError
from elastream.prediction.series import Series, season_for

STEP = 1800.0  # 30 min: 48 samples a day


def seasonal_series(days: int = 21, noise: float = 4.0, seed: int = 0) -> Series:
    rng = np.random.default_rng(seed)
    t = np.arange(days * 48)
    values = 100 + 40 * np.sin(2 * np.pi * t / 48) + rng.normal(0, noise, t.size)
    return Series(values, STEP)


def test_metrics_hand_worked():
    actual, pred = np.array([10.0, 20.0]), np.array([12.0, 20.0])
    assert smape(actual, pred) == pytest.approx(100 * (2 * 2 / 22) / 2)
    assert smape(np.zeros(2), np.zeros(2)) == 0.0
    # naive in-sample MAE of [1, 3, 5] is 2; forecast MAE 1 → MASE 0.5
    assert mase(actual, np.array([11.0, 21.0]), np.array([1.0, 3.0, 5.0])) == pytest.approx(0.5)
    assert coverage(actual, np.array([9.0, 21.0]), np.array([11.0, 25.0])) == 0.5
    assert origins_for(100, 50, 10, 3) == (50, 70, 90)
    with pytest.raises(ModelError, match="cannot hold"):
        origins_for(10, 8, 5, 3)


@pytest.mark.parametrize("model", ["holt-winters", "seasonal-profile"])
def test_seasonal_models_beat_the_summary_on_a_daily_season(model):
    series = seasonal_series()
    seasonal = backtest(series, model, history=14 * 48, horizon=48, origins=4)
    summary = backtest(series, "summary", history=14 * 48, horizon=48, origins=4)
    # noise σ = 4 against a ±40 season: a model that finds the season is near the noise floor
    assert seasonal.mase < 1.3
    assert seasonal.mase < 0.3 * summary.mase
    assert seasonal.smape < 8.0
    assert 0.75 <= seasonal.coverage90 <= 1.0


def test_summary_interval_covers_stationary_noise():
    rng = np.random.default_rng(5)
    series = Series(50 + rng.normal(0, 5, 2000), 60.0)
    res = backtest(series, "summary", history=500, horizon=50, origins=8)
    assert 0.8 <= res.coverage90 <= 0.97
    assert res.smape < 15


def test_season_detection():
    assert season_for(seasonal_series(days=3), None) == 48
    assert season_for(seasonal_series(days=1), None) is None
    with pytest.raises(ModelError, match="needs ≥ 200 samples"):
        season_for(seasonal_series(days=1), 100)


def test_forecast_shape_and_timing():
    series = seasonal_series(days=4)
    fc = forecast(series, "holt-winters", 10)
    assert fc.point.shape == fc.lower.shape == fc.upper.shape == (10,)
    assert np.all(fc.lower <= fc.point) and np.all(fc.point <= fc.upper)
    assert fc.start_s == pytest.approx(4 * 48 * STEP)
    with pytest.raises(ModelError, match="horizon must be ≥ 1"):
        forecast(series, "summary", 0)


def test_fitted_models_are_cached_by_history_model_and_params():
    cache = FitCache()
    series = seasonal_series(days=4)
    first = cache.fit(series, "seasonal-profile", {"seasons": 3})
    again = cache.fit(Series(series.values.copy(), STEP), "seasonal-profile", {"seasons": 3})
    assert again is first
    assert (cache.hits, cache.misses) == (1, 1)
    cache.fit(series, "seasonal-profile", {"seasons": 2})
    shifted = Series(series.values + 1, STEP)
    cache.fit(shifted, "seasonal-profile", {"seasons": 3})
    assert (cache.hits, cache.misses) == (1, 3)


def test_unknown_model_and_bad_params():
    with pytest.raises(ModelError, match="unknown forecast model 'nope'"):
        forecast(seasonal_series(days=3), "nope", 5)
    with pytest.raises(ValueError, match="seasons"):
        forecast(seasonal_series(days=3), "seasonal-profile", 5, {"seasons": 0})


def test_prophet_is_optional():
    spec = FORECASTERS.get("prophet")
    installed = importlib.util.find_spec("prophet") is not None
    assert spec.available() is installed
    if not installed:
        with pytest.raises(ModelError, match="not installed"):
            forecast(seasonal_series(days=3), "prophet", 5)
        pytest.skip("prophet not installed (optional extra elastream[prophet])")
    res = backtest(seasonal_series(days=10), "prophet", history=7 * 48, horizon=48, origins=2)
    assert res.mase < 2.0


def test_naive_forecast_hand_worked():
    fc = forecast(Series(np.array([1.0, 3.0, 2.0, 6.0]), 60.0), "naive", 3)
    np.testing.assert_allclose(fc.point, [6.0, 6.0, 6.0])
    # one-step differences 2, −1, 4: σ = √((4 + 1 + 16) / 3) = √7; h steps ahead: ±z·σ·√h
    z = NormalDist().inv_cdf(0.95)
    np.testing.assert_allclose(fc.upper, 6.0 + z * np.sqrt(7.0) * np.sqrt([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(fc.lower, np.maximum(0.0, fc.point * 2 - fc.upper))
    assert fc.lower[0] == pytest.approx(6.0 - z * np.sqrt(7.0))
    assert fc.start_s == 240.0


def test_seasonal_naive_forecast_hand_worked():
    history = Series(np.array([1.0, 2.0, 3.0, 4.0, 6.0, 8.0]), 60.0)
    fc = forecast(history, "seasonal-naive", 5, {"season_length": 3})
    np.testing.assert_allclose(fc.point, [4.0, 6.0, 8.0, 4.0, 6.0])
    # seasonal differences 3, 4, 5: σ = √(50 / 3); the second season ahead: σ·√2
    z = NormalDist().inv_cdf(0.95)
    spread = np.sqrt(50.0 / 3.0) * np.array([1.0, 1.0, 1.0, np.sqrt(2.0), np.sqrt(2.0)])
    np.testing.assert_allclose(fc.upper - fc.point, z * spread)
    # the default season is one day: 48 samples of 30 min, once ≥ 2 days are in the history
    daily = forecast(seasonal_series(days=3), "seasonal-naive", 48)
    np.testing.assert_allclose(daily.point, seasonal_series(days=3).values[-48:])
    with pytest.raises(ModelError, match="seasonal-naive: 48 samples .* fewer than 2 days"):
        forecast(seasonal_series(days=1), "seasonal-naive", 4)


def test_skill_against_naive_hand_worked():
    assert skill(0.5, 2.0) == pytest.approx(0.75)
    assert skill(2.0, 2.0) == 0.0
    assert skill(3.0, 2.0) == pytest.approx(-0.5)
    assert skill(0.0, 0.0) == 0.0
    assert skill(1.0, 0.0) == float("-inf")
    # the ramp 0..7: naive from [0, 1, 2, 3] forecasts 3, 3 for 4, 5 (MAE 1.5); in-sample
    # one-step MAE 1, so MASE 1.5; the mean of the window (1.5) is off by 2.5 and 3.5: MASE 3
    ramp = Series(np.arange(8.0), 1.0)
    naive = backtest(ramp, "naive", history=4, horizon=2, origins=1)
    mean = backtest(ramp, "summary", history=4, horizon=2, origins=1, params={"statistic": "mean"})
    assert naive.origins == (4,)
    assert naive.mase == pytest.approx(1.5)
    assert mean.mase == pytest.approx(3.0)
    assert skill(mean.mase, naive.mase) == pytest.approx(-1.0)


def test_baselines_are_registered_and_always_backtested():
    assert isinstance(FORECASTERS, Registry)
    assert {"naive", "seasonal-naive"} <= set(FORECASTERS)
    assert backtest_models(["summary", "naive"]) == ["naive", "seasonal-naive", "summary"]
    results, skipped = run_backtests(seasonal_series(), ["summary"], 14 * 86400.0, 86400.0, 3)
    assert list(results) == ["naive", "seasonal-naive", "summary"] and not skipped
    table = scores(results)
    assert table["naive"]["skill"] == 0.0
    assert table["seasonal-naive"]["skill"] == pytest.approx(
        1 - results["seasonal-naive"].mase / results["naive"].mase
    )
    # a daily season against a noise of σ = 4: repeating yesterday beats repeating the last value
    assert table["seasonal-naive"]["skill"] > 0.5


def test_default_windows_follow_the_trace():
    three_days = Series(np.ones(3 * 1440), 60.0)  # 1-minute steps
    assert default_windows(three_days) == (2 * 86400.0, 3600.0)  # 2/3 of it; 1 h
    hourly = Series(np.ones(60 * 24), 3600.0)  # 60 days of hours: 14 d cap; 12 steps
    assert default_windows(hourly) == (14 * 86400.0, 12 * 3600.0)
    short = Series(np.ones(57), 60.0)  # 57 min: 38 min; a tenth (342 s) in whole steps
    assert default_windows(short) == (38 * 60.0, 300.0)
