"""`elastream forecast TRACE`: rolling-origin backtest of the traffic forecasters on a trace."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from elastream.modeling.backtest import BacktestResult, backtest, origins_for
from elastream.modeling.forecasting import FORECASTERS, FitCache, Series
from elastream.modeling.graph import ModelError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "forecast",
        help="backtest traffic forecasters on a trace (MASE, sMAPE, 90%% coverage)",
        description="Rolling-origin backtest: at each origin fit on the previous --history "
        "seconds and forecast --horizon seconds; prints MASE, sMAPE and the coverage of the "
        "90%% interval per model and plots the forecasts.",
    )
    parser.add_argument("trace", help="trace file (path or name under --data-dir)")
    parser.add_argument(
        "--model",
        action="append",
        help=f"forecaster (repeatable; default: every installed one of {', '.join(FORECASTERS)})",
    )
    parser.add_argument("--history", type=float, required=True, help="fit window, seconds")
    parser.add_argument("--horizon", type=float, required=True, help="forecast horizon, seconds")
    parser.add_argument(
        "--step", type=float, help="resample to this step, seconds (default: the trace's, ≥ 60)"
    )
    parser.add_argument("--origins", type=int, default=10, help="number of forecast origins")
    parser.add_argument("--out", type=Path, help="write backtest.json and backtest.png here")
    parser.add_argument(
        "--plot", type=Path, help="PNG to write (default: DIR/backtest.png, else forecast-NAME.png)"
    )
    parser.add_argument("--no-plot", action="store_true", help="print the scores only")
    parser.add_argument("--data-dir", type=Path, help="folder of real traces (../shared/data)")
    parser.set_defaults(handler=handle)


def resample(rates: np.ndarray, step_s: float, target_s: float) -> tuple[np.ndarray, float]:
    """Mean rate over bins of `target_s` (a whole number of samples); a partial last bin dropped."""
    factor = max(1, round(target_s / step_s))
    usable = rates.size // factor * factor
    if usable == 0:
        raise ValueError(f"trace shorter than one {target_s:g} s step")
    return rates[:usable].reshape(-1, factor).mean(axis=1), step_s * factor


def load_series(spec: str, data_dir: Path | None, step: float | None) -> tuple[Series, str]:
    from elastream.workloads import resolve_trace_info

    trace, _ = resolve_trace_info(spec, data_dir)
    values, step_s = resample(trace.rates, trace.step_s, step or max(trace.step_s, 60.0))
    return Series(values, step_s), trace.name


def run_backtests(
    series: Series, models: list[str], history_s: float, horizon_s: float, origins: int
) -> tuple[dict[str, BacktestResult], dict[str, str]]:
    """Backtest each model; a model that cannot run on this series is reported, not fatal."""
    history = round(history_s / series.step_s)
    horizon = max(1, round(horizon_s / series.step_s))
    origins_for(series.values.size, history, horizon, origins)  # a bad window fails for all
    cache = FitCache()
    results, skipped = {}, {}
    for m in models:
        try:
            results[m] = backtest(series, m, history, horizon, origins, {"level": 0.9}, cache)
        except ModelError as exc:
            skipped[m] = str(exc)
    return results, skipped


def scores(results: dict[str, BacktestResult]) -> dict[str, dict[str, float]]:
    """The content of backtest.json: {model: {"mase", "smape", "coverage90"}}."""
    return {
        name: {"mase": r.mase, "smape": r.smape, "coverage90": r.coverage90}
        for name, r in results.items()
    }


def plot(series: Series, results: dict[str, BacktestResult], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(11, 3 * len(results)), squeeze=False)
    hours = np.arange(series.values.size) * series.step_s / 3600.0
    for ax, (name, res) in zip(axes[:, 0], results.items(), strict=True):
        ax.plot(hours, series.values, color="0.6", lw=0.7, label="actual")
        for k, fc in enumerate(res.forecasts):
            t = (fc.start_s + np.arange(fc.point.size) * fc.step_s) / 3600.0
            ax.fill_between(t, fc.lower, fc.upper, color="tab:blue", alpha=0.25, lw=0,
                            label="90% interval" if k == 0 else None)  # fmt: skip
            ax.plot(t, fc.point, color="tab:red", lw=1, label="forecast" if k == 0 else None)
        ax.set_title(
            f"{title}: {name}  MASE {res.mase:.2f}  sMAPE {res.smape:.1f}%  "
            f"cov90 {res.coverage90:.2f}"
        )
        ax.set_xlabel("hours")
        ax.set_ylabel("events/s")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)


def handle(args: argparse.Namespace) -> int:
    models = args.model or [n for n, s in FORECASTERS.items() if s.available()]
    unknown = [m for m in models if m not in FORECASTERS]
    if unknown:
        raise ValueError(f"--model: unknown {', '.join(unknown)}; known: {', '.join(FORECASTERS)}")
    series, name = load_series(args.trace, args.data_dir, args.step)
    results, skipped = run_backtests(series, models, args.history, args.horizon, args.origins)
    for model, reason in skipped.items():
        print(f"{model}: skipped: {reason}", file=sys.stderr)
    if not results:
        raise ValueError("no model could be backtested on this trace")
    print(f"{name}: {series.values.size} samples of {series.step_s:g} s, "
          f"{len(next(iter(results.values())).origins)} origins")  # fmt: skip
    print(f"{'model':<16} {'MASE':>8} {'sMAPE %':>8} {'cov90':>6}")
    for model, r in results.items():
        print(f"{model:<16} {r.mase:8.3f} {r.smape:8.2f} {r.coverage90:6.3f}")
    default = args.out / "backtest.png" if args.out else Path(f"forecast-{Path(name).stem}.png")
    png = None if args.no_plot else (args.plot or default)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "backtest.json").write_text(json.dumps(scores(results), indent=2) + "\n")
        print(f"wrote {args.out / 'backtest.json'}")
    if png:
        plot(series, results, name, png)
        print(f"plot: {png}")
    return 0
