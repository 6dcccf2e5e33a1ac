"""The forecasters (Caladrius IV-A): each model's parameters and its fit, from the paper's summary
statistic and the naive baselines to Holt-Winters, statsforecast's automatic models and Prophet
(registered by name in `forecasting`)."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import Field

from elastream.base.extras import require
from elastream.prediction.graph import ModelError
from elastream.prediction.series import (
    Forecast,
    Params,
    Series,
    clip_rates,
    forecast_start,
    season_for,
)

T = TypeVar("T", float, np.ndarray)

MAX_ETS_SEASON = 24  # AutoETS / AutoARIMA: longer seasons are left out (their search takes minutes)
MAX_STL_SEASON = (
    300  # MSTL: a 5-minute series' day (288) fits in seconds, a 1-minute one's does not
)


class SummaryParams(Params):
    """The paper's simple model: a statistic of the last `window` samples."""

    window: int | None = Field(
        None, ge=1, description="samples summarised (None: the whole history)"
    )
    statistic: Literal["mean", "median"] = Field("median", description="the point forecast")


class SeasonParams(Params):
    """The settings of every forecaster with a season."""

    season_length: int | None = Field(
        None, ge=2, description="samples per season (None: one day if ≥ 2 days of history)"
    )


class SeasonalParams(SeasonParams):
    """Holt-Winters / ETS with additive error and season."""

    trend: Literal["add", "none"] = Field("none", description="additive trend or none")
    damped: bool = Field(False, description="damp the trend (only with trend='add')")
    initialization: Literal["heuristic", "estimated"] = Field(
        "heuristic", description="initial seasonal states: heuristic (fast) or estimated (slow)"
    )


class HoltParams(Params):
    """Holt's linear trend with fixed smoothing: no fitting, cheap enough for a control loop."""

    alpha: float = Field(0.6, gt=0, le=1, description="level smoothing α")
    beta: float = Field(0.3, gt=0, le=1, description="trend smoothing β")


class ProfileParams(SeasonParams):
    """A seasonal summary: the statistic of the same phase over the last `seasons` seasons."""

    seasons: int = Field(7, ge=1, le=1000, description="past seasons summarised per phase")
    statistic: Literal["mean", "median"] = Field("median", description="per-phase statistic")
    level_shift: bool = Field(
        True, description="shift the profile by the median deviation of the last season"
    )


class NaiveParams(Params):
    """The naive baseline: every step ahead is the last sample (a random walk)."""


class SeasonalNaiveParams(SeasonParams):
    """The seasonal-naive baseline: each step ahead repeats the same phase of the last season."""


class StatsForecastParams(SeasonParams):
    """statsforecast's automatic models (AutoETS, AutoARIMA, MSTL) on the last `max_fit` samples."""

    max_fit: int = Field(
        2000,
        ge=8,
        description="fit on the last this many samples at most (bounds the fit time on long "
        "series; AutoARIMA's search is the slowest: 500 by default for it)",
    )


class ProphetParams(Params):
    """Prophet's additive model; the interval is its own yhat_lower/yhat_upper."""

    daily: bool = Field(True, description="fit a daily seasonality")
    weekly: bool = Field(False, description="fit a weekly seasonality")


def required_season(history: Series, params: SeasonParams, name: str) -> int:
    """The season of a forecaster that needs one: as given, else one day of samples when the
    history holds 2 days."""
    season = season_for(history, params.season_length)
    if season is None:
        raise ModelError(
            f"{name}: {history.values.size} samples of {history.step_s:g} s hold fewer than 2 "
            "days; give season_length"
        )
    return season


@dataclass(frozen=True)
class _SummaryFit:
    history: Series
    params: SummaryParams

    def forecast(self, horizon: int) -> Forecast:
        start, h = forecast_start(self.history, horizon)
        window = self.history.values[-(self.params.window or self.history.values.size) :]
        point = float(np.mean(window) if self.params.statistic == "mean" else np.median(window))
        tail = (1.0 - self.params.level) / 2.0
        lo, hi = np.quantile(window, [tail, 1.0 - tail])
        return Forecast(
            np.full(h, point), np.full(h, lo), np.full(h, hi), self.params.level,
            self.history.step_s, start,
        )  # fmt: skip


def fit_summary(history: Series, params: SummaryParams) -> _SummaryFit:
    return _SummaryFit(history, params)


@dataclass(frozen=True)
class _LibraryFit:
    """A model fitted by a forecasting library (statsmodels, Prophet, statsforecast): the
    history it saw, the parameters and the library's fitted model, which `forecast` asks."""

    history: Series
    params: Params
    model: Any


class _SeasonalFit(_LibraryFit):
    def forecast(self, horizon: int) -> Forecast:
        start, h = forecast_start(self.history, horizon)
        n = self.history.values.size
        frame = self.model.get_prediction(start=n, end=n + h - 1).summary_frame(
            alpha=1.0 - self.params.level
        )
        point, lower, upper = clip_rates(frame["mean"], frame["pi_lower"], frame["pi_upper"])
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def fit_seasonal(history: Series, params: SeasonalParams) -> _SeasonalFit:
    feature = "the seasonal (ETS) forecaster"
    ConvergenceWarning = require(
        "statsmodels.tools.sm_exceptions", extra="forecast", feature=feature
    ).ConvergenceWarning
    ETSModel = require(
        "statsmodels.tsa.exponential_smoothing.ets", extra="forecast", feature=feature
    ).ETSModel

    import pandas as pd  # the statsmodels path only (0.6 s of a run's import otherwise)

    season = season_for(history, params.season_length)
    trend = None if params.trend == "none" else "add"
    model = ETSModel(
        pd.Series(history.values),
        error="add",
        trend=trend,
        damped_trend=params.damped and trend is not None,
        seasonal="add" if season else None,
        seasonal_periods=season,
        initialization_method=params.initialization if season else "estimated",
    )
    with warnings.catch_warnings():  # non-convergence still yields usable smoothing parameters
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _SeasonalFit(history, params, model.fit(disp=False))


@dataclass(frozen=True)
class _HoltFit:
    history: Series
    params: HoltParams
    level: float
    trend: float
    sigma: float  # standard deviation of the one-step-ahead errors

    def forecast(self, horizon: int) -> Forecast:
        start, h = forecast_start(self.history, horizon)
        a, b = self.params.alpha, self.params.beta
        steps = np.arange(1, h + 1, dtype=float)
        point = self.level + steps * self.trend
        # ETS(A,A,N): Var(e_{t+k}) = σ²·(1 + Σ_{j<k} (α(1 + jβ))²)  (Hyndman et al. 2008, 6.3)
        terms = (a * (1.0 + np.arange(1, h, dtype=float) * b)) ** 2
        spread = self.sigma * np.sqrt(1.0 + np.concatenate(([0.0], np.cumsum(terms))))
        z = NormalDist().inv_cdf(0.5 + self.params.level / 2.0)
        point, lower, upper = clip_rates(point, point - z * spread, point + z * spread)
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def holt_step(level: T, trend: T, x: T, alpha: float, beta: float) -> tuple[T, T]:
    """One step of Holt's linear smoothing (floats or numpy arrays, element-wise):
    ℓ_t = αx_t + (1-α)(ℓ_{t-1} + b_{t-1}), b_t = β(ℓ_t - ℓ_{t-1}) + (1-β)b_{t-1}."""
    new_level = alpha * x + (1 - alpha) * (level + trend)
    return new_level, beta * (new_level - level) + (1 - beta) * trend


def fit_holt(history: Series, params: HoltParams) -> _HoltFit:
    """Run the smoother over the history: ℓ_t = αx_t + (1-α)(ℓ_{t-1} + b_{t-1}),
    b_t = β(ℓ_t - ℓ_{t-1}) + (1-β)b_{t-1}, started at ℓ = x_0, b = x_1 - x_0."""
    x = history.values
    level, trend = float(x[0]), float(x[1] - x[0])
    errors = []
    for value in x[1:]:
        errors.append(value - (level + trend))
        level, trend = holt_step(level, trend, value, params.alpha, params.beta)
    sigma = float(np.std(errors, ddof=1)) if len(errors) > 1 else abs(errors[0])
    return _HoltFit(history, params, level, trend, sigma)


@dataclass(frozen=True)
class _NaiveFit:
    """y_{T+h} = y_{T+h-m(k+1)}, k = ⌊(h-1)/m⌋, with interval ±z·σ·√(k+1) (Hyndman &
    Athanasopoulos, FPP3 5.5): m = 1 is the naive forecast, m = the season the seasonal one."""

    history: Series
    level: float
    season: int
    sigma: float  # standard deviation of the in-sample (seasonal) differences

    def forecast(self, horizon: int) -> Forecast:
        start, h = forecast_start(self.history, horizon)
        steps = np.arange(h)
        point = self.history.values[-self.season :][steps % self.season]
        spread = self.sigma * np.sqrt(steps // self.season + 1.0)
        z = NormalDist().inv_cdf(0.5 + self.level / 2.0)
        point, lower, upper = clip_rates(point, point - z * spread, point + z * spread)
        return Forecast(point, lower, upper, self.level, self.history.step_s, start)


def fit_naive_at(history: Series, level: float, season: int) -> _NaiveFit:
    x = history.values
    diffs = x[season:] - x[:-season]
    sigma = float(np.sqrt(np.mean(diffs**2)))  # the residuals' RMS: their mean is 0 by model
    return _NaiveFit(history, level, season, sigma)


def fit_naive(history: Series, params: NaiveParams) -> _NaiveFit:
    return fit_naive_at(history, params.level, 1)


def fit_seasonal_naive(history: Series, params: SeasonalNaiveParams) -> _NaiveFit:
    return fit_naive_at(history, params.level, required_season(history, params, "seasonal-naive"))


@dataclass(frozen=True)
class _ProfileFit:
    history: Series
    params: ProfileParams
    season: int
    profile: np.ndarray  # by phase, phase 0 = the sample right after the history
    shift: float
    deviations: np.ndarray

    def forecast(self, horizon: int) -> Forecast:
        start, h = forecast_start(self.history, horizon)
        point = np.resize(self.profile, h) + self.shift
        tail = (1.0 - self.params.level) / 2.0
        lo, hi = np.quantile(self.deviations, [tail, 1.0 - tail])
        point, lower, upper = clip_rates(point, point + lo, point + hi)
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def fit_profile(history: Series, params: ProfileParams) -> _ProfileFit:
    season = required_season(history, params, "seasonal-profile")
    k = min(params.seasons, history.values.size // season)
    block = history.values[-k * season :].reshape(k, season)  # rows: seasons, columns: phases
    stat = np.median if params.statistic == "median" else np.mean
    profile = stat(block, axis=0)
    shift = float(np.median(block[-1] - profile)) if params.level_shift and k > 1 else 0.0
    deviations = (block - profile).ravel()
    return _ProfileFit(history, params, season, profile, shift, deviations)


class _ProphetFit(_LibraryFit):
    def forecast(self, horizon: int) -> Forecast:
        import pandas as pd

        start, h = forecast_start(self.history, horizon)
        stamps = pd.to_datetime(start + np.arange(h) * self.history.step_s, unit="s")
        frame = self.model.predict(pd.DataFrame({"ds": stamps}))
        point, lower, upper = clip_rates(frame["yhat"], frame["yhat_lower"], frame["yhat_upper"])
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def fit_prophet(history: Series, params: ProphetParams) -> _ProphetFit:
    import pandas as pd
    from prophet import Prophet

    logging.getLogger("cmdstanpy").setLevel(logging.WARNING)  # one INFO line per chain otherwise
    stamps = pd.to_datetime(
        history.start_s + np.arange(history.values.size) * history.step_s, unit="s"
    )
    model = Prophet(
        interval_width=params.level,
        daily_seasonality=params.daily,
        weekly_seasonality=params.weekly,
        yearly_seasonality=False,
    )
    model.fit(pd.DataFrame({"ds": stamps, "y": history.values}))
    return _ProphetFit(history, params, model)


class _StatsForecastFit(_LibraryFit):
    def forecast(self, horizon: int) -> Forecast:
        start, h = forecast_start(self.history, horizon)
        pct = round(self.params.level * 100, 6)
        out = self.model.predict(h=h, level=[pct])
        lo, hi = (next(v for k, v in out.items() if k.startswith(side)) for side in ("lo-", "hi-"))
        point, lower, upper = clip_rates(out["mean"], lo, hi)
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def statsforecast_fit(name: str, needs_season: bool, default_fit: int | None = None):
    """The fit function of statsforecast's model `name` (its absence named with the extra)."""

    def fit(history: Series, params: StatsForecastParams) -> _StatsForecastFit:
        models = require("statsforecast.models", extra="forecast", feature=f"the {name} forecaster")
        if needs_season:
            season: int | None = required_season(history, params, name)
        else:
            season = season_for(history, params.season_length)
        if needs_season and season is not None and season > MAX_STL_SEASON:
            raise ModelError(
                f"{name}: a season of {season} samples is beyond {MAX_STL_SEASON} (a fit takes "
                "tens of seconds); resample the series to a coarser step"
            )
        if not needs_season and season is not None and season > MAX_ETS_SEASON:
            season = None  # as R's ets: a longer season is not searched (minutes a fit)
        limit = params.max_fit if "max_fit" in params.model_fields_set else default_fit
        y = history.values[-(limit or params.max_fit) :]
        model = getattr(models, name)(season_length=season or 1)
        with warnings.catch_warnings():  # statsforecast warns on short or constant series
            warnings.simplefilter("ignore")
            try:
                model.fit(y)
            except Exception as exc:  # statsforecast raises bare Exceptions ("out of range")
                raise ModelError(f"{name} could not be fitted on this series: {exc}") from exc
        return _StatsForecastFit(history, params, model)

    return fit
