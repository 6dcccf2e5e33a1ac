"""Speed of the simulator: one hour of a 10-operator pipeline at up to 10,000 events/s.

Target (issue 3): one simulated hour in at most 5 s on the 2-core machine with 0.1 s steps. Each
line prints the wall and CPU seconds, the ratio of simulated to wall time, and the run's headline
metrics, so a slow configuration shows what it was doing. No asserts: figures only.

Usage:
    .venv/bin/python benchmarks/sim_speed.py [--hours 1] [--peak-rate 10000] [--operators 10]
        [--data-dir ../shared/data] [--quick]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from elastream.config import RunConfig
from elastream.model.pipeline import Pipeline, pipeline_from_dict
from elastream.report.progress import add_quiet, steps
from elastream.runner.engines import simulate
from elastream.runtime.sim import SimSettings, profile_pipeline
from elastream.workloads import Trace, TraceError, resolve_trace

TWITTER = "twitter_sample_per_second_3days.txt"
SERVICE_MS = 0.5  # 2000 events/s per replica: 10,000 events/s needs 5 replicas per operator


@dataclass(frozen=True)
class Case:
    label: str
    grouping: str = "load_balancing"
    policy: str = "psps"
    replicas: int | None = None
    sim: tuple[tuple[str, object], ...] = ()
    td: float = 5.0
    constant: bool = False  # the peak rate all the time instead of the trace


CASES = (
    Case("psps, load_balancing"),
    Case("psps, lb, constant peak", constant=True),
    Case("psps, shuffle", grouping="shuffle"),
    Case("psps, round_robin", grouping="round_robin"),
    Case("psps, key_hash (16 keys)", grouping="key_hash"),
    Case("static r=8, load_balancing", policy="static", replicas=8),
    Case("static r=3 (short at peaks)", policy="static", replicas=3),
    Case("psps, micro_batch", sim=(("queue_model", "micro_batch"),)),
    Case("psps, pipeline", sim=(("queue_model", "pipeline"),)),
    Case("psps, restart model, td 30", sim=(("reconfiguration", "restart"),), td=30.0),
    Case("psps, et_noise 0.2", sim=(("et_noise", 0.2),)),
    Case("psps, step 0.05 s", sim=(("step_s", 0.05),)),
)


def chain(n_ops: int, grouping: str) -> Pipeline:
    """src -> op1 -> ... -> opN -> sink, synthetic pass-through operators, pools of 1..8."""
    ops = [f"op{i}" for i in range(1, n_ops + 1)]
    return pipeline_from_dict(
        {
            "name": f"chain{n_ops}",
            "sources": [{"name": "src", "generator": "elastream.examples.synthetic:generate"}],
            "operators": [
                {
                    "name": o,
                    "function": "elastream.examples.synthetic:passthrough",
                    "grouping": grouping,
                    "service_time_ms": SERVICE_MS,
                    "replicas": {"min": 1, "max": 8},
                }
                for o in ops
            ],
            "sinks": [{"name": "sink"}],
            "streams": [{"from": a, "to": b} for a, b in pairwise(["src", *ops, "sink"])],
        }
    )


def workload(hours: float, peak: float, data_dir: Path | None) -> Trace:
    """The first hours of the real Twitter sample trace, rescaled to `peak`; a constant rate if
    the data folder is missing."""
    seconds = int(hours * 3600)
    try:
        return resolve_trace(TWITTER, data_dir).sliced(0, seconds).rescaled(peak)
    except (TraceError, FileNotFoundError, ValueError) as exc:
        print(f"(no real trace: {exc}; using a constant {peak:g} events/s)")
        return Trace(np.full(seconds, peak), name="constant")


def run_case(case: Case, n_ops: int, trace: Trace) -> None:
    if case.constant:
        trace = Trace(np.full(trace.rates.size, trace.peak), trace.step_s, "constant")
    pipeline = chain(n_ops, case.grouping)
    config = RunConfig(
        policy=case.policy,
        replicas=case.replicas,
        interval_s=case.td,
        event_timeout_s=30.0,
        queue_capacity=100_000,
        drain_s=60.0,
        engine="sim",
    )
    settings = SimSettings(**dict(case.sim))
    profile_pipeline(pipeline, settings, config.seed)  # the profiling pass, cached: not timed
    wall, cpu = time.perf_counter(), time.process_time()
    result = simulate(pipeline, config, trace, settings)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    s = result.summary
    simulated = result.summary.intervals * config.interval_s
    print(
        f"{case.label:<28} {wall:6.2f} {cpu:6.2f} {simulated / wall:7.0f}x "
        f"{s.replicas_mean:6.1f} {s.processed_ratio:7.4f} {s.latency_ms_mean or 0:9.0f} "
        f"{s.latency_ms_p99 or 0:9.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--peak-rate", type=float, default=10_000.0)
    parser.add_argument("--operators", type=int, default=10)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="only the first two cases")
    add_quiet(parser)
    args = parser.parse_args()
    trace = workload(args.hours, args.peak_rate, args.data_dir)
    st = trace.stats()
    print(
        f"trace {trace.name}: {st.duration_s:.0f} s, mean {st.mean:.0f} events/s, "
        f"peak {st.max:.0f} events/s, {st.total_events:,.0f} events; {args.operators} operators "
        f"of {SERVICE_MS} ms/event; td 5 s and steps of 0.1 s unless said"
    )
    print(
        f"{'case':<28} {'wall s':>6} {'cpu s':>6} {'sim/wall':>8} {'r mean':>6} "
        f"{'proc.':>7} {'lat ms':>9} {'p99 ms':>9}"
    )
    for case in steps(CASES[:2] if args.quick else CASES, "cases", quiet=args.quiet):
        run_case(case, args.operators, trace)


if __name__ == "__main__":
    main()
