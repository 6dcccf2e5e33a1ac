"""Where does a Spark run's start go, with the Python workers forked from elastream's daemon
(the default) against Spark's own daemon, with the JVM's class cache and without, and against
plain PySpark starting a session?

Each round runs, in turn and each in its own process: plain PySpark (a session, then one
Python task per slot, as many slots as the pipeline's pool: the floor any PySpark job pays),
as a user starts it and with elastream's class cache (runtime/spark/class_cache.py); `elastream
run` of a three-operator pipeline (pipelines/filter3.yaml, a pool of 12 replicas) with
`spark.python.daemon.module: pyspark.daemon`, with `spark.class_cache: false`, and as shipped.
It prints the median of each start-up phase (the run's "started in" log line), the ratios and
the load average (no asserts). Usage:
    .venv/bin/python benchmarks/run_startup.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elastream.report.progress import add_quiet, steps
from elastream.runtime.spark.class_cache import java_options

BIN = Path(sys.executable).parent
SLOTS = 12  # the pipeline's pool: 3 operators × 4 replicas
PIPELINE = Path(__file__).parent / "pipelines" / "filter3.yaml"  # a pool of 12
PLAIN = f"""
import time
start = time.perf_counter()
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[{SLOTS},4]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", JAVA_OPTIONS)
         .config("spark.python.worker.reuse", "true").getOrCreate())
session = time.perf_counter()
def hold(batches):
    import pyarrow as pa, os, time
    for _ in batches:
        pass
    time.sleep(1.0)
    yield pa.RecordBatch.from_pydict({{"pid": [os.getpid()]}})
spark.range({SLOTS}, numPartitions={SLOTS}).mapInArrow(hold, "pid LONG").collect()
print("PHASES", session - start, time.perf_counter() - session)
spark.stop()
"""
STARTED = re.compile(r"started in ([0-9.]+) s: (.*)")
PHASE = re.compile(r"([a-zA-Z ]+?) ([0-9.]+) s")


def plain_pyspark(folder: Path, class_cache: bool) -> dict[str, float]:
    """Plain PySpark: session start, then one Python task per slot (fresh workers)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}  # the workers' Python: this one
    script = PLAIN.replace("JAVA_OPTIONS", repr(java_options({}) if class_cache else ""))
    done = subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True,
                          text=True, check=True, timeout=600, env=env)  # fmt: skip
    line = next(s for s in done.stdout.splitlines() if s.startswith("PHASES"))
    session, workers = (float(x) for x in line.split()[1:])
    return {"Spark session": session, "Python workers": workers}


def elastream_run(folder: Path, daemon: str | None, class_cache: bool = True) -> dict[str, float]:
    """`elastream run` for 2 s of input; its start-up phases from the "started in" line."""
    settings = folder / "run.yaml"
    conf = {} if daemon is None else {"spark.python.daemon.module": daemon}
    settings.write_text(json.dumps({"spark": {"conf": conf, "class_cache": class_cache}}))
    (folder / "startup.yaml").write_text(PIPELINE.read_text())
    cmd = [str(BIN / "elastream"), "run", "startup.yaml", "--trace", "constant:rate=10,duration=2"]
    cmd += ["--interval-s", "2", "--out", "run", "--config", str(settings), "--no-metrics"]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"elastream run failed:\n{done.stdout}\n{done.stderr}")
    found = STARTED.search(done.stdout + done.stderr)
    if found is None:
        raise SystemExit("no 'started in' line in the run's output")
    phases = {name.strip(): float(s) for name, s in PHASE.findall(found.group(2))}
    return {**phases, "start-up": float(found.group(1)), "whole run": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    add_quiet(parser)
    args = parser.parse_args()
    cases = {
        "plain PySpark": lambda folder: plain_pyspark(folder, class_cache=False),
        "plain, class cache": lambda folder: plain_pyspark(folder, class_cache=True),
        "Spark's daemon": lambda folder: elastream_run(folder, "pyspark.daemon"),
        "no class cache": lambda folder: elastream_run(folder, None, class_cache=False),
        "elastream's daemon": lambda folder: elastream_run(folder, None),
    }
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in cases}
    loads = []
    for _ in steps(range(args.repeat), "rounds", quiet=args.quiet, label=False):
        for name, case in cases.items():  # interleaved: a burst of load hits every case alike
            with tempfile.TemporaryDirectory() as folder:
                loads.append(os.getloadavg()[0])
                runs[name].append(case(Path(folder)))
    medians = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()
    }
    phases = list(medians["elastream's daemon"])
    print(f"{args.repeat} rounds; 1-min load average before each run: "
          f"{min(loads):.2f}–{max(loads):.2f}")  # fmt: skip
    print(f"| phase (median s) | {' | '.join(cases)} |")
    print(f"|---|{'---:|' * len(cases)}")
    for phase in phases:
        cells = [f"{medians[n][phase]:.1f}" if phase in medians[n] else "" for n in cases]
        print(f"| {phase} | {' | '.join(cells)} |")
    ours, theirs = medians["elastream's daemon"], medians["Spark's daemon"]
    both = "operator queries with the Python workers and the sources"  # side by side
    print(f"{both}, elastream's daemon ÷ Spark's: {ours[both] / theirs[both]:.2f}")
    print(f"start-up, elastream's daemon ÷ Spark's: {ours['start-up'] / theirs['start-up']:.2f}")
    uncached = medians["no class cache"]
    print(f"start-up, class cache ÷ none: {ours['start-up'] / uncached['start-up']:.2f}")
    for name in ("plain PySpark", "plain, class cache"):
        floor = medians[name]["Spark session"] + medians[name]["Python workers"]
        print(f"start-up, elastream ÷ {name}'s session and {SLOTS} workers: "
              f"{ours['start-up'] / floor:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
