"""Pure performance models: traffic forecasts, Caladrius throughput (Eq. 1–14), CPU, latency."""

from elastream.prediction.auto import AutoParams, Selection, select  # registers `auto`
from elastream.prediction.backtest import BacktestResult, backtest
from elastream.prediction.forecasting import FORECASTERS, FitCache, forecast
from elastream.prediction.graph import Edge, Grouping, MeasuredPoint, ModelError, PipelineGraph
from elastream.prediction.performance import (
    ComponentModel,
    Host,
    Prediction,
    fit_component,
    fit_pipeline,
    predict,
)
from elastream.prediction.series import Forecast, Series
from elastream.prediction.throughput import InstanceFit, fit_instance

__all__ = [
    "FORECASTERS",
    "AutoParams",
    "BacktestResult",
    "ComponentModel",
    "Edge",
    "FitCache",
    "Forecast",
    "Grouping",
    "Host",
    "InstanceFit",
    "MeasuredPoint",
    "ModelError",
    "PipelineGraph",
    "Prediction",
    "Selection",
    "Series",
    "backtest",
    "fit_component",
    "fit_instance",
    "fit_pipeline",
    "forecast",
    "predict",
    "select",
]
