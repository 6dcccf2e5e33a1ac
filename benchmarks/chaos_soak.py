"""Chaos soak: a Redis-in, keyed-count, Redis-out pipeline on Redis queues under a seeded nemesis
(SIGKILL of a Python worker, a plan-time helper, an executor, the driver then `--resume`; a
redis-server restart; SIGSTOP/SIGCONT past a timeout; a full checkpoint disk; poison events the
first operator fails on), faults overlapping on purpose, then a verdict on every event counted
from the input stream alone: each produced event read in once and delivered once (a poison event:
failed, listed with its reason), nothing at the sink that was never produced, the keyed state
equal to a recount of the inputs' user field, no query stuck, the summary's counters equal to the
audit, every planned fault run (or the run fails, unless the kind is --optional); how many
instants had two or more faults active at once; each fault's time to recover.

Usage (one command, seeded; writes OUT/report.json and OUT/report.md):
    nice -n 5 .venv/bin/python benchmarks/chaos_soak.py --minutes 32 --faults 55 \
        --cluster --seed 1 --out /tmp/soak
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgpack
import redis
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.config import make_config
from elastream.model.batch import offset_of
from elastream.model.state import decode_value
from elastream.report.progress import add_quiet, clock
from elastream.runtime.queues import RedisQueueStore
from elastream.runtime.spark.cluster import ClusterState
from elastream.runtime.spark.runtime import store_address
from reproductions.harness.redis_server import LocalRedis

KINDS = (
    "kill_python_worker",
    "kill_plan_helper",
    "kill_executor",
    "restart_redis",
    "kill_driver_resume",
    "pause",
    "disk_full",
    "poison",
)
DEFAULT_KINDS = tuple(k for k in KINDS if k != "poison")  # a seeded soak injects no poison
WEIGHTS = {"kill_driver_resume": 1, "disk_full": 1}  # the others weigh 2 (a driver kill is long)
IN_STREAM, OUT_STREAM, KEYS = "clicks", "results", 50
SOURCE = "s"  # the pipeline's source, whose name starts every root
POISON = "poison"  # the input field that marks a poison event (the first operator raises on it)
SAMPLE_S = 1.0  # monitor period
WINDOW_S = 2.0  # throughput interval of the recovery measure
PRE_S = 10.0  # the pre-fault throughput is the sink's rate over this many seconds before it
BACK_AT = 0.9  # recovered: an interval at this fraction of the pre-fault throughput (or caught up)
CKPT_TMPFS_MB = 256
MAX_DRIVER_EXITS = 30  # a driver that keeps ending by itself (a bad setting) ends the soak

PRODUCER = """
import json, math, random, sys, time, redis
url, seconds, lo, hi, period, seed, keys, out = sys.argv[1:]
seconds, lo, hi, period, keys = float(seconds), float(lo), float(hi), float(period), int(keys)
rng = random.Random(int(seed))
client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
import signal
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
t0, seq, retries = time.time(), 0, 0
while not stop and time.time() - t0 < seconds:
    t = time.time() - t0
    rate = lo + (hi - lo) * 0.5 * (1 - math.cos(2 * math.pi * t / period))
    fields = {"user": f"u{rng.randrange(keys)}", "seq": str(seq)}
    written = False
    while not written:  # explicit ids: a retried XADD the server applied is refused, not doubled
        try:
            client.xadd("clicks", fields, id=f"{seq + 1}-1")
            written = True
        except (redis.ConnectionError, redis.TimeoutError):
            retries += 1
            time.sleep(0.2)
        except redis.ResponseError as exc:
            if "equal or smaller" not in str(exc):
                raise
            written = True  # the first attempt was applied before its reply was lost
        if stop:
            break  # told to stop while the server was away
    if not written:
        break
    seq += 1
    time.sleep(rng.expovariate(rate))
open(out, "w").write(json.dumps({"produced": seq, "retries": retries}))
"""


def _value(text: str) -> Any:
    """A Redis sink field's value: JSON for what was not a string, else the string itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class Fault:
    """One planned fault: its kind, target, when it began and ended (s since the load began),
    why it did not run (if it did not), and the measured time to recover."""

    kind: str
    at: float
    target: str = ""
    ended: float | None = None
    not_run: str = ""
    overlaps: bool = False
    recovery_s: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


# A Python worker that runs replicas: forked by elastream's daemon (or Spark's own, when a run
# resets spark.python.daemon.module) for pyspark.worker; Spark's daemons for its data source
# lookup and planning workers (`pyspark.daemon pyspark.sql.worker.…`) run no replica.
REPLICA_WORKER = "spark.daemon pyspark.worker"


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, full command line)."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True)
    table = {}
    for line in ps.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3:
            table[int(parts[0])] = (int(parts[1]), parts[2])
    return table


def below(roots: list[int], table: dict[int, tuple[int, str]]) -> list[int]:
    """Every process under `roots` (not the roots themselves)."""
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (parent, _) in table.items():
        children[parent].append(pid)
    found, todo = [], list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def roots(
    inputs: list[tuple[str, dict[str, str]]], outputs: list[dict[str, str]]
) -> tuple[list[str], list[str]]:
    """The root of every input entry (id, fields) and of every sink entry (fields): the source's
    k-th entry is the root of position k (`model.batch.position`), and a sink entry names its
    root's position in `_elastream_root`. The one place that knows the format of roots."""
    outs = [str(offset_of(int(f["_elastream_root"]))) for f in outputs]
    return [str(k) for k in range(len(inputs))], outs


def user_fields(entry: dict[str, str]) -> dict[str, Any]:
    """A sink entry's user columns, each a JSON value when it is not a string."""
    return {k: _value(v) for k, v in entry.items() if not k.startswith("_elastream_")}


def failed_events(store_address: str) -> list[dict[str, str]]:
    """The events an operator failed on, as the Redis store keeps them (docs/runtime.md: `P` =
    the address's prefix and a colon; `P queues` names the queues, `P err:<queue>` maps event id
    -> msgpack(root, message, payload)): root and reason each."""
    p = parse_qs(urlsplit(store_address).query)["prefix"][0] + ":"
    client = redis.Redis.from_url(store_address.split("?")[0])
    failed = []
    for queue in client.smembers(f"{p}queues"):
        for value in client.hvals(f"{p}err:{queue.decode()}"):
            root, message = msgpack.unpackb(value, raw=False)[:2]
            failed.append({"root": str(offset_of(root)), "reason": message})
    return sorted(failed, key=lambda f: f["root"])


def overlaps(faults: list[Fault]) -> tuple[int, int]:
    """Instants at which two or more faults were active at once (a fault is active from its
    injection to the end of its action: SIGCONT, the server back, the driver relaunched, the disk
    freed; a SIGKILL is an instant), and the most active at once. Each injection that lands while
    another fault is active is one such instant; each such fault is marked `overlaps`."""
    instants, most = 0, min(len(faults), 1)
    ordered = sorted(faults, key=lambda f: f.at)
    for i, fault in enumerate(ordered):
        active = [g for g in ordered[:i] if g.ended is not None and g.ended >= fault.at]
        fault.overlaps = bool(active)
        instants += fault.overlaps
        most = max(most, len(active) + 1)
    return instants, most


class Soak:
    """The pipeline's processes, the producer, the monitor and the nemesis of one soak."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.out = Path(args.out or tempfile.mkdtemp(prefix="chaos-soak-")).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.redis = LocalRedis(self.out / "redis")
        self.ckpt = self.out / "checkpoints"
        self.tmpfs = False
        self.cluster: ClusterState | None = None
        self.driver: subprocess.Popen | None = None
        self.producer: subprocess.Popen | None = None
        self.driver_lock = threading.Lock()
        self.redis_lock = threading.Lock()
        self.t0 = 0.0
        self.samples: list[tuple[float, int, int]] = []  # t, produced, delivered (stream lengths)
        self.monitor_gaps = 0
        self.stop_monitor = threading.Event()
        self.faults: list[Fault] = []
        self.driver_exits: list[tuple[int, list[str]]] = []  # drivers that ended unbidden, why
        self.resumes = 0
        self.flow_at = 0.0  # when the sink got its first event (the schedule counts from there)
        self.unavailable: dict[str, str] = {}  # kind -> why this machine cannot run it
        self.poisoned = 0  # poison events the nemesis appended to the input

    # ----- set-up -------------------------------------------------------------------------

    def now(self) -> float:
        return time.time() - self.t0

    def setup(self) -> None:
        self.redis.start()
        self.ckpt.mkdir(exist_ok=True)
        self.tmpfs = self._mount_tmpfs()
        if self.args.cluster:
            state = self.out / "cluster.json"
            cmd = [sys.executable, "-m", "elastream.cli", "cluster", "up", "--workers", "2"]
            up = subprocess.run([*cmd, "--cores", "2", "--state", str(state)],
                                capture_output=True, text=True, timeout=300)  # fmt: skip
            if up.returncode != 0:
                raise SystemExit(f"cluster up failed: {up.stderr}")
            self.cluster = ClusterState.load(state)
        else:
            self.unavailable["kill_executor"] = "local master: the executor is the driver's JVM"
        if not self.tmpfs:
            self.unavailable.setdefault("disk_full", "no tmpfs for the checkpoints (needs root)")
        (self.out / "pipeline.yaml").write_text(yaml.safe_dump(self.pipeline()))
        (self.out / "settings.yaml").write_text(yaml.safe_dump(self.settings()))

    def _mount_tmpfs(self) -> bool:
        """A small tmpfs at the checkpoint folder, so that filling it fills no shared disk."""
        if os.geteuid() != 0 or "disk_full" not in self.planned_kinds():
            return False
        mount = ["mount", "-t", "tmpfs", "-o", f"size={CKPT_TMPFS_MB}m", "tmpfs", str(self.ckpt)]
        done = subprocess.run(mount, capture_output=True, text=True)
        if done.returncode != 0:
            self.unavailable["disk_full"] = f"no tmpfs for the checkpoints ({done.stderr.strip()})"
            return False
        return True

    def pipeline(self) -> dict[str, Any]:
        url = self.redis.url
        return {
            "name": "chaos_soak",
            "sources": [{"name": "s", "kind": "redis", "url": url, "stream": IN_STREAM,
                         "key": "user"}],
            "operators": [
                {"name": "ingest", "function": "elastream.examples.synthetic:fail_marked",
                 "replicas": {"min": 1, "max": 3}},
                {"name": "count", "function": "elastream.examples.keyed:count",
                 "grouping": "key_hash", "stateless": False, "key_groups": 16,
                 "replicas": {"min": 1, "max": 3}, "service_time_ms": self.args.service_ms},
            ],
            "sinks": [{"name": "out", "kind": "redis", "url": url, "stream": OUT_STREAM}],
            "streams": [{"from": "s", "to": "ingest"}, {"from": "ingest", "to": "count"},
                        {"from": "count", "to": "out"}],
        }  # fmt: skip

    def settings(self) -> dict[str, Any]:
        spark: dict[str, Any] = {"checkpoints": str(self.ckpt), "max_restarts": 8}
        if self.cluster is not None:
            spark["master"] = self.cluster.master_url
            if self.cluster.auth_file is not None:  # `cluster up` turns RPC authentication on
                spark["auth_file"] = self.cluster.auth_file
            # a paused executor past this timeout is declared lost (its heartbeats stop)
            timeout = f"{self.args.network_timeout_s}s"
            spark["conf"] = {"spark.network.timeout": timeout,
                             "spark.network.timeoutInterval": "10s",
                             "spark.executor.heartbeatInterval": "3s"}  # fmt: skip
        return {"spark": spark}

    def teardown(self) -> None:
        if self.producer is not None and self.producer.poll() is None:
            self.producer.kill()
        if self.driver is not None and self.driver.poll() is None:
            os.killpg(self.driver.pid, signal.SIGKILL)
            self.driver.wait(timeout=60)
        if self.cluster is not None:
            down = [sys.executable, "-m", "elastream.cli", "cluster", "down", "--state"]
            down.append(str(self.out / "cluster.json"))
            subprocess.run(down, capture_output=True, timeout=120)
        self.redis.stop()
        if self.tmpfs:
            subprocess.run(["umount", str(self.ckpt)], check=True)

    # ----- the driver ---------------------------------------------------------------------

    def start_driver(self, resume: bool) -> None:
        cmd = [sys.executable, "-m", "elastream.cli", "run", str(self.out / "pipeline.yaml"),
               "--out", str(self.out / "run"), "--queues", self.redis.url, "--interval-s", "2",
               "--quiet", "--no-metrics", "--config", str(self.out / "settings.yaml"),
               "--seed", str(self.args.seed)]  # fmt: skip
        if resume:
            cmd.append("--resume")
        log = open(self.out / "driver.log", "a")  # noqa: SIM115 (the process owns it)
        log.write(f"\n==== {'resume' if resume else 'start'} at {self.now():.1f} s ====\n")
        log.flush()
        self.driver = subprocess.Popen(
            cmd, start_new_session=True, stdout=log, stderr=subprocess.STDOUT, text=True
        )

    def driver_log(self) -> str:
        """The current driver's part of driver.log."""
        return (self.out / "driver.log").read_text().rsplit("\n==== ", 1)[-1]

    def watch_driver(self) -> None:
        """A driver that ends by itself during the soak is a finding: counted, and resumed."""
        with self.driver_lock:
            if self.driver is not None and self.driver.poll() is not None:
                errors = [x for x in self.driver_log().splitlines() if "error:" in x]
                self.driver_exits.append((self.driver.returncode, errors[-1:]))
                if len(self.driver_exits) > MAX_DRIVER_EXITS:
                    raise SystemExit(f"the driver ended by itself {len(self.driver_exits)} times: "
                                     f"see {self.out / 'driver.log'}")  # fmt: skip
                print(f"chaos: the driver exited by itself ({self.driver.returncode}) at "
                      f"{self.now():.0f} s: resuming", file=sys.stderr)  # fmt: skip
                self.start_driver(resume=True)
                self.resumes += 1

    # ----- monitor ------------------------------------------------------------------------

    def monitor(self) -> None:
        client = redis.Redis.from_url(self.redis.url, socket_timeout=1, socket_connect_timeout=1)
        while not self.stop_monitor.wait(SAMPLE_S):
            try:
                sample = (self.now(), client.xlen(IN_STREAM), client.xlen(OUT_STREAM))
            except redis.RedisError:
                self.monitor_gaps += 1  # the server is down or paused: no sample this second
                continue
            self.samples.append(sample)

    def delivered(self) -> int:
        return self.samples[-1][2] if self.samples else 0

    # ----- nemesis ------------------------------------------------------------------------

    def planned_kinds(self) -> set[str]:
        """The fault kinds the plan asks for: --schedule's, else --kinds."""
        if self.args.schedule:
            return {x.split(":")[1] for x in self.args.schedule}
        return set(self.args.kinds)

    def schedule(self) -> list[tuple[float, str]]:
        """(time, kind) of every fault: --schedule's (a kind this machine cannot run is planned
        all the same, and reported as not run), else seeded over the kinds it can run; a share
        of them lands during the recovery from the one before (a few seconds after it)."""
        if self.args.schedule:
            return [(float(at), kind) for at, kind in (x.split(":") for x in self.args.schedule)]
        kinds = [k for k in self.args.kinds if k not in self.unavailable]
        weights = [WEIGHTS.get(k, 2) for k in kinds]
        span = self.args.minutes * 60 - self.args.warmup_s - 30  # the last 30 s have no fault
        mean_gap = span / self.args.faults
        plan, t = [], self.args.warmup_s
        for _ in range(self.args.faults):
            kind = self.rng.choices(kinds, weights)[0]
            plan.append((t, kind))
            overlap = self.rng.random() < self.args.overlap
            t += self.rng.uniform(2, 6) if overlap else self.rng.uniform(0.5, 1.5) * mean_gap
        return plan

    def nemesis(self, plan: list[tuple[float, str]]) -> list[threading.Thread]:
        threads = []
        while self.delivered() == 0:  # Spark's start-up (slow under load) is not a fault
            self.watch_driver()
            time.sleep(0.5)
        self.flow_at = self.now()
        for at, kind in plan:
            while self.now() < self.flow_at + at:
                self.watch_driver()
                time.sleep(0.2)
            fault = Fault(kind=kind, at=round(self.now(), 1))
            self.faults.append(fault)
            if kind in self.unavailable:
                fault.not_run = self.unavailable[kind]
                print(f"chaos: {fault.at:7.1f} s {kind:20s} not run: {fault.not_run}",
                      file=sys.stderr)  # fmt: skip
                continue
            thread = threading.Thread(target=self.inject, args=(fault,), daemon=True)
            thread.start()
            threads.append(thread)
        return threads

    def inject(self, fault: Fault) -> None:
        action: Callable[[Fault], None] = getattr(self, f"_{fault.kind}")
        try:
            action(fault)
        except ProcessLookupError:
            fault.not_run = "the target ended before the signal"
        fault.ended = round(self.now(), 1)
        what = fault.target or f"not run: {fault.not_run}"
        print(f"chaos: {fault.at:7.1f} s {fault.kind:20s} {what}", file=sys.stderr)

    def roots(self) -> list[int]:
        roots = [self.driver.pid] if self.driver is not None else []
        if self.cluster is not None:
            roots += [p.pid for p in self.cluster.processes if p.role.startswith("worker")]
        return roots

    def find(self, marker: str, forked_only: bool = False) -> int | None:
        """A random process under the driver or the workers whose command line has `marker`
        (with `forked_only`: a worker forked by such a process, not the forking daemon),
        waiting up to --target-wait-s for one to exist."""
        deadline = time.time() + self.args.target_wait_s
        while time.time() < deadline:
            table = process_table()
            found = [p for p in below(self.roots(), table) if marker in table[p][1]]
            if forked_only:
                found = [p for p in found if table[p][0] in found]
            if found:
                return self.rng.choice(sorted(found))
            time.sleep(0.5)
        return None

    def _kill(self, fault: Fault, marker: str, forked_only: bool = False) -> None:
        pid = self.find(marker, forked_only)
        if pid is None:
            fault.not_run = f"no {marker} process within {self.args.target_wait_s:.0f} s"
            return
        fault.target = f"{marker} pid {pid}"
        fault.at = round(self.now(), 1)  # when the signal went, not when the wait began
        os.kill(pid, signal.SIGKILL)

    def _kill_python_worker(self, fault: Fault) -> None:
        self._kill(fault, REPLICA_WORKER, forked_only=True)

    def _kill_plan_helper(self, fault: Fault) -> None:
        self._kill(fault, "python_streaming_source_runner")

    def _kill_executor(self, fault: Fault) -> None:
        self._kill(fault, "CoarseGrainedExecutorBackend")

    def _restart_redis(self, fault: Fault) -> None:
        with self.redis_lock:  # after a pause of the server has ended
            fault.at = round(self.now(), 1)
            fault.target = f"redis-server pid {self.redis.proc.pid}"
            self.redis.kill(signal.SIGKILL)
            time.sleep(self.rng.uniform(1, 4))
            self.redis.start()

    def _kill_driver_resume(self, fault: Fault) -> None:
        with self.driver_lock:
            assert self.driver is not None
            fault.target = f"driver pid {self.driver.pid} (its process group)"
            if self.driver.poll() is None:
                os.killpg(self.driver.pid, signal.SIGKILL)
            self.driver.wait(timeout=60)
            self.start_driver(resume=True)
            self.resumes += 1

    def _pause(self, fault: Fault) -> None:
        choices = ["redis-server", "python worker"]
        if self.cluster is not None:
            choices.append("executor")
        what = self.rng.choice(choices)
        if what == "redis-server":
            with self.redis_lock:
                pid = self.redis.proc.pid
                self._stop_for(fault, pid, what)
            return
        marker = REPLICA_WORKER if what == "python worker" else "CoarseGrainedExecutorBackend"
        pid = self.find(marker, forked_only=what == "python worker")
        if pid is None:
            fault.not_run = f"no {what} within {self.args.target_wait_s:.0f} s"
            return
        self._stop_for(fault, pid, what)

    def _stop_for(self, fault: Fault, pid: int, what: str) -> None:
        fault.target = f"{what} pid {pid} stopped {self.args.pause_s:.0f} s"
        fault.at = round(self.now(), 1)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(self.args.pause_s)
        os.kill(pid, signal.SIGCONT)

    def _disk_full(self, fault: Fault) -> None:
        ballast = self.ckpt / "ballast"
        free = os.statvfs(self.ckpt)
        size = free.f_bavail * free.f_frsize
        fault.target = f"checkpoint tmpfs full ({size // 2**20} MiB ballast) {self.args.full_s} s"
        with open(ballast, "wb") as f:
            try:
                os.posix_fallocate(f.fileno(), 0, size)
            except OSError as exc:  # the last blocks: tmpfs accounts in pages
                fault.detail["fallocate"] = str(exc)
        time.sleep(self.args.full_s)
        ballast.unlink()

    def _poison(self, fault: Fault) -> None:
        """Append --poison-events entries marked POISON to the input stream, between the
        producer's entries (ids `<n>-2`, `<n>-3`, ... after the producer's last `<n>-1`)."""
        client = redis.Redis.from_url(self.redis.url, socket_timeout=5, socket_connect_timeout=2)
        written: list[str] = []
        deadline = time.time() + self.args.target_wait_s
        while len(written) < self.args.poison_events and time.time() < deadline:
            try:
                last = client.xrevrange(IN_STREAM, count=1)[0][0].decode()
                ms, seq = map(int, last.split("-"))
                fields = {"user": POISON, POISON: str(len(written))}
                written.append(client.xadd(IN_STREAM, fields, id=f"{ms}-{seq + 1}").decode())
            except redis.ResponseError as exc:  # the producer wrote meanwhile: read again
                if "equal or smaller" not in str(exc):
                    raise
            except (redis.ConnectionError, redis.TimeoutError, IndexError):
                time.sleep(0.2)  # the server is away (a restart, a pause), or no entry yet
        fault.target = f"{len(written)} poison events ({', '.join(written)})"
        self.poisoned += len(written)
        if len(written) < self.args.poison_events:
            fault.not_run = f"{len(written)} of {self.args.poison_events} poison events written"

    # ----- the run ------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        self.setup()
        try:
            return self._run()
        finally:
            self.teardown()

    def _run(self) -> dict[str, Any]:
        args = self.args
        load_s = args.minutes * 60
        self.t0 = time.time()
        self.producer = producer = subprocess.Popen([sys.executable, "-c", PRODUCER, self.redis.url,
                                     str(load_s + 3600), str(args.rate_min), str(args.rate_max),
                                     str(args.period_s), str(args.seed), str(KEYS),
                                     str(self.out / "producer.json")])  # fmt: skip
        self.start_driver(resume=False)
        monitor = threading.Thread(target=self.monitor, daemon=True)
        monitor.start()
        threads = self.nemesis(self.schedule())
        for thread in threads:
            thread.join()
        while self.now() < self.flow_at + load_s:  # the load lasts --minutes of flow
            self.watch_driver()
            time.sleep(0.5)
        producer.send_signal(signal.SIGTERM)
        while producer.poll() is None:
            self.watch_driver()
            time.sleep(0.5)
        assert producer.returncode == 0, "the producer failed"
        produced = json.loads((self.out / "producer.json").read_text())
        produced["produced"] += self.poisoned
        drained = self.drain(produced["produced"] - self.poisoned)
        stopped = self.stop_driver()
        self.stop_monitor.set()
        monitor.join()
        self.measure_recovery()
        audit = self.audit(produced, drained, stopped)
        return self.report(audit)

    def drain(self, produced: int) -> bool:
        """Wait until the sink has as many entries as were produced (or no progress for
        `--drain-s` seconds): False if the pipeline stalled with events missing."""
        last, since = -1, time.time()
        while time.time() - since < self.args.drain_s:
            self.watch_driver()
            now = self.delivered()
            if now >= produced:
                return True
            if now != last:
                last, since = now, time.time()
            time.sleep(1)
        return False

    def stop_driver(self) -> dict[str, Any]:
        """SIGTERM (a graceful stop); a driver that does not end in 180 s is stuck."""
        with self.driver_lock:
            assert self.driver is not None
            self.driver.send_signal(signal.SIGTERM)
            try:
                code = self.driver.wait(timeout=180)
            except subprocess.TimeoutExpired:
                os.killpg(self.driver.pid, signal.SIGKILL)
                return {"exit": None, "stuck": True}
            return {"exit": code, "stuck": False}

    # ----- audit and report ---------------------------------------------------------------

    def measure_recovery(self) -> None:
        """Time to recover: from a fault's end (SIGCONT, the server back, the driver relaunched)
        to the start of the first WINDOW_S interval whose sink rate is back at BACK_AT of the
        rate over the PRE_S before the fault began, or, once the sink has moved again, the
        first time the backlog (produced minus delivered) is back within one interval's worth
        of its pre-fault level (the load may have fallen meanwhile)."""
        samples = self.samples
        for fault in self.faults:
            if fault.not_run or fault.ended is None or fault.kind == "poison":  # no outage
                continue
            before = [s for s in samples if fault.at - PRE_S <= s[0] <= fault.at]
            if len(before) < 2:
                continue
            pre_rate = (before[-1][2] - before[0][2]) / max(before[-1][0] - before[0][0], 1e-9)
            pre_backlog = before[-1][1] - before[-1][2]
            fault.detail["pre_rate"] = round(pre_rate, 2)
            after = [s for s in samples if s[0] >= fault.ended]
            slack = max(pre_backlog, 0) + pre_rate * WINDOW_S  # a backlog within one interval
            for i, (t, produced, delivered) in enumerate(after):
                ahead = [s for s in after[i:] if s[0] <= t + WINDOW_S]
                if len(ahead) < 2:
                    break
                rate = (ahead[-1][2] - delivered) / (ahead[-1][0] - t)
                moved = delivered > after[0][2]  # the sink delivered since the fault ended
                caught_up = moved and produced - delivered <= slack
                if (rate > 0 and rate >= BACK_AT * pre_rate) or caught_up:
                    fault.recovery_s = round(t - fault.ended, 1)
                    break

    def audit(self, produced: dict[str, int], drained: bool, stopped: dict) -> dict[str, Any]:
        """Every event accounted for from the input stream alone: its root (`roots`), its user
        field, its poison mark; the sink's entries matched to those roots; the store only for
        what it must say itself (the keyed state, the failed events and their reasons, what is
        still pending)."""
        client = redis.Redis.from_url(self.redis.url, decode_responses=True)
        entries = client.xrange(IN_STREAM)
        outputs = [fields for _, fields in client.xrange(OUT_STREAM)]
        inputs, out_roots = roots(entries, outputs)
        poison = {root for root, (_, f) in zip(inputs, entries, strict=True) if POISON in f}
        at_sink = Counter(out_roots)
        known = set(inputs)
        lost = [r for r in inputs if r not in at_sink and r not in poison]
        config = make_config(out=self.out / "run", queues=self.redis.url)
        address = store_address(config)
        store = RedisQueueStore(address)
        store_audit = store.audit()
        failed = failed_events(address)
        # keyed state: the store's counts against a recount of the inputs' own user field
        recount = Counter(f["user"] for r, (_, f) in zip(inputs, entries, strict=True)
                          if r not in poison)  # fmt: skip
        stored = {key: decode_value(value) for _, key, value in store.state_items("count")}
        mismatched = sorted(k for k in set(recount) | set(stored) if recount[k] != stored.get(k))
        running = defaultdict(list)  # the running counts emitted per key must be 1..n
        for f, root in zip(outputs, out_roots, strict=True):
            if root in known:
                payload = user_fields(f)
                running[payload["key"]].append(payload["count"])
        bad_runs = sorted(
            k for k in recount if sorted(running[k]) != list(range(1, recount[k] + 1))
        )
        summary_path = self.out / "run" / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        n_delivered = len(known & set(at_sink))
        counters = {
            "events_in": (summary.get("events_in"), len(inputs)),
            "events_out": (summary.get("events_out"), n_delivered),
        }
        failed_roots = [f["root"] for f in failed]
        return {
            "produced": produced["produced"],
            "poison_injected": len(poison),
            "producer_retries": produced["retries"],
            "events_in": len(inputs),
            "delivered": n_delivered,
            "sink_entries": len(outputs),
            "duplicated": sum(n - 1 for n in at_sink.values() if n > 1),
            "lost": len(lost),
            "lost_examples": lost[:10],
            "failed": store_audit.failed,
            "failed_events": failed,
            "failed_not_poison": sorted(set(failed_roots) - poison),
            "poison_not_failed": sorted(poison - set(failed_roots)),
            "poison_delivered": sorted(poison & set(at_sink)),
            "foreign_roots": len(set(at_sink) - known),
            "foreign_examples": sorted(set(at_sink) - known)[:10],
            "state_keys": len(stored),
            "state_mismatches": len(mismatched),
            "state_mismatch_examples": {k: (recount[k], stored.get(k)) for k in mismatched[:10]},
            "running_count_gaps": len(bad_runs),
            "drained": drained,
            "pending_in_store": store_audit.pending,
            "driver_stop": stopped,
            "driver_ended_by_itself": self.driver_exits,
            "resumes": self.resumes,
            "query_restarts": summary.get("query_restarts"),
            "reconfigurations": summary.get("reconfigurations"),
            "summary_vs_audit": {k: {"summary": a, "audit": b} for k, (a, b) in counters.items()},
            "summary_matches_audit": all(a == b for a, b in counters.values()),
            "store_audit": asdict(store_audit),
        }

    def not_run(self) -> list[dict[str, Any]]:
        """Every planned fault that did not run, and why: a kind this machine cannot run
        (planned by --schedule, or asked by --kinds and left out of the seeded plan), or a
        target that was not there; `required` unless its kind is --optional."""
        missing = [{"kind": f.kind, "at": f.at, "why": f.not_run} for f in self.faults
                   if f.not_run]  # fmt: skip
        if not self.args.schedule:
            missing += [{"kind": k, "at": None, "why": self.unavailable[k]}
                        for k in self.args.kinds if k in self.unavailable]  # fmt: skip
        return [{**m, "required": m["kind"] not in self.args.optional} for m in missing]

    def report(self, audit: dict[str, Any]) -> dict[str, Any]:
        injected = [f for f in self.faults if not f.not_run]
        instants, most = overlaps(injected)
        per_kind = {}
        for kind in sorted({f.kind for f in injected}):
            rec = [f.recovery_s for f in injected if f.kind == kind and f.recovery_s is not None]
            per_kind[kind] = {
                "count": sum(1 for f in injected if f.kind == kind),
                "recovered": len(rec),
                "recovery_median_s": statistics.median(rec) if rec else None,
                "recovery_max_s": max(rec) if rec else None,
            }
        report = {
            "seed": self.args.seed,
            "minutes": self.args.minutes,
            "cluster": self.cluster is not None,
            "faults_planned": len(self.faults),
            "faults_injected": len(injected),
            "instants_two_or_more_active": instants,
            "most_active_at_once": most,
            "not_run": self.not_run(),
            "unavailable": self.unavailable,
            "per_kind": per_kind,
            "faults": [asdict(f) for f in injected],
            "audit": audit,
            "monitor_gaps_s": self.monitor_gaps,
            "samples": self.samples,  # (t, produced, delivered): the recovery can be recomputed
        }
        report["verdict"] = verdict(report)
        report["ok"] = all(ok for _, _, ok in report["verdict"])
        (self.out / "report.json").write_text(json.dumps(report, indent=2))
        (self.out / "report.md").write_text(markdown(report))
        return report


def verdict(report: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(check, what was measured, passed) of every check the soak is judged by."""
    a = report["audit"]
    poison = a["poison_injected"]
    failed_ok = (a["failed"] == len(a["failed_events"]) == poison and not a["failed_not_poison"]
                 and not a["poison_not_failed"] and not a["poison_delivered"])  # fmt: skip
    required = [m for m in report["not_run"] if m["required"]]
    missing = ", ".join(f"{m['kind']} ({m['why']})" for m in report["not_run"]) or "none"
    return [
        ("events read in = produced", f"{a['events_in']:,} = {a['produced']:,}",
         a["events_in"] == a["produced"]),
        ("lost (inputs never at the sink, poison aside)", f"{a['lost']}", a["lost"] == 0),
        ("duplicated at the sink", f"{a['duplicated']}", a["duplicated"] == 0),
        ("sink roots never produced", f"{a['foreign_roots']}", a["foreign_roots"] == 0),
        ("failed = poison injected, each listed", f"{a['failed']} = {poison}", failed_ok),
        ("keyed state = recount of the inputs' user",
         f"{a['state_keys']} keys, {a['state_mismatches']} mismatched",
         a["state_mismatches"] == 0 and a["state_keys"] > 0),
        ("running counts 1..n per key", f"{a['running_count_gaps']} gaps",
         a["running_count_gaps"] == 0),
        ("drained, nothing pending", f"{a['drained']}, {a['pending_in_store']} pending",
         a["drained"] and a["pending_in_store"] == 0),
        ("driver stopped cleanly, never ended by itself",
         f"exit {a['driver_stop']['exit']}, {len(a['driver_ended_by_itself'])} own exits",
         a["driver_stop"] == {"exit": 0, "stuck": False} and not a["driver_ended_by_itself"]),
        ("summary = audit", f"{a['summary_vs_audit']}", a["summary_matches_audit"]),
        ("planned faults run", f"{report['faults_injected']} of {report['faults_planned']}, "
         f"not run: {missing}", not required),
    ]  # fmt: skip


def markdown(report: dict[str, Any]) -> str:
    a = report["audit"]
    lines = [
        f"Seed {report['seed']}, {report['minutes']} min, "
        f"{'2-worker standalone cluster' if report['cluster'] else 'local master'}: "
        f"{report['faults_injected']} faults; {report['instants_two_or_more_active']} instants "
        f"with two or more faults active (at most {report['most_active_at_once']} at once); "
        f"verdict: {'PASS' if report['ok'] else 'FAIL'}.",
        "",
        "| check | measured | verdict |",
        "|---|---|---|",
        *(f"| {check} | {measured} | {'ok' if ok else 'FAILED'} |"
          for check, measured, ok in report["verdict"]),
        "",
        "| fault | count | recovered | recovery median | recovery max |",
        "|---|---|---|---|---|",
    ]  # fmt: skip
    for kind, k in report["per_kind"].items():
        med, top = k["recovery_median_s"], k["recovery_max_s"]
        lines.append(f"| {kind} | {k['count']} | {k['recovered']} | "
                     f"{'—' if med is None else f'{med:.1f} s'} | "
                     f"{'—' if top is None else f'{top:.1f} s'} |")  # fmt: skip
    lines += [
        "",
        "| # | active | kind | target | overlaps | recovery |",
        "|---|---|---|---|---|---|",
    ]
    for i, f in enumerate(report["faults"], 1):
        rec = "not within the run" if f["recovery_s"] is None else f"{f['recovery_s']:.1f} s"
        rec = "—" if f["kind"] == "poison" else rec  # nothing stops: no recovery to measure
        lines.append(f"| {i} | {f['at']:.1f}–{f['ended']:.1f} s | {f['kind']} | {f['target']} | "
                     f"{'yes' if f['overlaps'] else ''} | {rec} |")  # fmt: skip
    for m in report["not_run"]:
        at = "" if m["at"] is None else f" at {m['at']:.0f} s"
        need = "required: the run fails" if m["required"] else "optional"
        lines.append(f"\n{m['kind']}{at}: not run: {m['why']} ({need})")
    for f in a["failed_events"]:
        lines.append(f"\nfailed: {f['root']}: {f['reason']}")
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1, help="seed of the nemesis and the producer")
    p.add_argument("--minutes", type=float, default=32, help="length of the load, minutes")
    p.add_argument("--faults", type=int, default=55, help="faults to inject")
    p.add_argument("--overlap", type=float, default=0.3,
                   help="share of faults injected 2-6 s after the previous one")  # fmt: skip
    p.add_argument("--warmup-s", type=float, default=60, help="seconds before the first fault")
    p.add_argument("--cluster", action="store_true", help="a 2-worker standalone cluster")
    p.add_argument("--kinds", nargs="+", default=list(DEFAULT_KINDS), choices=KINDS,
                   help="fault kinds of the seeded plan (poison: only when named)")  # fmt: skip
    p.add_argument("--optional", nargs="+", default=[], choices=KINDS, metavar="KIND",
                   help="kinds this machine may not run (reported as not run; any other kind "
                   "planned and not run fails the soak)")  # fmt: skip
    p.add_argument(
        "--poison-events",
        type=int,
        default=3,
        help="events one poison fault appends (the first operator raises on them)",
    )
    p.add_argument(
        "--schedule",
        nargs="+",
        metavar="SECONDS:KIND",
        help="these faults instead of a seeded schedule (e.g. 40:restart_redis)",
    )
    p.add_argument("--rate-min", type=float, default=5, help="producer's lowest rate, events/s")
    p.add_argument("--rate-max", type=float, default=40, help="producer's highest rate")
    p.add_argument("--period-s", type=float, default=120, help="period of the rate's rise and fall")
    p.add_argument("--service-ms", type=float, default=20, help="keyed count's ms per event")
    p.add_argument("--pause-s", type=float, default=40, help="SIGSTOP to SIGCONT, seconds")
    p.add_argument("--network-timeout-s", type=int, default=30,
                   help="spark.network.timeout on the cluster (below --pause-s)")  # fmt: skip
    p.add_argument("--target-wait-s", type=float, default=120,
                   help="a fault whose process is not there yet (a query or driver starting) "
                   "waits this long for it, then is reported as not run")  # fmt: skip
    p.add_argument("--full-s", type=float, default=10, help="seconds the checkpoint disk is full")
    p.add_argument("--drain-s", type=float, default=300, help="seconds without sink progress "
                   "after the load before the run counts as stuck")  # fmt: skip
    p.add_argument("--out", help="output folder (default: a new temporary one)")
    add_quiet(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    print(f"uptime before: {os.getloadavg()}", file=sys.stderr)
    with clock(args.minutes * 60, "chaos soak (the load)", quiet=args.quiet):
        report = Soak(args).run()
    print(f"uptime after: {os.getloadavg()}", file=sys.stderr)
    print(markdown(report))
    print(json.dumps({k: v for k, v in report["audit"].items() if k != "store_audit"}, indent=1))
    return report


if __name__ == "__main__":
    sys.exit(0 if main()["ok"] else 1)
