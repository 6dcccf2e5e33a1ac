"""Rescale pause of a stateful operator on real Spark: a keyed count holding 10,000 or 1,000,000
keys in the queue store is rescaled 2 → 4 → 1 replicas at a constant rate, next to the same
pipeline without state (a key_hash pass-through). Per rescale: the median micro-batch duration
before it, the first batch planned with the new r and its excess, the batches delayed (longer
than 1.5 × that median in the 10 s after), and the added end-to-end latency (mean of the 6 s
after minus the 6 s before).

Prints figures (no asserts). Usage:
    nice -n 5 .venv/bin/python benchmarks/state_rescale.py [--rate R] [--out D]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import median

import numpy as np

from elastream.config import make_config
from elastream.control.policy import Decision
from elastream.examples.keyed import key_of
from elastream.model.grouping import key_group
from elastream.model.pipeline import Pipeline, pipeline_from_dict
from elastream.model.state import StateWrite, decode_value, encode_value
from elastream.report.progress import add_quiet, steps
from elastream.runtime.queues.base import QueueStore
from elastream.runtime.queues.records import share_commit
from elastream.runtime.queues.sqlite import SqliteQueueStore
from elastream.runtime.spark.runtime import SparkEngine
from elastream.workloads import Trace

OP = "count"
GROUPS = 128
IDLE_S = 5  # trace seconds at rate 0 first (the queries warm up)
LOAD_S = 45  # then this many at the constant rate
SCHEDULE = ((0.0, 2), (IDLE_S + 15.0, 4), (IDLE_S + 30.0, 1))  # (from trace time, r)
REPEAT = 2
DELAYED_FACTOR = 1.5
AFTER_S = 10.0
LATENCY_WINDOW_S = 6.0


@dataclass(frozen=True)
class Case:
    name: str
    keys: int  # keys preloaded into state (0: stateless)
    generator: str
    function: str


CASES = (
    Case("no state, 10k keys", 0, "generate_10k", "elastream.examples.synthetic:passthrough"),
    Case("state, 10k keys", 10_000, "generate_10k", "elastream.examples.keyed:count"),
    Case("state, 1M keys", 1_000_000, "generate_1m", "elastream.examples.keyed:count"),
)


def pipeline_of(case: Case) -> Pipeline:
    return pipeline_from_dict(
        {
            "name": "keyed1",
            "sources": [{"name": "src", "generator": f"elastream.examples.keyed:{case.generator}"}],
            "operators": [
                {
                    "name": OP,
                    "function": case.function,
                    "grouping": "key_hash",
                    "stateless": case.keys == 0,
                    "key_groups": GROUPS,
                    "et_ms": 1.0,
                    "service_time_ms": 1.0,
                    "replicas": {"min": 1, "max": 4, "initial": 2},
                }
            ],
            "sinks": [{"name": "out"}],
            "streams": [{"from": "src", "to": OP}, {"from": OP, "to": "out"}],
        }
    )


class PreloadedEngine(SparkEngine):
    """The Spark engine with `keys` counts of 0 written into the operator's state (one committed
    share) once its store is ready, before Spark and the run's clock start."""

    def __init__(self, *args, keys: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.keys = keys
        self.preload_s = 0.0

    def open_store(self) -> None:
        super().open_store()
        if self.keys:
            self.preload_s = preload(self.store, self.keys)


def preload(store: QueueStore, keys: int) -> float:
    """Write `keys` counts of 0 into the operator's state in one committed share; seconds."""
    began = time.perf_counter()
    zero = encode_value(0)
    names = (key_of(i, keys) for i in range(keys))
    writes = [StateWrite(key_group(k, GROUPS), k, zero) for k in names]
    writes.sort(key=lambda w: (w.group, w.key))  # the table's order: faster inserts
    store.commit_share(share_commit(OP, "preload", 0, (), (), 0.0, writes))
    return time.perf_counter() - began


def first_reads(keys: int, folder: Path, batch: int = 200) -> tuple[float, float]:
    """What a new owner pays to read a batch's state: `read_state` of `batch` keys spread over
    `keys` on a fresh connection (cold: a replica's first batch), then on the same (warm); ms."""
    folder.mkdir(parents=True, exist_ok=True)
    store = SqliteQueueStore(folder / "reads.db")
    preload(store, keys)
    store.close()
    step = keys // batch
    wanted = [(key_group(k, GROUPS), k) for k in (key_of(i * step + 1, keys) for i in range(batch))]
    fresh = SqliteQueueStore(folder / "reads.db")
    timings = []
    for _ in range(2):
        began = time.perf_counter()
        found = fresh.read_state(OP, wanted)
        timings.append((time.perf_counter() - began) * 1000)
        assert len(found) == batch, len(found)
    fresh.close()
    return timings[0], timings[1]


def target(t: float) -> int:
    return [r for start, r in SCHEDULE if t >= start][-1]


def stamp(progress: dict) -> float:
    return datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()


def run_case(case: Case, rate: float, out: Path) -> dict:
    trace = Trace(np.array([0.0] * IDLE_S + [rate] * LOAD_S))
    config = make_config(  # one query per operator: its batches are the operator's own
        policy="static",
        interval_s=2.0,
        out=out,
        drain_s=20,
        event_timeout_s=None,
        queue_capacity=None,
        spark={"layout": "operator"},
    )
    engine = PreloadedEngine(pipeline_of(case), config, trace, keep_session=True, keys=case.keys)
    progress: dict[int, dict] = {}
    rescales: list[tuple[float, int, int]] = []  # (wall time, from r, to r)
    try:
        engine.start()
        while not engine.finished():
            snap = engine.collect()
            for p in engine.queries.running[OP].recentProgress:
                progress[int(p["batchId"])] = p
            r_now, r_next = snap.op(OP).replicas, target(snap.t)
            if r_next != r_now:
                rescales.append((time.time(), r_now, r_next))
                engine.enact(Decision.of({OP: r_next}, {OP: "scripted"}))
        for p in engine.queries.running[OP].recentProgress:
            progress[int(p["batchId"])] = p
        audit = engine.store.audit()
        counted = state_total(engine) if case.keys else None
        batches = sorted(
            (stamp(p), p["durationMs"]["triggerExecution"] / 1000.0, p["numInputRows"])
            for p in progress.values()
            if p["numInputRows"] > 0
        )
        return {
            "preload_s": engine.preload_s,
            "events": audit.events_in,
            "to_sink": audit.to_sink,
            "counted": counted,
            "rescales": [measure(engine, batches, *rescale) for rescale in rescales],
        }
    finally:
        engine.stop()


def state_total(engine: SparkEngine) -> int:
    return sum(decode_value(v) for _, _, v in engine.store.state_items(OP))


def measure(
    engine: SparkEngine, batches: list[tuple[float, float, int]], at: float, r0: int, r1: int
) -> dict:
    """The pause one rescale at wall time `at` caused (see the module docstring)."""
    before = [d for t, d, _ in batches if at - AFTER_S <= t < at]
    after = [(t, d) for t, d, _ in batches if at <= t < at + AFTER_S]
    steady = median(before) if before else float("nan")
    first = after[0][1] if after else float("nan")
    _, lat_before = engine.store.sink_latency(at - LATENCY_WINDOW_S, at)
    _, lat_after = engine.store.sink_latency(at, at + LATENCY_WINDOW_S)
    return {
        "change": f"{r0}->{r1}",
        "steady_batch_s": steady,
        "first_batch_s": first,
        "excess_s": first - steady,
        "delayed": sum(1 for _, d in after if d > DELAYED_FACTOR * steady),
        "batches_after": len(after),
        "added_latency_ms": (lat_after or 0.0) - (lat_before or 0.0),
        "latency_before_ms": lat_before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0, help="events/s while loaded")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="runs of every case")
    parser.add_argument("--reads-only", action="store_true", help="only the state read costs")
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temp one)")
    add_quiet(parser)
    args = parser.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="state_rescale_"))
    if not args.reads_only:
        spark_cases(args.rate, args.repeat, base, args.quiet)
    print("a new owner's first state read, 200 keys (SQLite, fresh connection, then again):")
    for keys in sorted({c.keys for c in CASES if c.keys}):
        shutil.rmtree(base / f"reads-{keys}", ignore_errors=True)
        cold, warm = first_reads(keys, base / f"reads-{keys}")
        print(f"  {keys:>9,} keys in state: cold {cold:6.1f} ms, warm {warm:6.1f} ms")


def spark_cases(rate: float, repeat: int, base: Path, quiet: bool = False) -> None:
    print(f"rate {rate:.0f} ev/s, r: 2 -> 4 at 15 s -> 1 at 30 s of load; {GROUPS} key groups")
    header = (
        f"{'case':<20} {'change':<7} {'steady batch':>12} {'first after':>11} {'excess':>8} "
        f"{'delayed':>8} {'added latency':>14} {'latency before':>15}"
    )
    print(header)
    cases = [(run, case) for run in range(repeat) for case in CASES]
    for run, case in steps(cases, "rescale cases", quiet=quiet, label=False):
        out = base / f"{case.name.replace(' ', '_').replace(',', '')}-{run}"
        shutil.rmtree(out, ignore_errors=True)
        result = run_case(case, rate, out)
        for m in result["rescales"]:
            print(
                f"{case.name:<20} {m['change']:<7} {m['steady_batch_s']:>11.2f}s "
                f"{m['first_batch_s']:>10.2f}s {m['excess_s']:>+7.2f}s "
                f"{m['delayed']:>4}/{m['batches_after']:<3} {m['added_latency_ms']:>+12.0f}ms "
                f"{(m['latency_before_ms'] or 0):>13.0f}ms"
            )
        counted = result["counted"]
        check = "" if counted is None else f", state total {counted} (want {result['events']})"
        print(
            f"{'':<20} events {result['events']}, at sink {result['to_sink']}, "
            f"preload {result['preload_s']:.1f} s{check}"
        )


if __name__ == "__main__":
    main()
