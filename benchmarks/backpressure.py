"""Backpressure on Spark: an outside producer appends to a Redis stream at a low rate, then for a
while at more than the operator's replica pool can process, then low again. Printed per MAPE
interval: the offered and the ingested rate, the largest queue length seen against the bound,
the Redis backlog and the replicas; then the totals (nothing dropped, every entry ingested once).
Usage (starts Spark: under the shared lock):
    flock /work/spark.lock .venv/bin/python benchmarks/backpressure.py \
        [--overload-s 60] [--high 100] [--low 5] [--warm-s 15] [--after-s 100] [--td 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.config import make_config
from elastream.control.policy import Decision
from elastream.model.pipeline import pipeline_from_dict
from elastream.model.snapshot import Snapshot
from elastream.report.progress import add_quiet, clock
from elastream.runner.engines import run_pipeline
from elastream.runtime.queues import open_store
from reproductions.harness.redis_server import LocalRedis

STREAM = "offers"
OP = "work"
TICK_S = 0.1  # the producer's step


@dataclass(frozen=True)
class Scenario:
    """Rates (events/s) and phase lengths (s); the operator's cost per event and its pool."""

    low: float = 5.0
    high: float = 100.0  # beyond 3 replicas at 40 ms an event (75 events/s at most)
    warm_s: float = 15.0
    overload_s: float = 60.0
    after_s: float = 100.0  # the backlog drains at capacity minus `low`
    service_ms: float = 40.0
    max_replicas: int = 3
    bound: int = 500  # ingest_bound: events pending in the operator's queue at most
    td: float = 5.0

    @property
    def length_s(self) -> float:
        return self.warm_s + self.overload_s + self.after_s

    def rate(self, elapsed: float) -> float:
        overload = self.warm_s <= elapsed < self.warm_s + self.overload_s
        return self.high if overload else self.low


class Producer:
    """A thread appending to the stream at the scenario's rate from `begin()` on, logging
    (wall time, entries sent so far) every tick."""

    def __init__(self, url: str, scenario: Scenario) -> None:
        self.client = redis.Redis.from_url(url)
        self.scenario = scenario
        self.log: list[tuple[float, int]] = []
        self.sent = 0
        self.started_at = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def begin(self) -> None:
        self.started_at = time.time()
        self.log.append((self.started_at, 0))
        self.thread.start()

    def _run(self) -> None:
        owed = 0.0
        next_tick = self.started_at
        while not self.stop.is_set():
            elapsed = time.time() - self.started_at
            if elapsed >= self.scenario.length_s:
                break
            owed += self.scenario.rate(elapsed) * TICK_S
            count, owed = int(owed), owed - int(owed)
            pipe = self.client.pipeline(transaction=False)
            for k in range(self.sent, self.sent + count):
                pipe.xadd(STREAM, {"user": f"u{k % 13}", "seq": str(k)})
            pipe.execute()
            self.sent += count
            self.log.append((time.time(), self.sent))
            next_tick += TICK_S
            time.sleep(max(0.0, next_tick - time.time()))

    def sent_by(self, wall: float) -> int:
        """Entries sent by wall time `wall` (the last tick logged before it)."""
        sent = 0
        for when, n in self.log:
            if when > wall:
                break
            sent = n
        return sent


class QueueWatch:
    """A thread sampling the operator's pending events every 0.1 s; `take_max()` gives the
    largest since the last call."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.peak = 0
        self.overall = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        store = open_store(self.address)  # started once the run is up: the queue exists
        while not self.stop.is_set():
            pending = store.pending(OP)
            self.peak = max(self.peak, pending)
            self.overall = max(self.overall, pending)
            time.sleep(0.1)

    def take_max(self) -> int:
        peak, self.peak = self.peak, 0
        return peak


@dataclass
class Row:
    """One interval as the benchmark saw it."""

    t: float
    offered: float  # events/s the producer appended during the interval
    ingested: float  # events/s the source appended to the operator's queue
    processed: float  # events/s the operator processed: the pipeline's capacity when saturated
    queue_max: int
    queue_end: int
    backlog: int | None
    replicas: int
    dropped: int


@dataclass
class Outcome:
    rows: list[Row] = field(default_factory=list)
    sent: int = 0
    events_in: int = 0
    dropped: int = 0
    duplicates: int = 0
    queue_max: int = 0
    load: tuple[str, str] = ("", "")


def pipeline(url: str, scenario: Scenario):
    return pipeline_from_dict(
        {
            "name": "backpressure",
            "sources": [
                {"name": "s", "kind": "redis", "url": url, "stream": STREAM, "key": "user"}
            ],
            "operators": [
                {
                    "name": OP,
                    "function": "elastream.examples.synthetic:passthrough",
                    "replicas": {"min": 1, "max": scenario.max_replicas},
                    "service_time_ms": scenario.service_ms,
                }
            ],
            "sinks": [{"name": "out"}],
            "streams": [{"from": "s", "to": OP}, {"from": OP, "to": "out"}],
        }
    )


def run(work: Path, scenario: Scenario, quiet: bool = False) -> Outcome:
    """The scenario against a fresh redis-server in `work`, under the psps policy."""
    server = LocalRedis(work / "redis")
    server.start()
    outcome = Outcome()
    try:
        producer = Producer(server.url, scenario)
        queues = str(work / "run" / "queues.db")
        watch = QueueWatch(queues)
        config = make_config(
            interval_s=scenario.td,
            out=work / "run",
            duration=scenario.length_s + 3 * scenario.td,  # the producer starts one td in
            drain_s=60,
            ingest_bound=scenario.bound,
            policy="psps",
            history=work / "history.sqlite",
            queues=queues,
        )
        last = [0.0]

        def observe(snapshot: Snapshot, decision: Decision) -> None:
            now = time.time()
            if not producer.started_at:  # the first interval: the source is reading from now on
                producer.begin()
                watch.thread.start()
                last[0] = now
                return
            offered = producer.sent_by(now) - producer.sent_by(last[0])
            stats = snapshot.op(OP)
            row = Row(
                t=now - producer.started_at,
                offered=offered / (now - last[0]),
                ingested=snapshot.source_events / snapshot.interval_s,
                processed=stats.processed / snapshot.interval_s,
                queue_max=watch.take_max(),
                queue_end=stats.queue,
                backlog=dict(snapshot.source_backlog).get("s"),
                replicas=stats.replicas,
                dropped=stats.dropped_overflow + stats.dropped_timeout,
            )
            last[0] = now
            outcome.rows.append(row)
            if not quiet:
                print_row(row, scenario)

        outcome.load = (uptime(), "")
        result = run_pipeline(pipeline(server.url, scenario), config, observers=[observe])
        outcome.load = (outcome.load[0], uptime())
        watch.stop.set()
        producer.stop.set()
        audit = open_store(queues).audit()
        outcome.sent = producer.sent
        outcome.events_in = audit.events_in
        totals = result.totals
        outcome.dropped = audit.timeout + audit.overflow + totals.dropped_timeout
        outcome.dropped += totals.dropped_overflow
        outcome.duplicates = audit.duplicate_sink_roots + audit.roots_with_two_fates
        outcome.queue_max = watch.overall
    finally:
        server.stop()
    return outcome


def uptime() -> str:
    """The load average (1, 5, 15 min): the figures are measured on a shared machine."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_row(row: Row, scenario: Scenario) -> None:
    backlog = "-" if row.backlog is None else f"{row.backlog:,}"
    print(
        f"t {row.t:6.1f}  offered {row.offered:6.0f}/s  ingested {row.ingested:6.0f}/s  "
        f"processed {row.processed:6.0f}/s  "
        f"queue max {row.queue_max:5d} (bound {scenario.bound})  backlog {backlog:>7}  "
        f"replicas {row.replicas}  dropped {row.dropped}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--overload-s", type=float, default=60.0)
    parser.add_argument("--high", type=float, default=100.0)
    parser.add_argument("--low", type=float, default=5.0)
    parser.add_argument("--warm-s", type=float, default=15.0)
    parser.add_argument("--after-s", type=float, default=100.0)
    parser.add_argument("--td", type=float, default=5.0)
    add_quiet(parser)
    args = parser.parse_args()
    scenario = Scenario(
        low=args.low,
        high=args.high,
        warm_s=args.warm_s,
        overload_s=args.overload_s,
        after_s=args.after_s,
        td=args.td,
    )
    length = args.warm_s + args.overload_s + args.after_s
    with tempfile.TemporaryDirectory() as tmp, clock(length, "backpressure", quiet=args.quiet):
        outcome = run(Path(tmp), scenario)
        log = Path(tmp) / "run" / "spark.log"
        print(f"spark.log {log.stat().st_size if log.exists() else 'absent'} bytes")
    print(f"load average before {outcome.load[0]}, after {outcome.load[1]}")
    print(
        f"sent {outcome.sent:,}, ingested {outcome.events_in:,}, dropped {outcome.dropped}, "
        f"duplicates {outcome.duplicates}, largest queue {outcome.queue_max} "
        f"(bound {scenario.bound}), replicas at most "
        f"{max(r.replicas for r in outcome.rows)} of {scenario.max_replicas}"
    )


if __name__ == "__main__":
    main()
