"""Caladrius Section V on our Spark runtime: word count on *The Great Gatsby*.

Runs the word count (`elastream/examples/wordcount.yaml`) on Spark with the splitter at
parallelism 3, 2 and 4 (counter at 4) under a source rate that rises past the splitter's
saturation point, recording the metrics history of each run. Then, as in the paper: fits the
splitter at p = 3, predicts its saturation throughput (ST) at p = 2 and 4 and compares with the
curve fitted on those runs (V-C); predicts the topology's output throughput (the counter's
processing rate, Eq. 12) at splitter 2 / counter 4 and compares with the measured plateau (V-D);
compares the splitter's I/O coefficient α with the mean words per line counted from the text.

    .venv/bin/python benchmarks/caladrius_gatsby.py [--out runs/gatsby] [--reuse]

`--reuse` refits from the histories of an earlier invocation without running Spark again.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml

from elastream.history import HistoryRow, HistoryStore
from elastream.model.pipeline import pipeline_from_dict
from elastream.modeling.from_pipeline import graph_of
from elastream.modeling.graph import Grouping, MeasuredPoint
from elastream.modeling.performance import fit_pipeline, predict
from elastream.modeling.throughput import fit_instance
from elastream.modeling.validation import relative_error, validate

APP = Path(__file__).parents[1] / "src" / "elastream" / "examples" / "wordcount.yaml"
FIT_P, TEST_PS, COUNTER_P = 3, (2, 4), 4
TD_S, STEP_S, RATES = 4, 16, tuple(range(6, 73, 6))  # sentences/s, each held STEP_S seconds
PAPER = {"st_error_2": 0.029, "st_error_4": 0.025, "cp_error": 0.028}


def pipeline_at(splitter: int) -> dict:
    spec = yaml.safe_load(APP.read_text())
    for op in spec["operators"]:
        p = splitter if op["name"] == "splitter" else COUNTER_P
        op["replicas"] = {"min": p, "max": p}
    return spec


def run(out: Path, splitter: int) -> Path:
    """One Spark run at splitter parallelism `splitter`; returns its history database."""
    folder = out / f"p{splitter}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pipeline.yaml").write_text(yaml.safe_dump(pipeline_at(splitter)))
    trace = folder / "rates.txt"  # `lines` format: one rate per second
    trace.write_text("".join(f"{rate}\n" * STEP_S for rate in RATES))
    settings = folder / "settings.yaml"
    settings.write_text(json.dumps({"drain_s": 10, "q_size": None, "t_out": None}))
    history = folder / "history.sqlite"
    history.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "elastream.cli", "run", str(folder / "pipeline.yaml"),
        "--policy", "static", "--trace", str(trace), "--td", str(TD_S), "--config", str(settings),
        "--history", str(history), "--out", str(folder / "run"), "--quiet",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"p={splitter} run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return history


def history_rows(history: Path) -> list[HistoryRow]:
    with HistoryStore(history) as store:
        return store.rows()


def steady_points(rows: list[HistoryRow]) -> dict[str, list[MeasuredPoint]]:
    """One point per operator, replica and rate step: the step's intervals averaged, its first
    interval left out (the change of rate), nothing after the trace (the drain) — the paper's
    steady-state measurements, from a micro-batch runtime whose single intervals alias batches."""
    steps: dict[tuple[str, int, int], list[HistoryRow]] = defaultdict(list)
    for row in filter(steady, rows):
        steps[(row.operator, row.replica, int(row.t // STEP_S))].append(row)
    grouped: dict[str, list[MeasuredPoint]] = defaultdict(list)
    for (operator, replica, _), group in sorted(steps.items()):
        streams = {k for row in group for k in row.output_rates}
        grouped[operator].append(
            MeasuredPoint(
                parallelism=group[0].parallelism,
                source_rate=float(np.mean([row.source_rate for row in group])),
                input_rate=float(np.mean([row.input_rate for row in group])),
                output_rates={
                    k: float(np.mean([row.output_rates.get(k, 0.0) for row in group]))
                    for k in streams
                },
                replica=replica,
            )
        )
    return grouped


def steady(row: HistoryRow) -> bool:
    """An interval inside a rate step of the trace, not the step's first one."""
    step = int(row.t // STEP_S)
    return step < len(RATES) and row.t - step * STEP_S >= TD_S - 1e-6


def counter_plateau(rows: list[HistoryRow], splitter_sp: float) -> float:
    """The counter's measured processing rate (Σ replicas) over the steady intervals in which
    the splitter was clearly saturated (offered ≥ 1.2 × its saturation point)."""
    processed: dict[float, float] = defaultdict(float)
    offered: dict[float, float] = defaultdict(float)
    for row in filter(steady, rows):
        if row.operator == "counter":
            processed[row.t] += row.input_rate
        elif row.operator == "splitter":
            offered[row.t] += row.source_rate
    plateau = [processed[t] for t in processed if offered[t] >= 1.2 * splitter_sp]
    if not plateau:
        raise SystemExit("the splitter never saturated clearly: raise RATES")
    return float(np.mean(plateau))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/gatsby"))
    parser.add_argument("--reuse", action="store_true", help="refit earlier runs' histories")
    args = parser.parse_args()
    histories = {}
    for p in (FIT_P, *TEST_PS):
        target = args.out / f"p{p}" / "history.sqlite"
        histories[p] = target if args.reuse and target.exists() else run(args.out, p)
    rows = {p: history_rows(h) for p, h in histories.items()}
    measured = {p: steady_points(r) for p, r in rows.items()}

    from elastream.examples.wordcount import words_per_sentence

    fit3 = fit_instance(measured[FIT_P]["splitter"], what="splitter at p=3")
    counted = words_per_sentence()
    print(f"splitter at p={FIT_P}: α = {fit3.alpha:.3f} words per sentence, SP = {fit3.sp:.1f} "
          f"sentences/s and ST = {fit3.st:.1f} words/s per replica")  # fmt: skip
    print(f"words per line counted from the text: {counted:.3f}; "
          f"α error {relative_error(fit3.alpha, counted):.1%}")  # fmt: skip
    print()
    print("| prediction | paper error | ours: predicted | observed | error |")
    print("|---|---|---|---|---|")
    fit_points = measured[FIT_P]["splitter"]
    for p in TEST_PS:
        row = validate("splitter", Grouping.LOAD_BALANCING, fit_points, measured[p]["splitter"])
        paper = PAPER[f"st_error_{p}"]
        print(f"| splitter ST at p={p} (words/s) | {paper:.1%} | {row.predicted_st:,.1f} | "
              f"{row.observed_st:,.1f} | {row.st_error:.1%} |")  # fmt: skip

    pipeline = pipeline_from_dict(pipeline_at(2))
    graph = graph_of(pipeline)
    models = fit_pipeline(graph, measured[FIT_P])
    top = float(max(RATES))
    prediction = predict(graph, models, {"splitter": 2, "counter": COUNTER_P}, top)
    observed_sp = fit_instance(measured[2]["splitter"], what="splitter at p=2").sp * 2
    observed = counter_plateau(rows[2], observed_sp)
    error = relative_error(prediction.critical_path_output, observed)
    print(f"| topology output at splitter 2 / counter {COUNTER_P} (words/s) | "
          f"{PAPER['cp_error']:.1%} | {prediction.critical_path_output:,.1f} | {observed:,.1f} | "
          f"{error:.1%} |")  # fmt: skip


if __name__ == "__main__":
    main()
