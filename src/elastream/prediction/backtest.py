"""Rolling-origin backtest of a forecaster: MASE, sMAPE and the 90 % interval's coverage."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elastream.prediction.forecasting import FitCache
from elastream.prediction.graph import ModelError
from elastream.prediction.series import Forecast, Series, season_for


@dataclass(frozen=True)
class BacktestResult:
    """Scores averaged over origins, and each origin's forecast for plotting."""

    model: str
    mase: float
    smape: float
    coverage90: float
    origins: tuple[int, ...]
    forecasts: tuple[Forecast, ...]


def mase(actual: np.ndarray, predicted: np.ndarray, train: np.ndarray, season: int = 1) -> float:
    """Mean absolute error scaled by the in-sample MAE of the (seasonal) naive forecast."""
    lag = season if train.size > season else 1
    scale = float(np.mean(np.abs(train[lag:] - train[:-lag])))
    err = float(np.mean(np.abs(actual - predicted)))
    if scale == 0:
        return 0.0 if err == 0 else float("inf")
    return err / scale


def skill(model_mase: float, naive_mase: float) -> float:
    """Skill against the naive forecast on the same origins: 1 − MASE_model / MASE_naive.

    Positive: the model's error is that fraction below naive's (1 is a perfect forecast);
    0: no better than naive; negative: worse. A perfect naive forecast leaves no room (0 for
    another perfect one, −inf otherwise).
    """
    if naive_mase == 0:
        return 0.0 if model_mase == 0 else float("-inf")
    return 1.0 - model_mase / naive_mase


def smape(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Symmetric MAPE in percent, 200·|y − ŷ|/(|y| + |ŷ|); a 0/0 term counts as 0."""
    denom = np.abs(actual) + np.abs(predicted)
    terms = np.divide(
        2.0 * np.abs(actual - predicted), denom, out=np.zeros_like(denom), where=denom > 0
    )
    return float(100.0 * np.mean(terms))


def coverage(actual: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float:
    """Fraction of actual values inside [lower, upper]."""
    return float(np.mean((actual >= lower) & (actual <= upper)))


def origins_for(n: int, history: int, horizon: int, count: int) -> tuple[int, ...]:
    """Up to `count` evenly spaced origins o with history ≤ o and o + horizon ≤ n."""
    last = n - horizon
    if history < 2 or last < history:
        raise ModelError(
            f"backtest: {n} samples cannot hold a {history}-sample history and a "
            f"{horizon}-sample horizon"
        )
    if count < 1:
        raise ModelError(f"backtest: origins must be ≥ 1, got {count}")
    return tuple(sorted({round(float(o)) for o in np.linspace(history, last, count)}))


def backtest(
    series: Series, model: str, history: int, horizon: int, origins: int = 10,
    params: dict | None = None, cache: FitCache | None = None,
) -> BacktestResult:  # fmt: skip
    """Fit on the `history` samples before each origin and score the next `horizon` samples."""
    values = series.values
    cache = cache or FitCache(size=4)
    scores, forecasts = [], []
    picked = origins_for(values.size, history, horizon, origins)
    for origin in picked:
        train = Series(values[origin - history : origin], series.step_s,
                       series.start_s + (origin - history) * series.step_s)  # fmt: skip
        fc = cache.fit(train, model, params).forecast(horizon)
        actual = values[origin : origin + horizon]
        season = season_for(train, None) or 1
        scores.append(
            (
                mase(actual, fc.point, train.values, season),
                smape(actual, fc.point),
                coverage(actual, fc.lower, fc.upper),
            )
        )
        forecasts.append(fc)
    m, s, c = (float(np.mean(col)) for col in zip(*scores, strict=True))
    return BacktestResult(model, m, s, c, picked, tuple(forecasts))
