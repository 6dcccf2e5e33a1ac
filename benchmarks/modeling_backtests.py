"""Backtest the forecasters, `auto` among them, on every real trace (docs/results.md's table).

Usage: python benchmarks/modeling_backtests.py [--data-dir ../shared/data] [--origins 6]
    [--doc docs/results.md]
Each trace at two fit windows: the default one and one a user would pick (the last few days,
hours for minute-level traces). Prints the Markdown table (MASE per model, auto's picks, whether
auto's MASE is at most naive's) and writes it into the doc between its two markers.
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from pathlib import Path

from elastream.cli.forecast import load_series, run_backtests
from elastream.prediction.forecasting import FitCache
from elastream.report.progress import add_quiet, steps

DAY, HOUR, MIN = 86_400.0, 3_600.0, 60.0
MODELS = [
    "holt",
    "holt-winters",
    "auto-ets",
    "mstl",
    "seasonal-profile",
    "summary",
    "auto",
]
COLUMNS = ["naive", "seasonal-naive", *MODELS[:-1], "auto"]
# trace file: resampling step s, then (fit window s, horizon s) for the default and the user window
TRACES = {
    "twitter_sample_per_second_3days.txt": (60.0, (2 * DAY, HOUR), (6 * HOUR, HOUR)),
    "nab_twitter_volume_aapl_5min.csv": (300.0, (7 * DAY, HOUR), (3 * DAY, HOUR)),
    "nab_twitter_volume_amzn_5min.csv": (300.0, (7 * DAY, HOUR), (3 * DAY, HOUR)),
    "nab_elb_request_count_5min.csv": (300.0, (7 * DAY, HOUR), (3 * DAY, HOUR)),
    "nab_nyc_taxi_passengers_30min.csv": (1800.0, (14 * DAY, DAY), (3 * DAY, DAY)),
    "covid19_tweets_per_hour.csv": (3600.0, (14 * DAY, DAY), (3 * DAY, DAY)),
    "azure_llm_inference_code_arrivals.csv": (60.0, (30 * MIN, 5 * MIN), (10 * MIN, 5 * MIN)),
}
START, END = "<!-- backtests:start -->", "<!-- backtests:end -->"


def span(seconds: float) -> str:
    for unit, size in (("d", DAY), ("h", HOUR), ("min", MIN)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


def row(name: str, step: float, window: tuple[float, float], origins: int, data: Path) -> str:
    """One table row: every model's MASE on the same origins, auto's picks, auto <= naive."""
    series, _ = load_series(str(data / "traces" / name), None, step)
    cache = FitCache(size=4096)
    results, _ = run_backtests(series, ["naive", *MODELS], *window, origins, cache)
    picks = collections.Counter(f.selection.chosen for f in cache.fitted("auto"))
    cells = []
    for model in COLUMNS:
        if model in results:
            cells.append(f"{results[model].mase:.3f}")
        else:
            cells.append("n/a")
    verdict = "yes" if results["auto"].mase <= results["naive"].mase else "**no**"
    chosen = ", ".join(f"{m} {k}" for m, k in picks.most_common())
    return "| " + " | ".join([Path(name).stem, span(step), *map(span, window), *cells,
                               chosen, verdict]) + " |"  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--origins", type=int, default=6)
    parser.add_argument("--doc", type=Path, default=Path("docs/results.md"))
    add_quiet(parser)
    args = parser.parse_args()
    load, started, wall = os.getloadavg()[0], time.process_time(), time.perf_counter()
    head = ["trace", "step", "fit window", "horizon", *COLUMNS, "auto's picks", "auto ≤ naive"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in steps(TRACES, "traces", quiet=args.quiet):
        step, *windows = TRACES[name]
        for window in windows:
            lines.append(row(name, step, window, args.origins, args.data_dir))
            print(lines[-1], flush=True)
    lines.append("")
    lines.append(
        f"{args.origins} origins per row; {time.process_time() - started:.0f} CPU-s in the "
        f"script's process, {time.perf_counter() - wall:.0f} s wall, load average {load:.1f} "
        "at the start (MASE does not depend on the load; the times do)."
    )
    table = "\n".join(lines)
    text = args.doc.read_text(encoding="utf-8")
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    args.doc.write_text(f"{before}{START}\n{table}\n{END}{after}", encoding="utf-8")
    print(f"wrote the table into {args.doc}")


if __name__ == "__main__":
    main()
