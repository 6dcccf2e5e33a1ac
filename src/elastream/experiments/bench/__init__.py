"""Benchmark harness: scenario files × policies × grids, run in parallel on the simulator."""

from elastream.experiments.bench.outputs import read_results, write_results
from elastream.experiments.bench.runner import SIM_BACKEND, Backend, RunRecord, run_matrix
from elastream.experiments.bench.scenario import BenchError, BenchFile, RunSpec, load_bench

__all__ = [
    "SIM_BACKEND",
    "Backend",
    "BenchError",
    "BenchFile",
    "RunRecord",
    "RunSpec",
    "load_bench",
    "read_results",
    "run_matrix",
    "write_results",
]
