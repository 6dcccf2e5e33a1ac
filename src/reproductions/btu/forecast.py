"""Our simple forecaster: Holt's linear smoothing, plus the peak of a look-back window."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from elastream.leasing.hosts import LeasingError
from elastream.prediction.forecasters import holt_step


def holt(series: np.ndarray, alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Level and trend after the last sample of each column of `series` (time x series).

    level_t = alpha * y_t + (1 - alpha) * (level_{t-1} + trend_{t-1})
    trend_t = beta * (level_t - level_{t-1}) + (1 - beta) * trend_{t-1}"""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    if y.shape[0] == 0:
        raise LeasingError("Holt forecast of an empty series")
    if not (0 < alpha <= 1 and 0 <= beta <= 1):
        raise LeasingError(f"Holt smoothing out of range: alpha={alpha}, beta={beta}")
    level = y[0].copy()
    trend = np.zeros_like(level)
    for row in y[1:]:
        level, trend = holt_step(level, trend, row, alpha, beta)
    return level, trend


def forecast(series: np.ndarray, steps: float, alpha: float, beta: float) -> np.ndarray:
    """Holt forecast `steps` samples ahead, never below zero (rates cannot be negative)."""
    level, trend = holt(series, alpha, beta)
    return np.maximum(0.0, level + steps * trend)


def window_peak(series: Sequence[float] | np.ndarray, samples: int) -> np.ndarray:
    """Largest value of each column over the last `samples` rows (a naive forecast of the next
    window's peak: what the last window saw is what the next one is assumed to need)."""
    y = np.atleast_2d(np.asarray(series, dtype=float).T).T
    if y.shape[0] == 0:
        raise LeasingError("peak of an empty series")
    return y[-max(1, samples) :].max(axis=0)
