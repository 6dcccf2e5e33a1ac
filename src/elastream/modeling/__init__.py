"""Pure performance models: traffic forecasts, Caladrius throughput (Eq. 1–14), CPU, latency."""

from elastream.modeling.backtest import BacktestResult, backtest
from elastream.modeling.forecasting import FORECASTERS, FitCache, Forecast, Series, forecast
from elastream.modeling.graph import Edge, Grouping, MeasuredPoint, ModelError, PipelineGraph
from elastream.modeling.performance import (
    ComponentModel,
    Host,
    Prediction,
    fit_component,
    fit_pipeline,
    predict,
)
from elastream.modeling.throughput import InstanceFit, fit_instance

__all__ = [
    "FORECASTERS",
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
    "Series",
    "backtest",
    "fit_component",
    "fit_instance",
    "fit_pipeline",
    "forecast",
    "predict",
]
