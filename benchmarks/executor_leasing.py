"""Executors leased as hosts on a local standalone cluster, through the CLI: how long a lease takes
to boot, when the surplus host is released (in its BTU's last 5 %?), BTUs, re-leases and cost,
by each release rule (`now`, VISP's: this interval's decision; `last_btu`: the last BTU's
decisions; `lulls`: the lulls seen), against the same run on the executors the cluster gives
without leasing.

    .venv/bin/python benchmarks/executor_leasing.py [--btu 60] [--trace SPEC] [--out runs/leasing]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

from elastream.leasing.hosts import billed_btus
from elastream.report.progress import add_quiet, steps

PIPELINE = Path(__file__).parents[1] / "tests" / "pipelines" / "work1.yaml"
# 10 ev/s, a step to 70 ev/s (3 replicas of 40 ms) at 10 s for 24 s, then 10 ev/s up to 150 s
TRACE = "spike:peak=70,magnitude=7,onset=10,ramp=0,hold=24,decay=0,duration=150"

FIGURES = (
    "hosts_leased", "host_btus", "host_re_leases", "host_cost", "host_boot_s", "replicas_mean",
    "latency_ms_mean", "latency_ms_p99", "processed_ratio", "query_restarts",
)  # fmt: skip
HEADINGS = {
    "leased_now": "leased, VISP's rule",
    "leased_last_btu": "leased, last BTU's rule",
    "leased_lulls": "leased, lulls rule (the default)",
    "fixed": "fixed (2 executors, cost if leased)",
}


def elastream(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elastream.cli", *args], capture_output=True, text=True, check=False
    )


def run(cluster: dict, out: Path, trace: str, leasing: dict | None) -> dict:
    """One run on the cluster `cluster up` started (its state: master URL, the secret's file)."""
    settings = out.parent / f"{out.name}.yaml"
    spark = {"master": cluster["master_url"], "auth_file": cluster["auth_file"]}
    spark |= {"leasing": leasing} if leasing else {}
    settings.write_text(json.dumps({"spark": spark}))
    done = elastream(
        "run", str(PIPELINE), "--trace", trace, "--interval-s", "2", "--event-timeout-s", "none",
        "--config", str(settings), "--out", str(out), "--quiet",
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads((out / "summary.json").read_text())


def host_changes(out: Path) -> list[tuple[float, int]]:
    """(t, hosts up) each time the number of hosts up changed."""
    changes: list[tuple[float, int]] = []
    with (out / "intervals.csv").open() as f:
        for row in csv.DictReader(f):
            up = int(float(row["hosts_up"]))
            if not changes or changes[-1][1] != up:
                changes.append((float(row["t"]), up))
    return changes


def last_t(out: Path) -> float:
    with (out / "intervals.csv").open() as f:
        return max(float(row["t"]) for row in csv.DictReader(f))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--btu", type=float, default=60.0, help="BTU length, s")
    parser.add_argument("--trace", default=TRACE, help="input trace (docs/workloads.md)")
    parser.add_argument("--out", type=Path, default=Path("runs/leasing"))
    add_quiet(parser)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    state = ("--state", str(args.out / "cluster.json"))
    up = elastream("cluster", "up", "--workers", "2", "--cores", "2", *state)
    if up.returncode != 0:
        raise SystemExit(up.stderr)
    cluster = json.loads((args.out / "cluster.json").read_text())
    try:
        leasing = {"slots": 2, "btu_s": args.btu, "min_hosts": 1, "max_hosts": 2}
        cases = {
            "leased_now": {**leasing, "release_rule": "now"},
            "leased_last_btu": {**leasing, "release_rule": "last_btu"},
            "leased_lulls": {**leasing, "release_rule": "lulls"},
            "fixed": None,
        }
        done = {name: run(cluster, args.out / name, args.trace, cases[name])
                for name in steps(cases, "leasing runs", quiet=args.quiet)}  # fmt: skip
    finally:
        elastream("cluster", "down", *state)
    # Without leasing the cluster's 2 executors are held for the whole run: what they would cost.
    fixed = done["fixed"]
    fixed["host_btus"] = 2 * billed_btus(0.0, last_t(args.out / "fixed"), args.btu)
    fixed["host_cost"] = float(fixed["host_btus"])
    print(f"trace {args.trace}; BTU {args.btu:.0f} s; price 1 per BTU; hosts of 2 slots")
    print(f"{'':24}" + "".join(f"{HEADINGS[name]:>{len(HEADINGS[name]) + 3}}" for name in done))
    for key in FIGURES:
        cells = (f"{fmt(done[n].get(key)):>{len(HEADINGS[n]) + 3}}" for n in done)
        print(f"{key:24}" + "".join(cells))
    for name in ("leased_now", "leased_last_btu", "leased_lulls"):
        print(f"hosts up over time, {HEADINGS[name]} (t s: hosts):", host_changes(args.out / name))


def fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if isinstance(value, int) else f"{value:,.2f}"


if __name__ == "__main__":
    main()
