"""DEBS 2015 Query 1 end to end on files: split the trips file into small CSV files and drop
them into a directory at a pace (slow, fast, slow), optionally with `elastream run` on
examples/debs_files.yaml reading that directory and writing the top-10 updates as Parquet; then
read the Parquet back with plain PySpark and compare it, update by update, with the pandas batch
computation (docs/tutorial.md).

    .venv/bin/python benchmarks/debs_files.py --dir /tmp/debs-files/in            # drop only
    flock /work/spark.lock .venv/bin/python benchmarks/debs_files.py --run --dir /tmp/debs-files

Each file holds `--per-file` trips as `i,<the 17 columns>` (i: the trip's row in the original
file, which breaks ranking ties as the batch computation does). A file is written under a
hidden name and renamed into the directory, so a reader never sees half a file."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from elastream.examples.debs import DEFAULT_TRIPS
from elastream.examples.debs_batch import batch_top10
from elastream.report.progress import add_quiet, clock

EXAMPLE = Path(__file__).parents[1] / "src" / "elastream" / "examples" / "debs_files.yaml"
PACE = "20:40,30:160,0:40"  # seconds:trips per second, ...; 0 s = until the trips run out


def phases(spec: str) -> list[tuple[float, float]]:
    """'20:40,30:160,0:40' -> [(20, 40), (30, 160), (inf, 40)]."""
    out = []
    for part in spec.split(","):
        seconds, rate = (float(x) for x in part.split(":"))
        out.append((seconds or float("inf"), rate))
    return out


def split(trips: Path, rows: int, per_file: int) -> list[list[str]]:
    """The first `rows` trips as files of `per_file` lines `i,<row>`."""
    lines = trips.read_text().splitlines()[:rows]
    numbered = [f"{i},{line}" for i, line in enumerate(lines)]
    return [numbered[k : k + per_file] for k in range(0, len(numbered), per_file)]


def drop(files: list[list[str]], into: Path, pace: list[tuple[float, float]]) -> None:
    """Write the files into `into` one after the other at the pace's rates (trips/s)."""
    into.mkdir(parents=True, exist_ok=True)
    ends, total = [], 0.0
    for seconds, rate in pace:
        total += seconds
        ends.append((total, rate))
    start, sent = time.monotonic(), 0
    for n, lines in enumerate(files):
        while sent + len(lines) > allowed(time.monotonic() - start, ends):
            time.sleep(0.05)
        hidden = into / f".trips-{n:05d}.csv"
        hidden.write_text("\n".join(lines) + "\n")
        os.rename(hidden, into / f"trips-{n:05d}.csv")
        sent += len(lines)


def allowed(now: float, ends: list[tuple[float, float]]) -> float:
    """Trips the pace allows in the first `now` seconds."""
    total, begin = 0.0, 0.0
    for end, rate in ends:
        total += (min(now, end) - begin) * rate
        if now < end:
            break
        begin = end
    return total


def example_copy(base: Path) -> Path:
    """examples/debs_files.yaml with its paths under `base`."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["sources"][0]["path"] = str(base / "in")
    for sink in data["sinks"]:
        sink["path"] = str(base / sink["name"])
    path = base / "debs_files.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def read_updates(folder: Path) -> list[tuple[int, list[list]]]:
    """The Parquet updates read back with plain PySpark, in trip order (the columns of the
    sink's schema; or, without one, the JSON `payload` column)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").appName("debs-check").getOrCreate()
    try:
        frame = spark.read.parquet(str(folder))
        if "i" in frame.columns:
            records = [r.asDict() for r in frame.select("i", "routes", "counts").collect()]
        else:
            records = [json.loads(r["payload"]) for r in frame.select("payload").collect()]
    finally:
        spark.stop()
    return sorted(
        (p["i"], [[a, b] for a, b in zip(p["routes"], p["counts"], strict=True)]) for p in records
    )


def run(base: Path, files: list[list[str]], pace: list[tuple[float, float]], args) -> int:
    """Start elastream on the example for `--duration` seconds (its files source reads until
    then; the run then drains, flushes its windows and exits), drop the files meanwhile, and
    compare the Parquet output with the batch computation."""
    pipeline = example_copy(base)
    (base / "in").mkdir(parents=True, exist_ok=True)  # the source's directory must exist
    cmd = [sys.executable, "-m", "elastream.cli", "run", str(pipeline), "--out", str(base / "run")]
    cmd += [
        "--interval-s",
        str(args.interval_s),
        "--event-timeout-s",
        "none",
        "--queue-capacity",
        "none",
        "--quiet",
    ]
    cmd += ["--duration", str(args.duration), "--drain-s", "300"]
    log = (base / "run.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    began = time.monotonic()
    time.sleep(args.lead)  # Spark's start-up: the first files then meet a running query
    drop(files, base / "in", pace)
    print(f"dropped {len(files)} files in {time.monotonic() - began:.0f} s")
    try:
        code = proc.wait(timeout=args.duration + 600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=120)
    print(
        f"elastream exited {code} after {time.monotonic() - began:.0f} s (log: {base / 'run.log'})"
    )
    got = read_updates(base / "top10")
    expected = batch_top10(Path(args.trips), args.rows)
    same = sum(1 for a, b in zip(got, expected, strict=False) if a == b)
    print(
        f"updates: {len(got)} read back, {len(expected)} in the batch computation, "
        f"{same} equal in order; identical: {got == expected}"
    )
    return 0 if got == expected and code == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trips", default=DEFAULT_TRIPS, help="the DEBS 2015 trips file (CSV)")
    parser.add_argument("--rows", type=int, default=10_004, help="trips to send")
    parser.add_argument("--per-file", type=int, default=200, help="trips per file")
    parser.add_argument("--pace", default=PACE, help="seconds:trips/s,... (0 s: to the end)")
    parser.add_argument(
        "--dir", type=Path, required=True, help="drop: the directory; --run: the base (in/, top10/)"
    )
    parser.add_argument("--run", action="store_true", help="run elastream on it and compare")
    parser.add_argument(
        "--interval-s", type=float, default=3.0, help="elastream's control interval, s"
    )
    parser.add_argument("--duration", type=float, default=150.0, help="elastream's run, s")
    parser.add_argument("--lead", type=float, default=20.0, help="s before the first file")
    add_quiet(parser)
    args = parser.parse_args()
    files = split(Path(args.trips), args.rows, args.per_file)
    if args.run:
        with clock(args.duration, "debs files run", quiet=args.quiet):
            return run(args.dir, files, phases(args.pace), args)
    drop(files, args.dir, phases(args.pace))
    print(f"dropped {len(files)} files into {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
