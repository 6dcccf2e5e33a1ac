"""Latency of the modelling service's jobs on a synthetic word-count history (printed only).

Usage: python benchmarks/modeling_service.py [--days 2] [--interval-s 60] [--requests 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.history import HistoryStore
from elastream.report.progress import add_quiet
from elastream.report.progress import steps as steps_of
from elastream.service.app import create_app
from elastream.service.operations import Modeller
from elastream.service.planners import PLANNERS
from elastream.service.server import BackgroundServer
from reproductions.caladrius.synthetic import WORDCOUNT_GRAPH, wordcount_history


def timed_job(client: httpx.Client, path: str, body: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    location = client.post(path, json=body).headers["location"]
    while (job := client.get(location).json())["status"] == "pending":
        time.sleep(0.002)
    if job["status"] != "done":
        raise RuntimeError(f"{path}: {job['error']}")
    return time.perf_counter() - start, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=float, default=2.0)
    parser.add_argument("--interval-s", type=float, default=60.0)
    parser.add_argument("--requests", type=int, default=20)
    add_quiet(parser)
    args = parser.parse_args()
    steps = int(args.days * 86400 / args.interval_s)
    t = np.arange(steps) * args.interval_s
    rates = 300 + 250 * np.sin(2 * np.pi * t / 86400)
    with tempfile.TemporaryDirectory() as tmp:
        store = HistoryStore(Path(tmp) / "history.db")
        par = {"spout": 1, "splitter": 3, "counter": 4}
        started = time.perf_counter()
        rows = wordcount_history("r1", rates, par, interval_s=args.interval_s)
        store.record(rows)
        print(f"history: {len(rows)} rows ({steps} intervals) recorded in "
              f"{time.perf_counter() - started:.2f} s")  # fmt: skip
        app = create_app(Modeller(store), PLANNERS)
        with BackgroundServer(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as client:
            base = {"pipeline": "wordcount", "graph": WORDCOUNT_GRAPH}
            cold, cached = [], []
            for k in steps_of(range(args.requests), "prediction jobs", quiet=args.quiet):
                body = {**base, "parallelism": {"splitter": 2 + k % 6}, "source_rate": 100.0 + k}
                cold.append(timed_job(client, "/predictions", body)[0])
                cached.append(timed_job(client, "/predictions", body)[0])
            cold_ms, cached_ms = (1000 * statistics.median(x) for x in (cold[1:], cached))
            print(f"prediction job, POST → done: first {1000 * cold[0]:.0f} ms (reads and fits "
                  f"the history); then median {cold_ms:.1f} ms for a new parallelism/rate "
                  f"(fit reused), {cached_ms:.1f} ms for an identical request")  # fmt: skip
            for model in ("summary", "seasonal-profile", "holt-winters"):
                body = {**base, "forecast": {"model": model, "horizon_s": 3600}}
                first, _ = timed_job(client, "/forecasts", body)
                again, _ = timed_job(client, "/forecasts", {**body, "sources": ["spout"]})
                print(f"forecast job {model:<17} {1000 * first:8.1f} ms; same history, new "
                      f"request (fitted model reused) {1000 * again:7.1f} ms")  # fmt: skip
            plan_body = {
                **base,
                "forecast": {"model": "seasonal-profile", "horizon_s": 3600},
                "max_parallelism": {"spout": 1, "splitter": 16, "counter": 16},
            }
            elapsed, job = timed_job(client, "/plans/proactive", plan_body)
            plan = {c["name"]: c["parallelism"] for c in job["result"]["components"]}
            print(f"proactive plan job {1000 * elapsed:.1f} ms: {plan} "
                  f"at {job['result']['rate']:.0f}/s")  # fmt: skip
        store.close()


if __name__ == "__main__":
    main()
