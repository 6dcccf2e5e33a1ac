"""Traffic forecasters (Caladrius IV-A) behind a registry: fit(history) → forecast(horizon)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, Protocol, TypeVar

import numpy as np
import pandas as pd
from pydantic import Field

from elastream.base.extras import require
from elastream.base.registry import Registry
from elastream.base.settings import Settings
from elastream.prediction.graph import ModelError

T = TypeVar("T", float, np.ndarray)

DAY_S = 86_400.0
MAX_SEASON = 2_000  # samples; a longer daily season is not modelled (too many states)
MAX_ETS_SEASON = 24  # AutoETS / AutoARIMA: longer seasons are left out (their search takes minutes)
MAX_STL_SEASON = (
    300  # MSTL: a 5-minute series' day (288) fits in seconds, a 1-minute one's does not
)


@dataclass(frozen=True)
class Series:
    """Source rate (events/s) sampled every `step_s` seconds, starting at `start_s`."""

    values: np.ndarray
    step_s: float = 1.0
    start_s: float = 0.0

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=float)
        if values.ndim != 1 or values.size < 2:
            raise ModelError("history: a forecast needs at least 2 samples")
        if not np.all(np.isfinite(values)):
            raise ModelError("history: rates must be finite")
        if self.step_s <= 0:
            raise ModelError(f"history: step must be > 0 s, got {self.step_s}")
        object.__setattr__(self, "values", values)

    def digest(self) -> str:
        """A stable hash of the history: the cache key's first part."""
        h = hashlib.sha256(self.values.tobytes())
        h.update(f"{self.step_s}:{self.start_s}".encode())
        return h.hexdigest()


@dataclass(frozen=True)
class Forecast:
    """Point forecast and the `level` prediction interval for the next `len(point)` steps."""

    point: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    step_s: float
    start_s: float


class Fitted(Protocol):
    def forecast(self, horizon: int) -> Forecast: ...


class Params(Settings):
    """Settings shared by every forecaster."""

    level: float = Field(0.9, gt=0, lt=1, description="coverage of the prediction interval")


class SummaryParams(Params):
    """The paper's simple model: a statistic of the last `window` samples."""

    window: int | None = Field(
        None, ge=1, description="samples summarised (None: the whole history)"
    )
    statistic: Literal["mean", "median"] = Field("median", description="the point forecast")


class SeasonalParams(Params):
    """Holt-Winters / ETS with additive error and season."""

    season_length: int | None = Field(
        None, ge=2, description="samples per season (None: one day if ≥ 2 days of history)"
    )
    trend: Literal["add", "none"] = Field("none", description="additive trend or none")
    damped: bool = Field(False, description="damp the trend (only with trend='add')")
    initialization: Literal["heuristic", "estimated"] = Field(
        "heuristic", description="initial seasonal states: heuristic (fast) or estimated (slow)"
    )


class HoltParams(Params):
    """Holt's linear trend with fixed smoothing: no fitting, cheap enough for a control loop."""

    alpha: float = Field(0.6, gt=0, le=1, description="level smoothing α")
    beta: float = Field(0.3, gt=0, le=1, description="trend smoothing β")


class ProfileParams(Params):
    """A seasonal summary: the statistic of the same phase over the last `seasons` seasons."""

    season_length: int | None = Field(
        None, ge=2, description="samples per season (None: one day if ≥ 2 days of history)"
    )
    seasons: int = Field(7, ge=1, le=1000, description="past seasons summarised per phase")
    statistic: Literal["mean", "median"] = Field("median", description="per-phase statistic")
    level_shift: bool = Field(
        True, description="shift the profile by the median deviation of the last season"
    )


class NaiveParams(Params):
    """The naive baseline: every step ahead is the last sample (a random walk)."""


class SeasonalNaiveParams(Params):
    """The seasonal-naive baseline: each step ahead repeats the same phase of the last season."""

    season_length: int | None = Field(
        None, ge=2, description="samples per season (None: one day if ≥ 2 days of history)"
    )


class StatsForecastParams(Params):
    """statsforecast's automatic models (AutoETS, AutoARIMA, MSTL) on the last `max_fit` samples."""

    season_length: int | None = Field(
        None, ge=2, description="samples per season (None: one day if ≥ 2 days of history)"
    )
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


def _rates(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rates are never negative: clip point and bounds at 0."""
    return tuple(np.maximum(np.asarray(a, dtype=float), 0.0) for a in arrays)


def _times(history: Series, horizon: int) -> tuple[float, int]:
    if horizon < 1:
        raise ModelError(f"forecast horizon must be ≥ 1 step, got {horizon}")
    return history.start_s + history.values.size * history.step_s, horizon


@dataclass(frozen=True)
class _SummaryFit:
    history: Series
    params: SummaryParams

    def forecast(self, horizon: int) -> Forecast:
        start, h = _times(self.history, horizon)
        window = self.history.values[-(self.params.window or self.history.values.size) :]
        point = float(np.mean(window) if self.params.statistic == "mean" else np.median(window))
        tail = (1.0 - self.params.level) / 2.0
        lo, hi = np.quantile(window, [tail, 1.0 - tail])
        return Forecast(
            np.full(h, point), np.full(h, lo), np.full(h, hi), self.params.level,
            self.history.step_s, start,
        )  # fmt: skip


def season_for(history: Series, requested: int | None) -> int | None:
    """The season in samples: as requested, else one day when ≥ 2 days are in the history."""
    if requested is not None:
        if history.values.size < 2 * requested:
            raise ModelError(
                f"season_length {requested} needs ≥ {2 * requested} samples of history, "
                f"got {history.values.size}"
            )
        return requested
    per_day = round(DAY_S / history.step_s)
    if 2 <= per_day <= MAX_SEASON and history.values.size >= 2 * per_day:
        return per_day
    return None


@dataclass(frozen=True)
class _SeasonalFit:
    history: Series
    params: SeasonalParams
    result: object

    def forecast(self, horizon: int) -> Forecast:
        start, h = _times(self.history, horizon)
        n = self.history.values.size
        frame = self.result.get_prediction(start=n, end=n + h - 1).summary_frame(  # type: ignore[attr-defined]
            alpha=1.0 - self.params.level
        )
        point, lower, upper = _rates(frame["mean"], frame["pi_lower"], frame["pi_upper"])
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def _fit_seasonal(history: Series, params: SeasonalParams) -> _SeasonalFit:
    feature = "the seasonal (ETS) forecaster"
    ConvergenceWarning = require(
        "statsmodels.tools.sm_exceptions", extra="forecast", feature=feature
    ).ConvergenceWarning
    ETSModel = require(
        "statsmodels.tsa.exponential_smoothing.ets", extra="forecast", feature=feature
    ).ETSModel

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
        start, h = _times(self.history, horizon)
        a, b = self.params.alpha, self.params.beta
        steps = np.arange(1, h + 1, dtype=float)
        point = self.level + steps * self.trend
        # ETS(A,A,N): Var(e_{t+k}) = σ²·(1 + Σ_{j<k} (α(1 + jβ))²)  (Hyndman et al. 2008, 6.3)
        terms = (a * (1.0 + np.arange(1, h, dtype=float) * b)) ** 2
        spread = self.sigma * np.sqrt(1.0 + np.concatenate(([0.0], np.cumsum(terms))))
        z = NormalDist().inv_cdf(0.5 + self.params.level / 2.0)
        point, lower, upper = _rates(point, point - z * spread, point + z * spread)
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def holt_step(level: T, trend: T, x: T, alpha: float, beta: float) -> tuple[T, T]:
    """One step of Holt's linear smoothing (floats or numpy arrays, element-wise):
    ℓ_t = αx_t + (1-α)(ℓ_{t-1} + b_{t-1}), b_t = β(ℓ_t - ℓ_{t-1}) + (1-β)b_{t-1}."""
    new_level = alpha * x + (1 - alpha) * (level + trend)
    return new_level, beta * (new_level - level) + (1 - beta) * trend


def _fit_holt(history: Series, params: HoltParams) -> _HoltFit:
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
        start, h = _times(self.history, horizon)
        steps = np.arange(h)
        point = self.history.values[-self.season :][steps % self.season]
        spread = self.sigma * np.sqrt(steps // self.season + 1.0)
        z = NormalDist().inv_cdf(0.5 + self.level / 2.0)
        point, lower, upper = _rates(point, point - z * spread, point + z * spread)
        return Forecast(point, lower, upper, self.level, self.history.step_s, start)


def _fit_naive_at(history: Series, level: float, season: int) -> _NaiveFit:
    x = history.values
    diffs = x[season:] - x[:-season]
    sigma = float(np.sqrt(np.mean(diffs**2)))  # the residuals' RMS: their mean is 0 by model
    return _NaiveFit(history, level, season, sigma)


def _fit_naive(history: Series, params: NaiveParams) -> _NaiveFit:
    return _fit_naive_at(history, params.level, 1)


def _fit_seasonal_naive(history: Series, params: SeasonalNaiveParams) -> _NaiveFit:
    season = season_for(history, params.season_length)
    if season is None:
        raise ModelError(
            f"seasonal-naive: {history.values.size} samples of {history.step_s:g} s hold "
            "fewer than 2 days; give season_length"
        )
    return _fit_naive_at(history, params.level, season)


@dataclass(frozen=True)
class _ProfileFit:
    history: Series
    params: ProfileParams
    season: int
    profile: np.ndarray  # by phase, phase 0 = the sample right after the history
    shift: float
    deviations: np.ndarray

    def forecast(self, horizon: int) -> Forecast:
        start, h = _times(self.history, horizon)
        point = np.resize(self.profile, h) + self.shift
        tail = (1.0 - self.params.level) / 2.0
        lo, hi = np.quantile(self.deviations, [tail, 1.0 - tail])
        point, lower, upper = _rates(point, point + lo, point + hi)
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def _fit_profile(history: Series, params: ProfileParams) -> _ProfileFit:
    season = season_for(history, params.season_length)
    if season is None:
        raise ModelError(
            f"seasonal-profile: {history.values.size} samples of {history.step_s:g} s hold "
            "fewer than 2 days; give season_length"
        )
    k = min(params.seasons, history.values.size // season)
    block = history.values[-k * season :].reshape(k, season)  # rows: seasons, columns: phases
    stat = np.median if params.statistic == "median" else np.mean
    profile = stat(block, axis=0)
    shift = float(np.median(block[-1] - profile)) if params.level_shift and k > 1 else 0.0
    deviations = (block - profile).ravel()
    return _ProfileFit(history, params, season, profile, shift, deviations)


@dataclass(frozen=True)
class _ProphetFit:
    history: Series
    params: ProphetParams
    model: object

    def forecast(self, horizon: int) -> Forecast:
        start, h = _times(self.history, horizon)
        stamps = pd.to_datetime(start + np.arange(h) * self.history.step_s, unit="s")
        frame = self.model.predict(pd.DataFrame({"ds": stamps}))  # type: ignore[attr-defined]
        point, lower, upper = _rates(frame["yhat"], frame["yhat_lower"], frame["yhat_upper"])
        return Forecast(point, lower, upper, self.params.level, self.history.step_s, start)


def _fit_prophet(history: Series, params: ProphetParams) -> _ProphetFit:
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


@dataclass(frozen=True)
class _StatsForecastFit:
    history: Series
    level: float
    model: object  # a fitted statsforecast model

    def forecast(self, horizon: int) -> Forecast:
        start, h = _times(self.history, horizon)
        pct = round(self.level * 100, 6)
        out = self.model.predict(h=h, level=[pct])  # type: ignore[attr-defined]
        lo, hi = (next(v for k, v in out.items() if k.startswith(side)) for side in ("lo-", "hi-"))
        point, lower, upper = _rates(out["mean"], lo, hi)
        return Forecast(point, lower, upper, self.level, self.history.step_s, start)


def _statsforecast(name: str, needs_season: bool, default_fit: int | None = None):
    """The fit function of statsforecast's model `name` (its absence named with the extra)."""

    def fit(history: Series, params: StatsForecastParams) -> _StatsForecastFit:
        models = require("statsforecast.models", extra="forecast", feature=f"the {name} forecaster")
        season = season_for(history, params.season_length)
        if needs_season and season is None:
            raise ModelError(
                f"{name}: {history.values.size} samples of {history.step_s:g} s hold fewer "
                "than 2 days; give season_length"
            )
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
        return _StatsForecastFit(history, params.level, model)

    return fit


def _has(module: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class ForecasterSpec:
    """A registered forecaster: its parameters' schema, how to fit it, whether it can run here."""

    name: str
    description: str
    params: type[Params]
    fit: Callable[[Series, Params], Fitted]
    available: Callable[[], bool]


def _always() -> bool:
    return True


BASELINES = ("naive", "seasonal-naive")  # always backtested: every skill is against naive

FORECASTERS: Registry[ForecasterSpec] = Registry("forecast model")
for _spec in (
    ForecasterSpec(
        "naive",
        "baseline: the last sample repeated; interval ±z·σ·√h from the one-step differences",
        NaiveParams,
        _fit_naive,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "seasonal-naive",
        "baseline: the same phase of the last season (one day); interval from the seasonal "
        "differences, widening per season ahead",
        SeasonalNaiveParams,
        _fit_seasonal_naive,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "summary",
        "Caladrius' simple model: median (or mean) of a window, interval from its quantiles",
        SummaryParams,
        lambda h, p: _SummaryFit(h, p),  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "holt",
        "Holt's linear trend with fixed α, β (no fitting: fast enough for a control loop); "
        "ETS(A,A,N) interval from the one-step errors",
        HoltParams,
        _fit_holt,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "holt-winters",
        "ETS(A,N/A,A) Holt-Winters with a daily season (statsmodels), analytic intervals",
        SeasonalParams,
        _fit_seasonal,  # type: ignore[arg-type]
        _has("statsmodels"),
    ),
    ForecasterSpec(
        "auto-ets",
        "statsforecast AutoETS: the ETS model (error, trend, season) with the lowest AICc; a "
        "daily season only up to 24 samples (hourly), as R's ets (optional extra: forecast)",
        StatsForecastParams,
        _statsforecast("AutoETS", needs_season=False),  # type: ignore[arg-type]
        _has("statsforecast"),
    ),
    ForecasterSpec(
        "auto-arima",
        "statsforecast AutoARIMA: stepwise search of (seasonal) ARIMA orders by AICc, on the "
        "last 500 samples by default (slow: seconds a fit)",
        StatsForecastParams,
        _statsforecast("AutoARIMA", needs_season=False, default_fit=500),  # type: ignore[arg-type]
        _has("statsforecast"),
    ),
    ForecasterSpec(
        "mstl",
        "statsforecast MSTL: STL decomposition with a daily season (up to 300 samples: 5-min "
        "steps), its trend and remainder by AutoETS",
        StatsForecastParams,
        _statsforecast("MSTL", needs_season=True),  # type: ignore[arg-type]
        _has("statsforecast"),
    ),
    ForecasterSpec(
        "seasonal-profile",
        "per-phase median of the last seasons (default 7 days), shifted to the last "
        "season's level; interval from the per-phase deviations",
        ProfileParams,
        _fit_profile,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "prophet",
        "Prophet additive trend + seasonality; interval from its yhat_lower/yhat_upper "
        "(optional extra: pip install elastream[prophet])",
        ProphetParams,
        _fit_prophet,  # type: ignore[arg-type]
        _has("prophet"),
    ),
):
    FORECASTERS.register(_spec.name, _spec)


def get_forecaster(name: str) -> ForecasterSpec:
    if name not in FORECASTERS:
        raise ModelError(f"unknown forecast model {name!r}; known: {', '.join(FORECASTERS)}")
    spec = FORECASTERS.get(name)
    if not spec.available():
        extra = "prophet" if name == "prophet" else "forecast"
        raise ModelError(
            f"forecast model {name!r} is not installed here: pip install 'elastream[{extra}]'"
        )
    return spec


class FitCache:
    """Fitted models by (history digest, model, parameters); least recently used evicted."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str, str], Fitted] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def fitted(self, model: str) -> list[Fitted]:
        """The cached fits of `model`, oldest first (e.g. the choices `auto` made)."""
        return [f for (_, name, _), f in self._items.items() if name == model]

    def fit(self, history: Series, model: str, params: dict | None = None) -> Fitted:
        spec = get_forecaster(model)
        checked = spec.params(**(params or {}))
        key = (history.digest(), model, json.dumps(checked.model_dump(), sort_keys=True))
        if key in self._items:
            self.hits += 1
            self._items.move_to_end(key)
            return self._items[key]
        self.misses += 1
        fitted = spec.fit(history, checked)
        self._items[key] = fitted
        if len(self._items) > self._size:
            self._items.popitem(last=False)
        return fitted


def forecast(
    history: Series, model: str, horizon: int, params: dict | None = None,
    cache: FitCache | None = None,
) -> Forecast:  # fmt: skip
    """Fit (or reuse) `model` on `history` and forecast `horizon` steps."""
    return (cache or FitCache(size=1)).fit(history, model, params).forecast(horizon)
