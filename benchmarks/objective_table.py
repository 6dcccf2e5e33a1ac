"""The latency-objective comparison of docs/results.md: every policy of benchmarks/objective.yaml
on every trace, judged at p99 <= 1 s and <= 5 s, against the cheapest static count that meets it.

Every run is judged at both levels (one run each, two tallies); the objective policy runs once
per level (`objective-1s`, `objective-5s`). For each trace and level the reference is the
cheapest static r (1 … the pools' maximum) meeting the objective in >= 99 % of the intervals
judged; every policy's replica-seconds are given relative to it. Simulator only; no Spark.

    .venv/bin/python benchmarks/objective_table.py --jobs 2 --markdown docs/results.md
    .venv/bin/python benchmarks/objective_table.py --from-results --markdown docs/results.md

`--only SCENARIO` and `--label LABEL` (repeatable) run a subset and print its rows.
"""

from __future__ import annotations

import argparse
import csv
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from elastream.config.files import load_pipeline
from elastream.experiments.bench.runner import SIM_BACKEND, build_config, raw_trace, with_grouping
from elastream.experiments.bench.scenario import RunSpec, load_bench
from elastream.model.objective import Objective, ObjectiveTally
from elastream.model.snapshot import Snapshot
from elastream.report.progress import ProgressBar, add_quiet
from elastream.workloads.resolve import default_data_dir

HERE = Path(__file__).parent
SCENARIOS = HERE / "objective.yaml"
LEVELS = (1.0, 5.0)  # p99 bounds every run is judged at, s
MET = 0.99  # the share of intervals that counts as meeting the objective
TARGET_RATIO = 0.7  # the objective policy's target: at most this × the reference's replica-s
SPLIT = re.compile(r"- name: (\S+)\s+# split: (\w+)")
FIELDS = ["scenario", "label", "replica_s", "p99_ms", "processed", "wall_s"] + [
    f"met_{level:g}s" for level in LEVELS
]


class ReplicaSeconds:
    """A MAPE observer adding up the replica-seconds paid."""

    def __init__(self) -> None:
        self.replica_s = 0.0

    def __call__(self, snapshot: Snapshot, decision: object = None) -> None:
        self.replica_s += sum(snapshot.replicas().values()) * snapshot.interval_s


def run_one(spec: RunSpec) -> dict[str, Any]:
    """One simulated run, judged at every level of LEVELS."""
    start = time.perf_counter()
    config = build_config(spec)
    pipeline = with_grouping(load_pipeline(spec.pipeline), spec.grouping)
    tallies = [ObjectiveTally(Objective(latency_p99_s=level)) for level in LEVELS]
    counter = ReplicaSeconds()
    outcome = SIM_BACKEND.run(
        pipeline, config, raw_trace(spec), dict(spec.sim), [*tallies, counter]
    )
    totals = outcome.result.totals
    row: dict[str, Any] = {
        "scenario": spec.scenario,
        "label": spec.label,
        "replica_s": round(counter.replica_s),
        "p99_ms": totals.latency_ms_p99,
        "processed": round(totals.completed / totals.events_in, 6) if totals.events_in else 1.0,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    for level, tally in zip(LEVELS, tallies, strict=True):
        row[f"met_{level:g}s"] = tally.met_share
    return row


def with_options(spec: RunSpec, options: Mapping[str, Any]) -> RunSpec:
    """The spec with the objective policy's `options` replaced (a variant's run)."""
    if spec.policy != "objective" or not options:
        return spec
    run = dict(spec.run)
    run["policy_options"] = {**run.get("policy_options", {}), **options}
    return replace(spec, run=tuple(run.items()))


def run_all(specs: Sequence[RunSpec], jobs: int, quiet: bool = False) -> list[dict[str, Any]]:
    """Every spec, `jobs` at a time, each row printed as it finishes (under a bar of the runs
    done unless `quiet`)."""
    with (
        ProcessPoolExecutor(max_workers=jobs) as pool,
        ProgressBar(len(specs), "runs", quiet=quiet) as bar,
    ):
        rows = []
        for row in pool.map(run_one, specs):
            print(format_row(row), flush=True)
            rows.append(row)
            bar.advance(1)
    return rows


def format_row(row: Mapping[str, Any]) -> str:
    met = " ".join(f"{level:g}s={share(row, level):.4f}" for level in LEVELS)
    return f"{row['scenario']:10} {row['label']:14} replica-s {row['replica_s']:>9,} {met}"


def share(row: Mapping[str, Any], level: float) -> float:
    value = row[f"met_{level:g}s"]
    return float(value) if value not in (None, "") else 1.0  # nothing judged: nothing missed


def policy_rows(rows: Iterable[Mapping[str, Any]], level: float) -> dict[str, Mapping[str, Any]]:
    """label -> row of the runs that count at `level`: the objective policy's run for that
    level (as `objective`), every other run as it is."""
    out: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        label = str(row["label"])
        if label.startswith("objective-"):
            if label == f"objective-{level:g}s":
                out["objective"] = row
            continue
        out[label] = row
    return out


def reference(runs: Mapping[str, Mapping[str, Any]], level: float) -> str | None:
    """The cheapest static count meeting the objective in >= MET of the intervals."""
    statics = [label for label in runs if label.startswith("static-")]
    meeting = [label for label in statics if share(runs[label], level) >= MET]
    return min(meeting, key=lambda label: float(runs[label]["replica_s"]), default=None)


def markdown(rows: Sequence[Mapping[str, Any]], splits: Mapping[str, str], level: float) -> str:
    """One table for one level: a row per trace, a cell per policy (`cell`)."""
    scenarios = list(dict.fromkeys(str(r["scenario"]) for r in rows))
    by_scenario = {
        s: policy_rows((r for r in rows if r["scenario"] == s), level) for s in scenarios
    }
    labels = list(dict.fromkeys(label for runs in by_scenario.values() for label in runs))
    head = ["trace", "half", "reference (static r)", *labels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in scenarios:
        runs = by_scenario[name]
        ref = reference(runs, level)
        base = float(runs[ref]["replica_s"]) if ref else None
        ref_cell = f"{ref.removeprefix('static-')}: {base:,.0f}" if ref and base else "none meets"
        cells = [cell(runs.get(label), level, base) for label in labels]
        lines.append("| " + " | ".join([name, splits.get(name, ""), ref_cell, *cells]) + " |")
    return "\n".join(lines)


def cell(row: Mapping[str, Any] | None, level: float, base: float | None) -> str:
    """`met share · replica-s · ratio to the reference`, bold when it meets the target."""
    if row is None:
        return ""
    met, paid = share(row, level), float(row["replica_s"])
    ratio = paid / base if base else None
    text = f"{met:.3f} · {paid:,.0f}" + (f" · {ratio:.2f}×" if ratio is not None else "")
    return f"**{text}**" if met >= MET and ratio is not None and ratio <= TARGET_RATIO else text


def write_markdown(
    path: Path, rows: Sequence[Mapping[str, Any]], splits: Mapping[str, str]
) -> None:
    """Replace the `<!-- objective-table: LEVEL -->` … `<!-- /objective-table -->` blocks."""
    text = path.read_text()
    for level in LEVELS:
        start, end = f"<!-- objective-table: {level:g}s -->", "<!-- /objective-table -->"
        pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
        if not pattern.search(text):
            raise SystemExit(f"{path}: no {start} … {end} block")
        block = f"{start}\n{markdown(rows, splits, level)}\n{end}"
        text = pattern.sub(lambda _, block=block: block, text)
    path.write_text(text)


def read_rows(path: Path) -> list[dict[str, Any]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=Path, default=SCENARIOS, help="scenario file")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--data-dir", help="folder of the traces (default: ../shared/data/traces)")
    parser.add_argument("--out", default="runs/objective", help="folder of results.csv")
    parser.add_argument("--only", action="append", help="scenario (repeatable)")
    parser.add_argument("--label", action="append", help="policy label (repeatable)")
    parser.add_argument("--from-results", action="store_true", help="rebuild from results.csv")
    parser.add_argument("--markdown", type=Path, help="rewrite this file's objective tables")
    parser.add_argument(
        "--set", action="append", default=[], help="X=V: the objective policy's option X is V"
    )
    add_quiet(parser)
    args = parser.parse_args()
    results = Path(args.out) / "results.csv"
    if args.from_results:
        rows = read_rows(results)
    else:
        shared = default_data_dir()
        data_dir = args.data_dir or (str(shared / "traces") if shared else None)
        if data_dir is None:
            raise SystemExit("no ../shared/data beside this directory: give --data-dir")
        _, specs = load_bench(args.scenarios, data_dir)
        specs = [
            s
            for s in specs
            if (not args.only or s.scenario in args.only)
            and (not args.label or s.label in args.label)
        ]
        options = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
        rows = run_all([with_options(s, options) for s in specs], args.jobs, args.quiet)
        write_rows(results, rows)
    splits = dict(SPLIT.findall(args.scenarios.read_text()))
    for level in LEVELS:
        print(f"\np99 <= {level:g} s\n{markdown(rows, splits, level)}")
    if args.markdown:
        write_markdown(args.markdown, rows, splits)


if __name__ == "__main__":
    main()
