"""`elastream forecast TRACE`: rolling-origin backtest of the traffic forecasters on a trace."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from elastream.base.extras import installed, require
from elastream.cli._renamed import add_old_option
from elastream.prediction.backtest import BacktestResult, backtest, origins_for, skill
from elastream.prediction.forecasting import BASELINES, FORECASTERS, FitCache
from elastream.prediction.graph import ModelError
from elastream.prediction.series import Series
from elastream.report.progress import ProgressBar, add_quiet

DAY_S, HOUR_S = 86_400.0, 3_600.0
MAX_HISTORY_S = 14 * DAY_S  # the default fit window: 2/3 of the trace, at most two weeks
HORIZON_STEPS = 12  # the default horizon: 1 h or 12 steps, at most a tenth of the trace


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Rolling-origin backtest: at each origin fit on the previous --fit-window "
        "seconds and forecast --horizon seconds; prints MASE, the skill against the naive "
        "forecast (1 - MASE/MASE_naive), sMAPE and the coverage of the 90% interval per model "
        "and plots the forecasts. The naive and seasonal-naive baselines are always included."
    )
    parser.add_argument("trace", help="trace file (path or name under --data-dir)")
    parser.add_argument(
        "--model",
        action="append",
        help="forecaster (repeatable; default: every installed one of "
        f"{', '.join(FORECASTERS)}; {' and '.join(BASELINES)} are always added)",
    )
    parser.add_argument(
        "--fit-window",
        type=float,
        help="fit window, seconds (default: two thirds of the resampled trace, at most 14 days)",
    )
    add_old_option(parser, "--history", "--fit-window", "fit_window", type=float)
    parser.add_argument(
        "--horizon",
        type=float,
        help="forecast horizon, seconds (default: 1 hour or 12 steps of the resampled trace, "
        "whichever is longer, at most a tenth of the trace)",
    )
    parser.add_argument(
        "--step", type=float, help="resample to this step, seconds (default: the trace's, ≥ 60)"
    )
    parser.add_argument("--origins", type=int, default=10, help="number of forecast origins")
    parser.add_argument(
        "--out", type=Path, help="output directory: backtest.json and backtest.png (default: none)"
    )
    parser.add_argument(
        "--plot",
        type=Path,
        help="PNG to write (default: DIR/backtest.png, else forecast-NAME.png; the default is "
        "skipped with a note where the plots extra is not installed)",
    )
    parser.add_argument("--no-plot", action="store_true", help="print the scores only")
    parser.add_argument("--data-dir", type=Path, help="folder of real traces (../shared/data)")
    add_quiet(parser)
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


def default_windows(series: Series) -> tuple[float, float]:
    """(history s, horizon s) from the trace's step and length, as --help states."""
    step, length = series.step_s, series.values.size * series.step_s
    horizon = min(max(HOUR_S, HORIZON_STEPS * step), length / 10)
    horizon = max(1, int(horizon // step)) * step
    history = max(2, int(min(MAX_HISTORY_S, 2 * length / 3) // step)) * step
    return history, horizon


def backtest_models(requested: list[str] | None) -> list[str]:
    """The baselines first, then the requested models (default: every installed one)."""
    chosen = requested or [n for n in FORECASTERS if FORECASTERS.get(n).available()]
    unknown = [m for m in chosen if m not in FORECASTERS]
    if unknown:
        raise ValueError(f"--model: unknown {', '.join(unknown)}; known: {', '.join(FORECASTERS)}")
    return [*BASELINES, *(m for m in dict.fromkeys(chosen) if m not in BASELINES)]


def run_backtests(
    series: Series,
    models: list[str] | None,
    history_s: float,
    horizon_s: float,
    origins: int,
    cache: FitCache | None = None,
    starting: Callable[[str], None] | None = None,
) -> tuple[dict[str, BacktestResult], dict[str, str]]:
    """Backtest the baselines and each model (`auto` scored on the same horizon it selects
    for); a model that cannot run on this series is reported, not fatal. `starting` is told each
    model before its backtest."""
    history = round(history_s / series.step_s)
    horizon = max(1, round(horizon_s / series.step_s))
    origins_for(series.values.size, history, horizon, origins)  # a bad window fails for all
    cache = cache or FitCache()
    results, skipped = {}, {}
    for m in backtest_models(models):
        params = {"level": 0.9, **({"horizon": horizon} if m == "auto" else {})}
        if starting is not None:
            starting(m)
        try:
            results[m] = backtest(series, m, history, horizon, origins, params, cache)
        except ModelError as exc:
            skipped[m] = str(exc)
    return results, skipped


def skills(results: dict[str, BacktestResult]) -> dict[str, float]:
    """Each model's skill against the naive forecast (run_backtests always includes it)."""
    if "naive" not in results:
        raise ValueError("the naive baseline could not be backtested: no skill to report")
    naive = results["naive"].mase
    return {name: skill(r.mase, naive) for name, r in results.items()}


def scores(results: dict[str, BacktestResult]) -> dict[str, dict[str, float]]:
    """The content of backtest.json: {model: {"mase", "skill", "smape", "coverage90"}}."""
    skill_of = skills(results)
    return {
        name: {
            "mase": r.mase,
            "skill": skill_of[name],
            "smape": r.smape,
            "coverage90": r.coverage90,
        }
        for name, r in results.items()
    }


def plot(series: Series, results: dict[str, BacktestResult], title: str, out: Path) -> None:
    matplotlib = require("matplotlib", extra="plots", feature="the forecasts' plot (or --no-plot)")

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
    models = backtest_models(args.model)  # an unknown name fails before the trace is read
    series, name = load_series(args.trace, args.data_dir, args.step)
    history, horizon = default_windows(series)
    history, horizon = args.fit_window or history, args.horizon or horizon
    started: list[str] = []
    with ProgressBar(len(models), "backtests", quiet=args.quiet) as bar:

        def starting(model: str) -> None:
            bar.update(len(started), model)
            started.append(model)

        results, skipped = run_backtests(
            series, models, history, horizon, args.origins, starting=starting
        )
        bar.update(len(models), "done")
    for model, reason in skipped.items():
        print(f"{model}: skipped: {reason}", file=sys.stderr)
    if not results:
        raise ValueError("no model could be backtested on this trace")
    print(f"{name}: {series.values.size} samples of {series.step_s:g} s, "
          f"history {history:.0f} s, horizon {horizon:.0f} s, "
          f"{len(next(iter(results.values())).origins)} origins")  # fmt: skip
    skill_of = skills(results)
    print(f"{'model':<16} {'MASE':>8} {'skill':>7} {'sMAPE %':>8} {'cov90':>6}")
    for model, r in results.items():
        print(
            f"{model:<16} {r.mase:8.3f} {skill_of[model]:7.3f} {r.smape:8.2f} {r.coverage90:6.3f}"
        )
    default = args.out / "backtest.png" if args.out else Path(f"forecast-{Path(name).stem}.png")
    png = None if args.no_plot else (args.plot or default)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "backtest.json").write_text(json.dumps(scores(results), indent=2) + "\n")
        print(f"wrote {args.out / 'backtest.json'}")
    if png and args.plot is None and not installed("matplotlib"):
        print(
            "plot: skipped, matplotlib is not installed (pip install 'elastream[plots]'; "
            "--no-plot says so without this note)",
            file=sys.stderr,
        )
    elif png:
        plot(series, results, name, png)
        print(f"plot: {png}")
    return 0
