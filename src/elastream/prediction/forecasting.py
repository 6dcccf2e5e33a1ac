"""The forecasters by name (Caladrius IV-A): the registry the CLI, the service and the policies
read, and fitting with a cache: fit(history) → forecast(horizon) (the models: `forecasters`)."""

from __future__ import annotations

import importlib.util
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from elastream.base.registry import Registry
from elastream.prediction.forecasters import (
    HoltParams,
    NaiveParams,
    ProfileParams,
    ProphetParams,
    SeasonalNaiveParams,
    SeasonalParams,
    StatsForecastParams,
    SummaryParams,
    fit_holt,
    fit_naive,
    fit_profile,
    fit_prophet,
    fit_seasonal,
    fit_seasonal_naive,
    fit_summary,
    statsforecast_fit,
)
from elastream.prediction.graph import ModelError
from elastream.prediction.series import Fitted, Forecast, Params, Series


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
        fit_naive,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "seasonal-naive",
        "baseline: the same phase of the last season (one day); interval from the seasonal "
        "differences, widening per season ahead",
        SeasonalNaiveParams,
        fit_seasonal_naive,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "summary",
        "Caladrius' simple model: median (or mean) of a window, interval from its quantiles",
        SummaryParams,
        fit_summary,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "holt",
        "Holt's linear trend with fixed α, β (no fitting: fast enough for a control loop); "
        "ETS(A,A,N) interval from the one-step errors",
        HoltParams,
        fit_holt,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "holt-winters",
        "ETS(A,N/A,A) Holt-Winters with a daily season (statsmodels), analytic intervals",
        SeasonalParams,
        fit_seasonal,  # type: ignore[arg-type]
        _has("statsmodels"),
    ),
    ForecasterSpec(
        "auto-ets",
        "statsforecast AutoETS: the ETS model (error, trend, season) with the lowest AICc; a "
        "daily season only up to 24 samples (hourly), as R's ets (optional extra: forecast)",
        StatsForecastParams,
        statsforecast_fit("AutoETS", needs_season=False),  # type: ignore[arg-type]
        _has("statsforecast"),
    ),
    ForecasterSpec(
        "auto-arima",
        "statsforecast AutoARIMA: stepwise search of (seasonal) ARIMA orders by AICc, on the "
        "last 500 samples by default (slow: seconds a fit)",
        StatsForecastParams,
        statsforecast_fit("AutoARIMA", needs_season=False, default_fit=500),  # type: ignore[arg-type]
        _has("statsforecast"),
    ),
    ForecasterSpec(
        "mstl",
        "statsforecast MSTL: STL decomposition with a daily season (up to 300 samples: 5-min "
        "steps), its trend and remainder by AutoETS",
        StatsForecastParams,
        statsforecast_fit("MSTL", needs_season=True),  # type: ignore[arg-type]
        _has("statsforecast"),
    ),
    ForecasterSpec(
        "seasonal-profile",
        "per-phase median of the last seasons (default 7 days), shifted to the last "
        "season's level; interval from the per-phase deviations",
        ProfileParams,
        fit_profile,  # type: ignore[arg-type]
        _always,
    ),
    ForecasterSpec(
        "prophet",
        "Prophet additive trend + seasonality; interval from its yhat_lower/yhat_upper "
        "(optional extra: pip install elastream[prophet])",
        ProphetParams,
        fit_prophet,  # type: ignore[arg-type]
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
