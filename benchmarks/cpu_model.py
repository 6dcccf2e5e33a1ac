"""Fit and check the simulator's CPU model (Eq. C1 of docs/simulator.md) on the example pipelines.

For every operator of each pipeline: the interpreter calls per event its function makes (counted
by the profiling pass, the same on every run) and its thread CPU time per event (measured, the
least of `--repeat` passes: the one least disturbed by other processes). Prints both, the fitted
ns per call (Σ measured CPU / Σ calls, per event, over the operators) and, per operator, the
modelled CPU time over the measured one. Figures only, no asserts.

Usage: .venv/bin/python benchmarks/cpu_model.py [--repeat 5] [--sample 2000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

from elastream.config.files import load_pipeline
from elastream.examples import debs
from elastream.report.progress import add_quiet, steps
from elastream.runtime.sim import SimSettings
from elastream.runtime.sim.profile import _CACHE, profile_pipeline

EXAMPLES = Path(debs.__file__).parent
PIPELINES = ("tweets.yaml", "debs.yaml", "wordcount.yaml")


def measure(name: str, repeat: int, sample: int) -> list[tuple[str, float, float]]:
    """(operator, calls per event, least measured CPU s per event) for one pipeline."""
    pipeline = load_pipeline(EXAMPLES / name)
    calls = profile_pipeline(pipeline, SimSettings(sample_events=sample, cpu_ns_per_call=1), 0)
    least: dict[str, float] = {}
    for _ in range(repeat):
        _CACHE.clear()
        clock = profile_pipeline(
            pipeline, SimSettings(sample_events=sample, cpu_model="clock"), seed=0
        )
        for op in clock.operators:
            least[op.name] = min(least.get(op.name, float("inf")), op.cpu_s)
    return [(op.name, op.cpu_s * 1e9, least[op.name]) for op in calls.operators]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="clock passes; the least counts")
    parser.add_argument("--sample", type=int, default=2000, help="events per source")
    add_quiet(parser)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{uptime}  (cores: {os.cpu_count()})")
    pipelines = steps(PIPELINES, "pipelines", quiet=args.quiet)
    rows = [(p, *row) for p in pipelines for row in measure(p, args.repeat, args.sample)]
    ns = sum(cpu for *_, cpu in rows) / sum(calls for *_, calls, _ in rows) * 1e9
    print(f"fitted: {ns:.0f} ns per call (Σ CPU / Σ calls over the operators below)")
    print(
        f"{'pipeline':<16}{'operator':<18}{'calls/event':>12}{'CPU µs/event':>14}{'model/CPU':>11}"
    )
    for pipeline, op, calls, cpu in rows:
        model = calls * ns * 1e-9
        print(f"{pipeline:<16}{op:<18}{calls:>12.1f}{cpu * 1e6:>14.1f}{model / cpu:>11.2f}")


if __name__ == "__main__":
    main()
