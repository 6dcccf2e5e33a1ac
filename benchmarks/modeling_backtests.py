"""Backtest every forecaster on every real trace of ../shared/data/traces (docs/modeling.md).

Usage: python benchmarks/modeling_backtests.py [--data-dir ../shared/data] [--out DIR]
Prints the Markdown table of docs/modeling.md (the naive baselines first, each model's skill
against naive, the best MASE per trace in bold); writes DIR/<trace>/backtest.json and .png.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from elastream.cli.forecast import (
    backtest_models,
    default_windows,
    load_series,
    plot,
    run_backtests,
    scores,
)
from elastream.report.progress import add_quiet, steps

DAY, HOUR = 86_400.0, 3_600.0
# trace file: (resampling step s, history s, horizon s); any other trace of the folder is
# backtested at its own step (at least 1 min) with the CLI's default windows
SETTINGS = {
    "twitter_sample_per_second_3days.txt": (60.0, 2 * DAY, HOUR),
    "nab_twitter_volume_aapl_5min.csv": (300.0, 7 * DAY, HOUR),
    "nab_twitter_volume_amzn_5min.csv": (300.0, 7 * DAY, HOUR),
    "nab_elb_request_count_5min.csv": (300.0, 7 * DAY, HOUR),
    "nab_nyc_taxi_passengers_30min.csv": (1800.0, 14 * DAY, DAY),
    "covid19_tweets_per_hour.csv": (3600.0, 14 * DAY, DAY),
    "azure_llm_inference_code_arrivals.csv": (60.0, 1800.0, 300.0),
}


def span(seconds: float) -> str:
    for unit, size in (("d", DAY), ("h", HOUR), ("min", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


def _is_trace(name: str) -> bool:
    return name.endswith((".csv", ".txt")) and not name.startswith("LICENSE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("runs/modeling-backtests"))
    parser.add_argument("--origins", type=int, default=10)
    add_quiet(parser)
    args = parser.parse_args()
    models = backtest_models(None)
    print("| trace | step | history | horizon | model | MASE | skill | sMAPE % | coverage 90 % |")
    print("|---|---|---|---|---|---|---|---|---|")
    folder = args.data_dir / "traces"
    names = [*SETTINGS, *sorted(p.name for p in folder.glob("*.*") if _is_trace(p.name))]
    for name in steps(dict.fromkeys(names), "backtests", quiet=args.quiet):
        started = time.process_time()
        step_s = SETTINGS[name][0] if name in SETTINGS else None
        series, title = load_series(str(folder / name), None, step_s)
        step, history, horizon = SETTINGS.get(name) or (series.step_s, *default_windows(series))
        results, skipped = run_backtests(series, models, history, horizon, args.origins)
        out = args.out / Path(name).stem
        out.mkdir(parents=True, exist_ok=True)
        table = scores(results)
        (out / "backtest.json").write_text(json.dumps(table, indent=2) + "\n")
        plot(series, results, title, out / "backtest.png")
        best = min(table, key=lambda m: table[m]["mase"])
        first = [Path(name).stem, span(step), span(history), span(horizon)]
        for k, model in enumerate(models):
            cells = first if k == 0 else [""] * 4
            if model in table:
                row = table[model]
                mark = "**" if model == best else ""
                cells += [
                    f"{mark}{model}{mark}",
                    f"{mark}{row['mase']:.2f}{mark}",
                    f"{row['skill']:+.2f}",
                    f"{row['smape']:.1f}",
                    f"{row['coverage90']:.2f}",
                ]
            else:
                why = skipped.get(model, "not installed").split(": ", 1)[-1].split(";")[0]
                cells += [model, f"n/a: {why}", "", "", ""]
            print("| " + " | ".join(cells) + " |")
        print(f"<!-- {name}: {time.process_time() - started:.1f} CPU-s -->")


if __name__ == "__main__":
    main()
