"""Forecasters and their backtest on seeded synthetic series with known seasonality."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from elastream.modeling.backtest import backtest, coverage, mase, origins_for, smape
from elastream.modeling.forecasting import FORECASTERS, FitCache, Series, forecast, season_for
from elastream.modeling.graph import ModelError

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
    spec = FORECASTERS["prophet"]
    installed = importlib.util.find_spec("prophet") is not None
    assert spec.available() is installed
    if not installed:
        with pytest.raises(ModelError, match="not installed"):
            forecast(seasonal_series(days=3), "prophet", 5)
        pytest.skip("prophet not installed (optional extra elastream[prophet])")
    res = backtest(seasonal_series(days=10), "prophet", history=7 * 48, horizon=48, origins=2)
    assert res.mase < 2.0
