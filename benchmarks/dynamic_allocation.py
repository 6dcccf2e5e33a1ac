"""Spark's own dynamic allocation against elastream's executor leasing, side by side on one
standalone cluster (issue 41, item 5): executor-seconds held, p99 latency, rows out once.

One cluster (`elastream cluster up`: W workers of C cores, an executor = one worker's C cores)
and one seeded file stream whose rate swings 10x: five phases low, high, low, high, low of
`--minutes`/5 each; files of `--rows-per-file` JSON lines land by a Poisson process at
rate/rows-per-file, each written under a hidden name beside the folder and renamed into it by a
writer process, which records the landing time of each file. The same schedule and file set go,
one side after the other, through:

- spark: plain Structured Streaming, `readStream.json` -> 3 x `mapInArrow` -> `writeStream.parquet`,
  submitted with spark-submit, with Spark's dynamic allocation (`spark.dynamicAllocation.enabled`,
  `shuffleTracking.enabled`, min/max executors as elastream's hosts, initial = min, the executor
  idle timeout `--idle-timeout`);
- elastream: `elastream run` (psps, its defaults) of a files source -> 3 operators -> a files sink
  (Parquet), leasing the cluster's executors as hosts (`spark.leasing`: slots C, BTU `--btu`,
  min/max hosts as above).

The per-row work is the same on both sides and vectorized: each of the 3 steps passes its Arrow
batch through and waits `--work-ms` per row (elastream's `service_time_ms`: an emulated external
call, so that task slots, not this machine's 2 cores, bound the throughput).

Measured per side, from the first file's landing to the end (the later of the writer's last file
and the last row out): executors held, sampled every second from the master's JSON status
(`/json/`: the application's cores / C), integrated; end-to-end latency of every row: from its
file's landing (the writer's clock after the rename) to the moment its output file became
visible (spark: the mtime of the `_spark_metadata` log file that commits it, read as it appears;
elastream: the mtime of the part file, written under a hidden name and renamed into place);
rows out and whether every input `id` is out exactly once; the load average before and after.

    flock /work/spark.lock .venv/bin/python benchmarks/dynamic_allocation.py [--minutes 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np

from elastream.report.progress import add_quiet, steps

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "id LONG, file LONG, user STRING, text STRING"
STEPS = ("step1", "step2", "step3")
PHASES = ("low", "high", "low", "high", "low")
SPARK_APP, ELASTREAM_APP = "dynalloc-spark", "dynalloc-elastream"
SAMPLE_S = 1.0
POLL_S = 0.5


# ---------------------------------------------------------------- the stream


@dataclass(frozen=True)
class Landing:
    """One file of the schedule: when it lands (s after the writer's start), its number, rows."""

    at_s: float
    file: int
    first_id: int
    rows: int


def schedule(seed: int, minutes: float, low: float, high: float, per_file: int) -> list[Landing]:
    """Files landing by a Poisson process at rate/per_file per second, phase by phase (PHASES,
    `minutes`/5 each); seeded, so both sides get the same files at the same offsets."""
    rng = np.random.default_rng(seed)
    phase_s = minutes * 60.0 / len(PHASES)
    landings: list[Landing] = []
    t, first = 0.0, 0
    for k, phase in enumerate(PHASES):
        end = (k + 1) * phase_s
        files_per_s = (high if phase == "high" else low) / per_file
        while (t := max(t, k * phase_s) + rng.exponential(1.0 / files_per_s)) < end:
            landings.append(Landing(t, len(landings), first, per_file))
            first += per_file
    return landings


def lines(landing: Landing) -> str:
    """The file's JSON lines: ids first_id.., its number, a user and a short text."""
    return "".join(
        f'{{"id": {i}, "file": {landing.file}, "user": "u{(i * 7919) % 1000:03d}", '
        f'"text": "lorem ipsum dolor sit amet {i % 97:02d}"}}\n'
        for i in range(landing.first_id, landing.first_id + landing.rows)
    )


def write(args: argparse.Namespace) -> None:
    """The writer process: land every file of the schedule on time and log when it landed."""
    landings = schedule(args.seed, args.minutes, args.low, args.high, args.rows_per_file)
    folder, staging = Path(args.input), Path(args.input).parent / ".staging"
    staging.mkdir(parents=True, exist_ok=True)
    start = time.time()
    with open(args.manifest, "w") as log:
        for landing in landings:
            time.sleep(max(0.0, start + landing.at_s - time.time()))
            name = f"part-{landing.file:06d}.json"
            (staging / name).write_text(lines(landing))
            os.rename(staging / name, folder / name)
            log.write(f"{landing.file},{landing.first_id},{landing.rows},{time.time()!r}\n")
            log.flush()


def read_manifest(path: Path) -> dict[int, tuple[int, int, float]]:
    """file -> (first id, rows, landed at) as the writer logged it."""
    out = {}
    for line in path.read_text().splitlines():
        file, first, rows, landed = line.split(",")
        out[int(file)] = (int(first), int(rows), float(landed))
    return out


# ---------------------------------------------------------------- the plain Spark side


def work(ms: float, batches: Iterator) -> Iterator:
    """One step: every Arrow batch passed through after `ms` per row (elastream's
    service_time_ms, the same wait per row)."""
    for batch in batches:
        time.sleep(batch.num_rows * ms / 1000.0)
        yield batch


def plain(args: argparse.Namespace) -> int:
    """The plain Structured Streaming job (run under spark-submit): until SIGTERM, then the
    batch under way commits and the query and session stop."""
    from functools import partial

    from pyspark.sql import SparkSession

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    spark = SparkSession.builder.appName(SPARK_APP).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    frame = spark.readStream.schema(SCHEMA).json(args.input)
    for _ in STEPS:
        frame = frame.mapInArrow(partial(work, args.work_ms), frame.schema)
    query = (
        frame.writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
        .start()
    )
    Path(args.ready).write_text("ready\n")
    while query.isActive and not stop.wait(0.2):
        pass
    while query.isActive and query.status["isTriggerActive"]:
        time.sleep(0.05)  # the batch under way commits its files to the sink's log first
    error = query.exception()
    query.stop()
    spark.stop()
    if error is not None:
        print(f"plain query failed: {error}", file=sys.stderr)
        return 1
    return 0


def dynamic_allocation_conf(args: argparse.Namespace) -> dict[str, str]:
    return {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": str(args.min),
        "spark.dynamicAllocation.initialExecutors": str(args.min),
        "spark.dynamicAllocation.maxExecutors": str(args.max),
        "spark.dynamicAllocation.executorIdleTimeout": f"{args.idle_timeout:g}s",
        **executor_conf(args),
    }


def executor_conf(args: argparse.Namespace) -> dict[str, str]:
    return {"spark.executor.cores": str(args.cores), "spark.executor.memory": "1g"}


def spark_command(args: argparse.Namespace, cluster: dict, side: Path) -> list[str]:
    import pyspark

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    argv = [str(submit), "--master", cluster["master_url"]]
    if cluster.get("auth_file"):
        argv += ["--properties-file", cluster["auth_file"]]
    for key, value in dynamic_allocation_conf(args).items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(Path(__file__).resolve()), "plain", "--input", str(side / "in")]
    argv += ["--output", str(side / "out"), "--checkpoint", str(side / "checkpoint")]
    return [*argv, "--ready", str(side / "ready"), "--work-ms", str(args.work_ms)]


# ---------------------------------------------------------------- the elastream side


def elastream_files(args: argparse.Namespace, cluster: dict, side: Path) -> tuple[Path, Path]:
    """The pipeline (files -> step1 -> step2 -> step3 -> files) and the run settings."""
    names = ["rows", *STEPS, "out"]
    step = {
        "function": "elastream.examples.synthetic:passthrough_columns", "vectorized": True,
        "service_time_ms": args.work_ms, "replicas": {"min": 1, "max": args.max_replicas},
    }  # fmt: skip
    pipeline = {
        "name": "dynalloc",
        "sources": [{"name": "rows", "kind": "files", "path": str(side / "in"), "format": "json",
                     "schema": SCHEMA, "key": "user"}],
        "operators": [{"name": name, **step} for name in STEPS],
        "sinks": [{"name": "out", "kind": "files", "path": str(side / "out"),
                   "format": "parquet"}],
        "streams": [{"from": a, "to": b} for a, b in pairwise(names)],
    }  # fmt: skip
    leasing = {"slots": args.cores, "btu_s": args.btu, "min_hosts": args.min,
               "max_hosts": args.max}  # fmt: skip
    spark = {
        "master": cluster["master_url"], "leasing": leasing,
        "conf": {"spark.app.name": ELASTREAM_APP, **executor_conf(args)},
        **({"auth_file": cluster["auth_file"]} if cluster.get("auth_file") else {}),
    }  # fmt: skip
    spec, settings = side / "pipeline.json", side / "settings.json"
    spec.write_text(json.dumps(pipeline, indent=1))  # JSON is YAML
    settings.write_text(json.dumps({"spark": spark}, indent=1))
    return spec, settings


def elastream_command(args: argparse.Namespace, cluster: dict, side: Path) -> list[str]:
    spec, settings = elastream_files(args, cluster, side)
    argv = [sys.executable, "-m", "elastream.cli", "run", str(spec), "--config", str(settings)]
    return [*argv, "--out", str(side / "run"), "--quiet", "--no-metrics", "--until-stopped"]


def elastream_ready(side: Path) -> bool:
    """The run has started: its first MAPE interval is written."""
    intervals = side / "run" / "intervals.csv"
    return intervals.exists() and len(intervals.read_text().splitlines()) >= 2


# ---------------------------------------------------------------- measuring


class ExecutorSampler(threading.Thread):
    """Every SAMPLE_S: (time, executors the application `app` holds), from the master's JSON
    status (the cores granted to the application / cores per executor)."""

    def __init__(self, webui: str, app: str, cores: int) -> None:
        super().__init__(daemon=True)
        self.url, self.app, self.cores = f"{webui}/json/", app, cores
        self.samples: list[tuple[float, float]] = []
        self.done = threading.Event()

    def held(self) -> float | None:
        try:
            with urllib.request.urlopen(self.url, timeout=2) as response:
                status = json.load(response)
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            return None  # missed sample: the previous value holds
        cores = sum(a["cores"] for a in status.get("activeapps", []) if a["name"] == self.app)
        return cores / self.cores

    def run(self) -> None:
        while not self.done.is_set():
            executors = self.held()
            if executors is not None:
                self.samples.append((time.time(), executors))
            self.done.wait(SAMPLE_S)

    def integral(self, start: float, end: float) -> tuple[float, dict[int, float]]:
        """Executor-seconds held in [start, end] (each sample held until the next), and the
        seconds spent at each executor count."""
        total, at = 0.0, {}
        points = [*self.samples, (end, 0.0)]
        for (t0, n), (t1, _) in pairwise(points):
            span = max(0.0, min(t1, end) - max(t0, start))
            total += n * span
            at[round(n)] = at.get(round(n), 0.0) + span
        return total, at


class Outputs:
    """The output files that became visible, with the time each did (see the module's doc)."""

    def __init__(self, folder: Path, spark_log: bool) -> None:
        self.folder, self.spark_log = folder, spark_log
        self.appeared: dict[str, float] = {}
        self.rows: dict[str, int] = {}
        self.logs_read: set[str] = set()

    def poll(self) -> int:
        """Look for new files; the rows out so far."""
        for name, at in self._new_files():
            if name not in self.appeared:
                self.appeared[name] = at
                self.rows[name] = rows_of(self.folder / name)
        return sum(self.rows.values())

    def _new_files(self) -> list[tuple[str, float]]:
        if not self.spark_log:
            found = []
            for entry in os.scandir(self.folder) if self.folder.exists() else []:
                if entry.name.startswith("part-") and entry.name not in self.appeared:
                    found.append((entry.name, entry.stat().st_mtime))
            return found
        log = self.folder / "_spark_metadata"
        found = []
        for entry in sorted(os.scandir(log), key=batch_number) if log.exists() else []:
            if entry.name.startswith(".") or entry.name in self.logs_read:
                continue
            at = entry.stat().st_mtime
            self.logs_read.add(entry.name)
            for line in Path(entry.path).read_text().splitlines()[1:]:  # 1st: the version
                record = json.loads(line)
                if record.get("action", "add") == "add":
                    found.append((record["path"].rsplit("/", 1)[-1], at))
        return found

    def ids_and_times(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every output row's id and file, and when its output file appeared."""
        import pyarrow.parquet as pq

        ids, files, times = [], [], []
        for name, at in self.appeared.items():
            table = pq.read_table(self.folder / name, columns=["id", "file"])
            ids.append(table.column("id").to_numpy())
            files.append(table.column("file").to_numpy())
            times.append(np.full(table.num_rows, at))
        if not ids:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(ids), np.concatenate(files), np.concatenate(times)


def batch_number(entry: os.DirEntry) -> int:
    """A sink log file's batch number ('12' or '9.compact'); others last."""
    head = entry.name.split(".")[0]
    return int(head) if head.isdigit() else sys.maxsize


def rows_of(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(path).num_rows


@dataclass
class Side:
    """One side's run and figures."""

    name: str
    about: str
    load_before: tuple[float, ...] = ()
    load_after: tuple[float, ...] = ()
    executor_s: float = 0.0
    at_count: dict[int, float] = field(default_factory=dict)
    span_s: float = 0.0
    latency_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rows_in: int = 0
    rows_out: int = 0
    verdict: str = ""
    exit_code: int | None = None
    ok: bool = False


def run_side(name: str, about: str, argv: list[str], args: argparse.Namespace, cluster: dict,
             app: str, ready) -> Side:  # fmt: skip
    """Start the side's driver, wait until it is ready, land the stream, wait until every row
    is out (or `--drain-timeout` after the last file), stop the driver and measure."""
    side_dir = args.out / name
    (side_dir / "in").mkdir()
    (side_dir / "out").mkdir()
    side = Side(name, about, load_before=os.getloadavg())
    sampler = ExecutorSampler(cluster["webui_url"], app, args.cores)
    log = open(side_dir / "driver.log", "w")  # noqa: SIM115 - closed below
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_DRIVER_PYTHON": sys.executable}  # fmt: skip
    driver = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
                              start_new_session=True)  # fmt: skip
    sampler.start()
    writer = None
    try:
        await_ready(driver, lambda: ready(side_dir) and settled(sampler, args.min), name)
        outputs = Outputs(side_dir / "out", spark_log=name == "spark")
        writer = subprocess.Popen(writer_command(args, side_dir), cwd=ROOT)
        start = time.time()
        side.rows_in = sum(
            w.rows for w in schedule(args.seed, args.minutes, args.low, args.high,
                                     args.rows_per_file)
        )  # fmt: skip
        end = watch(driver, writer, outputs, side.rows_in, args.drain_timeout)
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()  # the run failed: the writer's files are not needed
        side.exit_code = stop(driver)
        sampler.done.set()
        log.close()
    side.load_after = os.getloadavg()
    side.span_s = end - start
    side.executor_s, side.at_count = sampler.integral(start, end)
    measure(side, outputs, read_manifest(side_dir / "manifest.csv"))
    side.ok = side.exit_code == 0 and side.verdict == "every row once"
    await_gone(sampler)
    return side


def writer_command(args: argparse.Namespace, side: Path) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "write", "--input", str(side / "in")]
    argv += ["--manifest", str(side / "manifest.csv"), "--seed", str(args.seed)]
    argv += ["--minutes", str(args.minutes), "--low", str(args.low), "--high", str(args.high)]
    return [*argv, "--rows-per-file", str(args.rows_per_file)]


def settled(sampler: ExecutorSampler, executors: int) -> bool:
    """The application holds exactly its minimum of executors (elastream retires the extra
    ones the cluster gave it at start: they leave within seconds)."""
    return bool(sampler.samples) and sampler.samples[-1][1] == executors


def await_ready(driver: subprocess.Popen, ready, name: str, timeout_s: float = 600.0) -> None:
    deadline = time.time() + timeout_s
    while not ready():
        if driver.poll() is not None:
            raise SystemExit(f"{name}: the driver exited ({driver.returncode}) before it was ready")
        if time.time() > deadline:
            raise SystemExit(f"{name}: not ready within {timeout_s:.0f} s")
        time.sleep(POLL_S)


def watch(driver: subprocess.Popen, writer: subprocess.Popen, outputs: Outputs, rows: int,
          drain_timeout: float) -> float:  # fmt: skip
    """Until every row is out (the time it was seen), the driver ends, or `drain_timeout` after
    the writer's last file."""
    written_at = None
    while True:
        out = outputs.poll()
        now = time.time()
        if written_at is None and writer.poll() is not None:
            if writer.returncode != 0:
                raise SystemExit(f"the writer failed ({writer.returncode})")
            written_at = now
        if out >= rows and written_at is not None:
            return now
        if driver.poll() is not None or (written_at and now - written_at > drain_timeout):
            return now
        time.sleep(POLL_S)


def stop(driver: subprocess.Popen, timeout_s: float = 180.0) -> int:
    """SIGTERM to the driver, wait; its process group killed after `timeout_s`."""
    if driver.poll() is None:
        driver.send_signal(signal.SIGTERM)
    try:
        return driver.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        return -9


def await_gone(sampler: ExecutorSampler, timeout_s: float = 120.0) -> None:
    """Until the application's executors have left the cluster (before the next side)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and sampler.held() not in (0.0, None):
        time.sleep(POLL_S)


def measure(side: Side, outputs: Outputs, manifest: dict[int, tuple[int, int, float]]) -> None:
    """Rows out, the exactly-once check against the landed files' ids, latencies."""
    ids, files, appeared = outputs.ids_and_times()
    expected = np.concatenate(
        [np.arange(first, first + rows) for first, rows, _ in manifest.values()] or [[]]
    ).astype(np.int64)
    side.rows_out = int(ids.size)
    unique = np.unique(ids)
    missing = np.setdiff1d(expected, unique).size
    extra = np.setdiff1d(unique, expected).size
    twice = ids.size - unique.size
    side.verdict = (
        "every row once" if not (missing or extra or twice) and expected.size == side.rows_in
        else f"missing {missing}, extra {extra}, twice {twice} (landed {expected.size} of "
        f"{side.rows_in})"
    )  # fmt: skip
    landed = np.array([manifest[int(f)][2] for f in files]) if files.size else np.zeros(0)
    side.latency_s = appeared - landed


# ---------------------------------------------------------------- the table


def table(sides: list[Side]) -> list[str]:
    def pct(s: Side, q: float) -> str:
        return f"{np.percentile(s.latency_s, q):.2f}" if s.latency_s.size else "—"

    def counts(s: Side) -> str:
        return ", ".join(f"{n}: {t:.0f}" for n, t in sorted(s.at_count.items()) if t >= 0.5)

    rows = [
        ("executor-seconds held", lambda s: f"{s.executor_s:,.0f}"),
        ("mean executors held", lambda s: f"{s.executor_s / s.span_s:.2f}"),
        ("s at 0/1/2/... executors", counts),
        ("measured span, s", lambda s: f"{s.span_s:.0f}"),
        ("p99 latency, s", lambda s: pct(s, 99)),
        ("p50 latency, s", lambda s: pct(s, 50)),
        ("max latency, s", lambda s: pct(s, 100)),
        ("rows in / out", lambda s: f"{s.rows_in:,} / {s.rows_out:,}"),
        ("exactly once", lambda s: s.verdict),
        ("driver exit", lambda s: str(s.exit_code)),
        ("load 1/5/15 before", lambda s: load(s.load_before)),
        ("load 1/5/15 after", lambda s: load(s.load_after)),
    ]
    width = max(len(label) for label, _ in rows)
    cells = {s.name: [get(s) for _, get in rows] for s in sides}
    widths = {k: max(len(k), *(len(c) for c in v)) for k, v in cells.items()}
    out = [f"| {'':{width}} | " + " | ".join(f"{k:{widths[k]}}" for k in cells) + " |"]
    out.append(f"|{'-' * (width + 2)}|" + "|".join("-" * (widths[k] + 2) for k in cells) + "|")
    for i, (label, _) in enumerate(rows):
        out.append(
            f"| {label:{width}} | "
            + " | ".join(f"{cells[k][i]:>{widths[k]}}" for k in cells)
            + " |"
        )
    return out


def load(values: tuple[float, ...]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def ratios(spark: Side, ours: Side) -> list[str]:
    out = []
    if spark.executor_s:
        out.append(
            f"executor-seconds, elastream / spark: {ours.executor_s / spark.executor_s:.2f}x "
            "(issue 41's target: <= 0.7x)"
        )
    if spark.latency_s.size and ours.latency_s.size:
        a, b = np.percentile(ours.latency_s, 99), np.percentile(spark.latency_s, 99)
        out.append(f"p99 latency, elastream - spark: {a - b:+.2f} s (target: <= 0)")
    return out


# ---------------------------------------------------------------- main


def cluster_up(args: argparse.Namespace) -> tuple[dict, list[str]]:
    state = ("--state", str(args.out / "cluster" / "cluster.json"))
    cli = [sys.executable, "-m", "elastream.cli", "cluster"]
    up = [*cli, "up", "--workers", str(args.max), "--cores", str(args.cores), "--memory", "3g"]
    done = subprocess.run([*up, *state], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"cluster up failed: {done.stderr.strip()}")
    return json.loads(Path(state[1]).read_text()), [*cli, "down", *state]


def header(args: argparse.Namespace) -> list[str]:
    landings = schedule(args.seed, args.minutes, args.low, args.high, args.rows_per_file)
    phase_s = args.minutes * 60 / len(PHASES)
    return [
        f"dynamic allocation vs leasing, {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} cores, load {load(os.getloadavg())}",
        f"stream: {len(landings)} files of {args.rows_per_file} rows "
        f"({sum(w.rows for w in landings):,} rows), phases {'/'.join(PHASES)} of {phase_s:.0f} s",
        f"  at {args.low:g} / {args.high:g} rows/s, seed {args.seed}; 3 vectorized steps of "
        f"{args.work_ms:g} ms a row on both sides",
        f"cluster: {args.max} workers of {args.cores} cores; executors of {args.cores} cores, "
        f"min {args.min}, max {args.max}",
    ]


def side_setup(name: str, args: argparse.Namespace, cluster: dict) -> tuple:
    """(what it is, its driver's command, its application's name, its readiness test)."""
    folder = args.out / name
    if name == "spark":
        about = (
            "plain Structured Streaming, dynamic allocation with shuffle tracking, executor "
            f"idle timeout {args.idle_timeout:g} s"
        )
        return about, spark_command(args, cluster, folder), SPARK_APP, spark_ready
    about = (
        f"elastream run (psps), spark.leasing slots {args.cores}, BTU {args.btu:g} s, "
        f"replicas 1..{args.max_replicas} per step"
    )
    return about, elastream_command(args, cluster, folder), ELASTREAM_APP, elastream_ready


def spark_ready(side: Path) -> bool:
    """The plain query has started."""
    return (side / "ready").exists()


def compare(args: argparse.Namespace) -> int:
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    print("\n".join(header(args)), flush=True)
    cluster, down = cluster_up(args)
    sides = []
    try:
        for name in steps(args.sides, "sides", quiet=args.quiet):
            (args.out / name).mkdir()
            about, argv, app, ready = side_setup(name, args, cluster)
            side = run_side(name, about, argv, args, cluster, app, ready)
            print(f"{name}: {about}: {side.verdict}, exit {side.exit_code}", flush=True)
            sides.append(side)
    finally:
        subprocess.run(down, capture_output=True, text=True, cwd=ROOT)
    print("\n".join(table(sides)))
    by_name = {s.name: s for s in sides}
    if {"spark", "elastream"} <= by_name.keys():
        print("\n".join(ratios(by_name["spark"], by_name["elastream"])))
    return 0 if all(s.ok for s in sides) else 1


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", nargs="?", default="compare", choices=("compare", "write", "plain"),
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--minutes", type=float, default=20.0, help="length of the stream")
    add_quiet(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the file schedule")
    parser.add_argument("--low", type=float, default=12.0, help="rows/s in the low phases")
    parser.add_argument("--high", type=float, default=120.0, help="rows/s in the high phases")
    parser.add_argument("--rows-per-file", type=int, default=40)
    parser.add_argument("--work-ms", type=float, default=20.0, help="wait per row and step, ms")
    parser.add_argument("--cores", type=int, default=4, help="cores (task slots) per executor")
    parser.add_argument("--min", type=int, default=1, help="fewest executors (hosts)")
    parser.add_argument("--max", type=int, default=3, help="most executors (hosts); workers")
    parser.add_argument("--max-replicas", type=int, default=4, help="per elastream step")
    parser.add_argument("--btu", type=float, default=60.0, help="elastream's BTU, s")
    parser.add_argument("--idle-timeout", type=float, default=60.0,
                        help="spark.dynamicAllocation.executorIdleTimeout, s")  # fmt: skip
    parser.add_argument("--drain-timeout", type=float, default=600.0,
                        help="s after the last file for every row to be out")  # fmt: skip
    parser.add_argument("--sides", type=lambda s: s.split(","), default=["spark", "elastream"])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "dynalloc")
    # the roles' own options
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--manifest", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    parser.add_argument("--checkpoint", help=argparse.SUPPRESS)
    parser.add_argument("--ready", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.role == "write":
        write(args)
        return 0
    if args.role == "plain":
        return plain(args)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
