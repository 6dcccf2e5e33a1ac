"""Plain PySpark and elastream side by side on one generated file backlog (issue 37).

One file set (default 1,000,000 JSON-lines rows `user STRING, n LONG, text STRING`, ~70 bytes a
row, in 200 files) goes, case after case, each in a fresh process of its own, through:

- plain-20, plain-default: plain PySpark, `readStream.json` -> 3 x `mapInArrow` pass-through ->
  `writeStream.parquet`, `local[*]`, UI off, `maxFilesPerTrigger` 20 / unset (Spark's default:
  the whole backlog in one batch) (src/reproductions/baselines/plain_files.py), its driver
  JVM started with elastream's class cache, as elastream's is (runtime/spark/class_cache.py);
- plain-rows-20: the same with a per-row Python step (each mapInArrow batch to Python dicts,
  a function called per row, back to Arrow), `maxFilesPerTrigger` 20;
- elastream, elastream-per-event: `elastream run` (SQLite queues, `--policy static --replicas
  2`) on a `files` source -> 3 operators (vectorized / per event, VECTORIZED_OPERATOR and
  PER_EVENT_OPERATOR below) -> a `files` sink writing Parquet.

Each case runs until all rows are out, then its process gets SIGTERM (the driver only) and is
waited for. Measured: first row and all rows out (rows counted from the readable Parquet part
files every 0.25 s), the steady rate between 10 % and 90 % of the rows, CPU-seconds of the whole
process tree (getrusage of the reaped children, this process being their subreaper so that
orphans are reaped and counted too; and a psutil sampler of the live tree every 0.5 s, which
the ratios use: rusage never sees pyspark's Python workers, CPU_NOTE says why), the tree's peak
RSS, the driver's and helpers' RSS at 10, 50 and 90 % of the rows out (flat if the driver never
holds the backlog: `--events 5000000 --only elastream`), the load average before and after.
Each case's output is checked complete and once: its `n` values (from the part files its sink
committed) equal the input's.
Prints one table and the ratios; exits 1 if a case's output is wrong or its process failed.

    flock /work/spark.lock .venv/bin/python benchmarks/plain_vs_elastream.py \
        [--events N] [--files F] [--only CASE[,CASE]] [--repeat K] [--keep] [--quiet]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np
import psutil
import pyarrow.json as pajson
import pyarrow.parquet as pq
import yaml

from elastream.report.progress import add_quiet, steps
from elastream.runtime.spark.class_cache import java_options

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "user STRING, n LONG, text STRING"
# elastream's operator functions, the one place to switch them (the vectorized contract changes)
VECTORIZED_OPERATOR = "elastream.examples.synthetic:passthrough_columns"
PER_EVENT_OPERATOR = "elastream.examples.synthetic:passthrough"
OPERATORS = ("first", "second", "third")
REPLICAS = 2
PLAIN_MAX_FILES = 20
POLL_S = 0.25
SAMPLE_S = 0.5
PR_SET_CHILD_SUBREAPER = 36
# the processes of a case's tree: its driver process, Spark's JVM, pyspark's daemon and the Python
# workers it forks (executor tasks, the Python data sources' helper runners), anything else
KINDS = ("driver", "JVM", "workers", "other")
RSS_AT = (0.1, 0.5, 0.9)  # shares of the rows out at which the driver's and helpers' RSS is shown


# ---------------------------------------------------------------- the input


def write_input(folder: Path, events: int, files: int) -> None:
    """`events` JSON lines {"user", "n", "text"} (n = 0 .. events-1) spread over `files` files."""
    folder.mkdir(parents=True)
    for f in range(files):
        numbers = range(f * events // files, (f + 1) * events // files)
        lines = (
            f'{{"user": "u{i % 1000:03d}", "n": {i}, "text": "lorem ipsum dolor sit amet '
            f'{i % 100:02d}"}}\n'
            for i in numbers
        )
        (folder / f"part-{f:05d}.json").write_text("".join(lines))


def input_numbers(folder: Path) -> np.ndarray:
    """The `n` values the input files hold, read back from them."""
    parts = [pajson.read_json(p).column("n").to_numpy() for p in sorted(folder.glob("*.json"))]
    return np.concatenate(parts)


# ---------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """One way of running the job: `command(input, case_dir)` is its process, which writes its
    Parquet output into case_dir/out."""

    name: str
    about: str
    command: Callable[[Path, Path], list[str]]


def plain(step: str, max_files: int | None) -> Callable[[Path, Path], list[str]]:
    def command(source: Path, case: Path) -> list[str]:
        argv = [sys.executable, "-m", "reproductions.baselines.plain_files", "--input", str(source)]
        argv += ["--out", str(case / "out"), "--checkpoint", str(case / "checkpoint")]
        argv += ["--step", step, "--java-options", java_options({})]  # elastream's class cache
        return argv + ([] if max_files is None else ["--max-files", str(max_files)])

    return command


def elastream_pipeline(source: Path, out: Path, function: str, vectorized: bool,
                       max_files: int | None) -> dict:  # fmt: skip
    """files (JSON lines) -> first -> second -> third -> files (Parquet)."""
    options = {} if max_files is None else {"options": {"maxFilesPerTrigger": str(max_files)}}
    names = ["rows", *OPERATORS, "out"]
    return {
        "name": "plain-vs-elastream",
        "sources": [{"name": "rows", "kind": "files", "path": str(source), "format": "json",
                     "schema": SCHEMA, "key": "user", **options}],
        "operators": [{"name": name, "function": function, "vectorized": vectorized,
                       "replicas": {"min": REPLICAS, "max": REPLICAS}} for name in OPERATORS],
        "sinks": [{"name": "out", "kind": "files", "path": str(out), "format": "parquet",
                   "schema": SCHEMA}],
        "streams": [{"from": a, "to": b} for a, b in pairwise(names)],
    }  # fmt: skip


def elastream_command() -> list[str]:
    """`elastream` as a user runs it (the console script beside this interpreter)."""
    script = Path(sys.executable).with_name("elastream")
    return [str(script)] if script.exists() else [sys.executable, "-m", "elastream.cli"]


def elastream(function: str, vectorized: bool, max_files: int | None,
              extra: list[str]) -> Callable:  # fmt: skip
    def command(source: Path, case: Path) -> list[str]:
        spec = case / "pipeline.yaml"
        pipeline = elastream_pipeline(source, case / "out", function, vectorized, max_files)
        spec.write_text(yaml.safe_dump(pipeline, sort_keys=False))
        argv = [*elastream_command(), "run", str(spec), "--out", str(case / "run"), "--quiet"]
        return [*argv, "--policy", "static", "--replicas", str(REPLICAS), *extra]

    return command


def cases(elastream_max_files: int | None, extra: list[str]) -> dict[str, Case]:
    """Every case by name; `extra`: more options of `elastream run`."""
    source = f"maxFilesPerTrigger {elastream_max_files or 'elastream default'}"
    settings = " ".join(extra) or "elastream's defaults otherwise (Spark UI and metrics on)"
    ops = f"r = {REPLICAS}, static, SQLite queues, {source}, {settings}"
    listed = [
        Case("plain-20", f"plain PySpark, 3 x mapInArrow pass-through, maxFilesPerTrigger "
             f"{PLAIN_MAX_FILES}", plain("batches", PLAIN_MAX_FILES)),
        Case("plain-default", "plain PySpark, 3 x mapInArrow pass-through, maxFilesPerTrigger "
             "unset (one batch)", plain("batches", None)),
        Case("plain-rows-20", f"plain PySpark, 3 x mapInArrow with a per-row Python loop "
             f"(to_pylist -> fn(row) -> from_pylist), maxFilesPerTrigger {PLAIN_MAX_FILES}",
             plain("rows", PLAIN_MAX_FILES)),
        Case("elastream", f"elastream, 3 vectorized operators ({VECTORIZED_OPERATOR}), {ops}",
             elastream(VECTORIZED_OPERATOR, True, elastream_max_files, extra)),
        Case("elastream-per-event", f"elastream, 3 per-event operators ({PER_EVENT_OPERATOR}), "
             f"{ops}", elastream(PER_EVENT_OPERATOR, False, elastream_max_files, extra)),
    ]  # fmt: skip
    return {case.name: case for case in listed}


# ---------------------------------------------------------------- measuring


class PartCounter:
    """Rows of the readable Parquet part files in a folder; a file being written (no footer
    yet) or of 0 bytes is skipped and counted as such, and read again at the next look."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.rows: dict[str, int] = {}
        self.unreadable = 0
        self.empty = 0

    def count(self) -> int:
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return 0
        for entry in entries:
            if entry.name in self.rows or not is_part_file(entry.name):
                continue
            try:
                if entry.stat().st_size == 0:
                    self.empty += 1
                    continue
                self.rows[entry.name] = pq.read_metadata(entry.path).num_rows
            except (OSError, ValueError):  # no footer yet (pyarrow.ArrowInvalid is a ValueError)
                self.unreadable += 1
        return sum(self.rows.values())


def is_part_file(name: str) -> bool:
    return name.startswith("part-") and name.endswith(".parquet")


class TreeSampler(threading.Thread):
    """Every SAMPLE_S: the CPU time (user + system) of every live descendant of this process,
    kept at its last sample with the process's kind (KINDS) then, and the RSS of the tree per
    kind at every sample (its peak kept)."""

    def __init__(self, driver: int) -> None:
        super().__init__(daemon=True)
        self.driver = driver
        self.cpu: dict[tuple[int, float], tuple[str, float]] = {}
        self.peak_rss = 0
        self.rss: list[tuple[float, dict[str, int]]] = []  # (monotonic s, bytes per kind)
        self.done = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self.done.is_set():
            rss = dict.fromkeys(KINDS, 0)
            for proc in me.children(recursive=True):
                try:
                    with proc.oneshot():
                        times, key = proc.cpu_times(), (proc.pid, proc.create_time())
                        kind = self.kind(proc)  # anew: spark-submit's shell execs the JVM
                        rss[kind] += proc.memory_info().rss
                except psutil.Error:  # gone, a zombie, or not ours
                    continue
                self.cpu[key] = (kind, times.user + times.system)
            self.rss.append((time.monotonic(), rss))
            self.peak_rss = max(self.peak_rss, sum(rss.values()))
            self.done.wait(SAMPLE_S)

    def kind(self, proc: psutil.Process) -> str:
        if proc.pid == self.driver:
            return "driver"
        if proc.name() == "java":
            return "JVM"
        # Python workers fork from pyspark.daemon or elastream.runtime.spark.daemon; "other":
        # the data sources' planning helpers, elastream's own helpers
        return "workers" if "spark.daemon" in " ".join(proc.cmdline()) else "other"

    def split(self) -> dict[str, float]:
        """CPU-seconds sampled per kind of process."""
        totals = dict.fromkeys(KINDS, 0.0)
        for kind, seconds in self.cpu.values():
            totals[kind] += seconds
        return totals


def children_cpu() -> float:
    """CPU-seconds (user + system) of every reaped descendant of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def become_subreaper() -> bool:
    """Orphaned descendants (a JVM whose Python driver exited first, a pyspark daemon whose JVM
    did) are re-parented to this process, which reaps them: their CPU time then counts in
    getrusage(RUSAGE_CHILDREN) instead of being lost to init (Linux only)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(timeout_s: float) -> tuple[int, int]:
    """Reap the orphans left after a case's process was reaped; those still alive after
    `timeout_s` are killed (they are this run's). Returns (reaped, killed)."""
    reaped, killed, deadline = 0, 0, time.monotonic() + timeout_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped, killed
        if pid:
            reaped += 1
        elif time.monotonic() > deadline and not killed:
            for proc in psutil.Process().children(recursive=True):
                proc.kill()
                killed += 1
        else:
            time.sleep(0.1)


@dataclass
class Run:
    """One case's run: its timeline of (seconds since start, rows out) and what was measured."""

    points: list[tuple[float, int]] = field(default_factory=list)
    exit_code: int | None = None
    killed: bool = False
    stop_s: float | None = None
    cpu_reaped: float = 0.0
    cpu_all: float = 0.0
    cpu_sampled: float = 0.0
    cpu_split: dict[str, float] = field(default_factory=dict)
    rss: list[tuple[float, dict[str, int]]] = field(default_factory=list)  # (s, bytes per kind)
    timed_out: bool = False
    processes: int = 0
    orphans: tuple[int, int] = (0, 0)
    peak_rss_mib: float = 0.0
    load_before: tuple[float, ...] = ()
    load_after: tuple[float, ...] = ()
    own_cpu: float = 0.0
    unreadable: int = 0
    empty: int = 0
    verdict: str = ""
    ok: bool = False

    def at(self, rows: float) -> tuple[float, int] | None:
        """The first sample with at least `rows` out."""
        return next(((t, c) for t, c in self.points if c >= rows), None)

    def first_s(self) -> float | None:
        hit = self.at(1)
        return hit and hit[0]

    def all_s(self, expected: int) -> float | None:
        hit = self.at(expected)
        return hit and hit[0]

    def figure(self, key: str, expected: int) -> float | None:
        """'first', 'all' (seconds), 'rate' (rows/s), 'cpu' (CPU-seconds sampled) or 'rusage'
        (CPU-seconds from getrusage, orphans included)."""
        if key in ("cpu", "rusage"):
            return self.cpu_sampled if key == "cpu" else self.cpu_all
        return {"first": self.first_s, "all": lambda: self.all_s(expected),
                "rate": lambda: self.rate(expected)}[key]()  # fmt: skip

    def own_rss_mib(self, share: float, expected: int) -> float | None:
        """RSS of the driver and the helpers (every process but the JVM and the Python
        workers) at the first sample after `share` of the rows were out: flat while a backlog
        drains if the driver never holds the backlog."""
        hit = self.at(share * expected)
        if hit is None:
            return None
        kinds = next((kinds for t, kinds in self.rss if t >= hit[0]), None)
        return None if kinds is None else (kinds["driver"] + kinds["other"]) / 2**20

    def rate(self, expected: int) -> float | None:
        """Rows/s between the samples where 10 % and 90 % of the rows were out (None when one
        step put both out)."""
        low, high = self.at(0.1 * expected), self.at(0.9 * expected)
        if low is None or high is None or high[0] <= low[0]:
            return None
        return (high[1] - low[1]) / (high[0] - low[0])


def own_cpu() -> float:
    return time.process_time()


def watch(proc: subprocess.Popen, counter: PartCounter, expected: int, timeout_s: float,
          start: float) -> list[tuple[float, int]]:  # fmt: skip
    """Count the rows out every POLL_S until all are, the process ends or time runs out."""
    points = []
    while True:
        ended = proc.poll() is not None
        rows = counter.count()
        points.append((time.monotonic() - start, rows))
        if rows >= expected or ended or points[-1][0] > timeout_s:
            return points
        time.sleep(POLL_S)


def stop(proc: subprocess.Popen, timeout_s: float) -> tuple[int, bool, float]:
    """SIGTERM to the process (not its group), wait; SIGKILL its group after `timeout_s`.
    Returns (exit status, killed, seconds from the signal to the exit)."""
    started = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout_s)
        return code, False, time.monotonic() - started
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(), True, time.monotonic() - started


def run_case(case: Case, source: Path, folder: Path, expected: np.ndarray,
             args: argparse.Namespace) -> Run:  # fmt: skip
    """Run one case in a fresh process and measure it; then check its output."""
    folder.mkdir(parents=True)
    run = Run(load_before=os.getloadavg())
    argv = case.command(source, folder)
    counter = PartCounter(folder / "out")
    cpu_before, own_before = children_cpu(), own_cpu()
    with open(folder / "log.txt", "w") as log:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                start_new_session=True)  # fmt: skip
        sampler = TreeSampler(proc.pid)
        sampler.start()
        run.points = watch(proc, counter, expected.size, args.timeout, start)
        run.timed_out = run.points[-1][1] < expected.size and proc.poll() is None
        run.exit_code, run.killed, run.stop_s = stop(proc, args.stop_timeout)
        run.cpu_reaped = children_cpu() - cpu_before
        run.orphans = reap_orphans(args.stop_timeout)
        run.cpu_all = children_cpu() - cpu_before
    sampler.done.set()
    sampler.join()
    run.own_cpu = own_cpu() - own_before
    run.load_after = os.getloadavg()
    run.cpu_split, run.processes = sampler.split(), len(sampler.cpu)
    run.cpu_sampled = sum(run.cpu_split.values())
    run.peak_rss_mib = sampler.peak_rss / 2**20
    run.rss = [(t - start, kinds) for t, kinds in sampler.rss]
    run.unreadable, run.empty = counter.unreadable, counter.empty
    run.verdict, complete = check_output(folder / "out", expected)
    run.ok = complete and run.exit_code == 0 and not run.killed and not run.timed_out
    if run.timed_out:
        run.verdict += f" (not all out within --timeout {args.timeout:g} s)"
    if not run.ok:
        tail = (folder / "log.txt").read_text()[-3000:]
        print(f"{case.name}: exit {run.exit_code}, {run.verdict}; its log ends:\n{tail}")
    return run


# ---------------------------------------------------------------- checking the output


def committed_files(out: Path) -> set[str]:
    """The part files a sink committed: those Spark's file sink log (`_spark_metadata`) records
    as added, or, in an elastream sink folder, every visible part file (elastream writes a part
    to a hidden `.part-*.tmp` and renames it when whole, so a visible part is a committed one)."""
    log = out / "_spark_metadata"
    if not log.is_dir():
        return {p.name for p in out.glob("part-*.parquet")} if out.is_dir() else set()
    names: set[str] = set()
    for entry in sorted(log.glob("*")):
        if entry.name.startswith(".") or entry.name.endswith(".crc"):
            continue
        for line in entry.read_text().splitlines()[1:]:  # the first line is the version
            record = json.loads(line)
            if record.get("action", "add") == "add":
                names.add(record["path"].rsplit("/", 1)[-1])
    return names


def check_output(out: Path, expected: np.ndarray) -> tuple[str, bool]:
    """Whether the committed output's `n` values are the input's, each once."""
    committed = committed_files(out)
    stray = {p.name for p in out.glob("part-*.parquet")} - committed
    got = (
        pq.read_table([out / name for name in sorted(committed)], columns=["n"])
        .column("n")
        .to_numpy()
        if committed
        else np.array([], dtype=np.int64)
    )
    unique = np.unique(got)
    missing = np.setdiff1d(expected, unique).size
    extra = np.setdiff1d(unique, expected).size
    duplicated = got.size - unique.size
    verdict = "complete, once" if not (missing or extra or duplicated) else (
        f"missing {missing}, extra {extra}, duplicated {duplicated}"
    )  # fmt: skip
    if stray:
        verdict += f" (+{len(stray)} uncommitted part files)"
    return verdict, not (missing or extra or duplicated)


# ---------------------------------------------------------------- the table


def span(values: Sequence[float | None], digits: int) -> str:
    """'min / median' of the values present (one value: itself); '—' when none."""
    present = [v for v in values if v is not None]
    if not present:
        return "—"
    low, mid = min(present), statistics.median(present)
    text = f"{low:,.{digits}f}"
    return text if len(values) == 1 else f"{text} / {mid:,.{digits}f}"


def median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if len(present) == len(values) and present else None


def rows_of_table(runs: list[Run], n: int) -> list[tuple[str, str]]:
    def f(get: Callable[[Run], float | None], digits: int) -> str:
        return span([get(r) for r in runs], digits)

    return [
        ("first row out, s", f(Run.first_s, 1)),
        ("all rows out, s", f(lambda r: r.all_s(n), 1)),
        ("steady rate 10→90 %, rows/s", f(lambda r: r.rate(n), 0)),
        ("CPU s, rusage at the reap", f(lambda r: r.cpu_reaped, 1)),
        ("CPU s, rusage + orphans reaped", f(lambda r: r.cpu_all, 1)),
        ("CPU s, psutil sampled (0.5 s)", f(lambda r: r.cpu_sampled, 1)),
        *((f"  of which {kind}", f(lambda r, k=kind: r.cpu_split[k], 1)) for kind in KINDS),
        ("processes sampled", f(lambda r: r.processes, 0)),
        ("orphans reaped / killed", ", ".join(f"{a} / {b}" for a, b in (r.orphans for r in runs))),
        ("peak RSS of the tree, MiB", f(lambda r: r.peak_rss_mib, 0)),
        *((f"driver + helpers RSS at {share:.0%} out, MiB",
           f(lambda r, s=share: r.own_rss_mib(s, n), 0)) for share in RSS_AT),
        ("SIGTERM → exit, s", f(lambda r: r.stop_s, 1)),
        ("exit status", ", ".join(f"{r.exit_code}{' (killed)' * r.killed}" for r in runs)),
        ("part-file looks unreadable / 0 B", ", ".join(f"{r.unreadable} / {r.empty}"
                                                       for r in runs)),
        ("output (n values vs input)", "; ".join(sorted({r.verdict for r in runs}))),
        ("load 1/5/15 min before", ", ".join(load(r.load_before) for r in runs)),
        ("load 1/5/15 min after", ", ".join(load(r.load_after) for r in runs)),
        ("orchestrator's own CPU s", f(lambda r: r.own_cpu, 1)),
    ]  # fmt: skip


def load(values: tuple[float, ...]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def print_table(results: dict[str, list[Run]], n: int) -> None:
    columns = {name: dict(rows_of_table(runs, n)) for name, runs in results.items()}
    labels = [label for label, _ in rows_of_table(next(iter(results.values())), n)]
    widths = {
        name: max(len(name), *(len(v) for v in col.values())) for name, col in columns.items()
    }
    label_width = max(len(label) for label in labels)
    print(f"| {'':{label_width}} | " + " | ".join(f"{k:{widths[k]}}" for k in columns) + " |")
    print(f"|{'-' * (label_width + 2)}|" + "|".join("-" * (widths[k] + 2) for k in columns) + "|")
    for label in labels:
        cells = " | ".join(f"{columns[k][label]:>{widths[k]}}" for k in columns)
        print(f"| {label:{label_width}} | {cells} |")


# (what, figure, elastream case, plain case, how compared, issue 37's target)
COMPARISONS = [
    ("vectorized steady rate", "rate", "elastream", "plain-20", "/", "≥ 0.7, goal ≥ 1.0"),
    ("vectorized all rows out", "all", "elastream", "plain-default", "/", "≤ 1.5"),
    ("vectorized first row out", "first", "elastream", "plain-20", "-", "≤ +5 s"),
    ("vectorized CPU-seconds", "cpu", "elastream", "plain-20", "/", "≤ 1.3"),
    ("vectorized CPU-seconds", "cpu", "elastream", "plain-default", "/", ""),
    ("vectorized CPU-seconds (rusage)", "rusage", "elastream", "plain-20", "/", ""),
    ("per-event steady rate", "rate", "elastream-per-event", "plain-rows-20", "/", "≥ 0.7"),
    ("per-event all rows out", "all", "elastream-per-event", "plain-rows-20", "/", ""),
    ("per-event CPU-seconds", "cpu", "elastream-per-event", "plain-rows-20", "/", ""),
    ("per-event CPU-seconds (rusage)", "rusage", "elastream-per-event", "plain-rows-20", "/", ""),
]
CPU_NOTE = """\
CPU: 'rusage' is getrusage(RUSAGE_CHILDREN) of this process around the case, at the reap of the
case's process and after the orphans it left (the JVM outlives its driver) were reaped here (this
process is their subreaper). It misses the Python workers: pyspark's daemon sets SIGCHLD to
SIG_IGN, so the kernel reaps its workers and their time reaches no parent's rusage. The sampler
sees every live process but misses up to 0.5 s of each one's last CPU and processes living under
0.5 s. The CPU ratios use the sampled figure."""


def ratio_lines(results: dict[str, list[Run]], n: int) -> list[str]:
    """The comparisons of issue 37 (medians over the repeats) whose two cases both ran."""
    lines = []
    for what, key, ours, theirs, how, target in COMPARISONS:
        if not {ours, theirs} <= results.keys():
            continue
        a = median([r.figure(key, n) for r in results[ours]])
        b = median([r.figure(key, n) for r in results[theirs]])
        sign = "÷" if how == "/" else "−"
        goal = f" (issue 37: {target})" if target else ""
        lines.append(f"{what}, {ours} {sign} {theirs}: {compare(a, b, how)}{goal}")
    return lines


def compare(a: float | None, b: float | None, how: str) -> str:
    """a / b as 'x.xx×', or a - b as '+x.x s'; '—' when a figure is missing."""
    if a is None or b is None or (how == "/" and not b):
        return "—"
    return f"{a / b:.2f}×" if how == "/" else f"{a - b:+.1f} s"


# ---------------------------------------------------------------- main


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="rows in the file set")
    parser.add_argument("--files", type=int, default=200, help="files the rows are spread over")
    parser.add_argument("--only", default=None, help="comma-separated cases to run (default all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case (min / median)")
    parser.add_argument("--keep", action="store_true", help="keep the input and the outputs")
    add_quiet(parser)  # also: only the table and the ratios printed
    parser.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp one)")
    parser.add_argument(
        "--elastream-max-files", type=int, default=None,
        help="maxFilesPerTrigger of elastream's files source (default: elastream's own)",
    )  # fmt: skip
    parser.add_argument(
        "--elastream-args", type=shlex.split, default=[],
        help="more options of `elastream run`: --elastream-args='--no-metrics --interval 2'",
    )  # fmt: skip
    parser.add_argument("--timeout", type=float, default=900.0, help="s a case may take")
    parser.add_argument(
        "--stop-timeout", type=float, default=180.0,
        help="s from SIGTERM to the exit before the case's process group is killed",
    )  # fmt: skip
    args = parser.parse_args(argv)
    known = cases(args.elastream_max_files, args.elastream_args)
    args.cases = args.only.split(",") if args.only else list(known)
    unknown = [name for name in args.cases if name not in known]
    if unknown:
        parser.error(f"--only: unknown case {', '.join(unknown)} (cases: {', '.join(known)})")
    return args


def header(args: argparse.Namespace, source: Path, known: dict[str, Case]) -> list[str]:
    size = sum(p.stat().st_size for p in source.glob("*.json"))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    lines = [
        f"plain PySpark vs elastream, {time.strftime('%Y-%m-%d %H:%M')}, commit {commit or '?'}, "
        f"{os.cpu_count()} cores, load {load(os.getloadavg())}",
        f"input: {args.events:,} JSON-lines rows ({SCHEMA}) in {args.files} files, "
        f"{size / args.events:.0f} bytes a row",
    ]
    lines += [f"  {name}: {known[name].about}" for name in args.cases]
    if args.repeat > 1:
        lines.append(f"{args.repeat} runs of each case, interleaved: figures are min / median")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    known = cases(args.elastream_max_files, args.elastream_args)
    reaping = become_subreaper()
    work = args.dir or Path(tempfile.mkdtemp(prefix="plain-vs-elastream-"))
    source = work / "input"
    write_input(source, args.events, args.files)
    expected = input_numbers(source)
    for line in header(args, source, known):
        print(line, flush=True)
    if not reaping:
        print("not a subreaper: orphans' CPU time is lost to rusage", flush=True)
    results: dict[str, list[Run]] = {name: [] for name in args.cases}
    runs = [(k, name) for k in range(args.repeat) for name in args.cases]
    for k, name in steps(runs, "cases", quiet=args.quiet, label=False):
        folder = work / f"{name}-{k}"
        run = run_case(known[name], source, folder, expected, args)
        results[name].append(run)
        if not args.quiet:
            print(f"{name} #{k + 1}: first row {run.first_s()} s, all rows "
                  f"{run.all_s(expected.size)} s, CPU {run.cpu_all:.1f} s, "
                  f"exit {run.exit_code}, {run.verdict}, load {load(run.load_before)} → "
                  f"{load(run.load_after)}", flush=True)  # fmt: skip
        if not args.keep:
            shutil.rmtree(folder)
    print()
    print_table(results, expected.size)
    print(CPU_NOTE)
    print()
    for line in ratio_lines(results, expected.size):
        print(line)
    if args.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work) if args.dir is None else shutil.rmtree(source)
    failed = [name for name, runs in results.items() if not all(r.ok for r in runs)]
    if failed:
        print(f"FAILED: {', '.join(failed)} (output not complete and once, or the process failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
