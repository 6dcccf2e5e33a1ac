"""ODRP solve speed: variables per formulation and solve times; the heuristic at 100 nodes.

    .venv/bin/python benchmarks/placement_speed.py [--runs 3] [--exact]

Part 1, the paper's instance (DEBS 2015 Q1, 6 nodes x 8 slots, 100 tuples/s, half the nodes at
99 %, the five weightings of Fig. 7): variables of the paper's model without and with the
pinning / stability reductions, of the compact model, and the median solve time of the compact
ILP (target <= 1 s; the paper: 10.84 s with CPLEX). `--exact` also solves the paper's ILP.
Part 2, a generated instance of 100 nodes and 20 operators (each operator may use 6 random
nodes): heuristic time (target <= 2 s) and its gap to the compact ILP's proven optimum
(target <= 3 %). Part 3, the same with every node a candidate: heuristic time only.
Times are wall clock (what a user waits for, model building included); `cpu s` is the
process CPU time of the same solves, which a loaded shared machine inflates far less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.placement.compact_ilp import CompactIlp
from elastream.placement.generator import random_instance
from elastream.placement.heuristic import Heuristic
from elastream.placement.instance import Instance, build_instance
from elastream.placement.model import PlanRequest, Weights
from elastream.placement.paper_ilp import PaperIlp, paper_variable_count
from elastream.placement.solution import Solution, Solver
from elastream.report.progress import add_quiet, steps
from reproductions.odrp.debs import (
    SERVICE_RATES,
    STREAMS,
    TABLE2_BOUNDS,
    debs_application,
    debs_infrastructure,
)

OBJECTIVES = {
    "A": Weights(a=1),
    "C": Weights(c=1),
    "R": Weights(r=1),
    "T": Weights(z=1),
    "all": Weights(r=0.25, a=0.25, c=0.25, z=0.25),
}


CPU: list[float] = []  # process CPU seconds of the last timed() call (median)


def timed(solver: Solver, inst: Instance, runs: int) -> tuple[Solution, float]:
    """The solution and the median wall time of `runs` solves (median CPU time in CPU[0])."""
    times, cpu, sol = [], [], None
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        sol = solver.solve(inst, 600.0, 1e-6)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    assert sol is not None
    CPU[:] = [statistics.median(cpu)]
    return sol, statistics.median(times)


def paper_instance(runs: int, exact: bool) -> None:
    index = {name: i for i, name in enumerate(SERVICE_RATES)}
    pairs = [(index[a], index[b]) for a, b, _ in STREAMS]
    pairs.append((index["metronome"], index["countByWindow"]))
    full = paper_variable_count(6, [3] * 8, pairs)
    print("== the paper's instance: DEBS 2015 Q1, 6 nodes x 8 slots, 100 tuples/s")
    print(f"paper's model, no reduction (k_i = 3 for all 8, every node): {full} variables")
    header = f"{'objective':<9} {'paper vars':>10} {'compact vars':>12} {'compact s':>9}"
    header += f" {'cpu s':>6} {'cold s':>7} {'heur s':>7} {'heur gap %':>10}"
    print(header + (f" {'paper ILP s':>11}" if exact else ""))
    worst = 0.0
    for key, weights in OBJECTIVES.items():
        req = PlanRequest(
            application=debs_application(100),
            infrastructure=debs_infrastructure(0, half_available=True),
            weights=weights,
            bounds=TABLE2_BOUNDS,
        )
        inst = build_instance(req)
        paper_vars = _paper_vars(inst)
        sol, warm = timed(CompactIlp(), inst, runs)
        warm_cpu = CPU[0]
        _, cold = timed(CompactIlp(warm_start=False), inst, runs)
        heur, ht = timed(Heuristic(), inst, runs)
        gap = 100 * (sol.objective - heur.objective) / abs(sol.objective)
        worst = max(worst, warm)
        line = f"{key:<9} {paper_vars:>10} {sol.n_vars:>12} {warm:>9.3f} {warm_cpu:>6.3f}"
        line += f" {cold:>7.3f}"
        line += f" {ht:>7.3f} {gap:>10.2f}"
        if exact:
            psol, pt = timed(PaperIlp(), inst, 1)
            assert abs(psol.objective - sol.objective) < 1e-6, (psol.objective, sol.objective)
            line += f" {pt:>11.1f}"
        print(line, flush=True)
    verdict = "meets" if worst <= 1.0 else "misses"
    print(f"slowest compact solve {worst:.3f} s: {verdict} the 1 s target (paper: 10.84 s)")


def _paper_vars(inst: Instance) -> int:
    """Columns of Eq. 29-32 after the pinning and stability reductions (built, not solved)."""
    sizes = [len(inst.patterns(i)) for i in range(inst.n_ops)]
    y = sum(sizes[e.src] * sizes[e.dst] for e in inst.edges)
    return sum(sizes) + y + inst.n_nodes * inst.n_nodes + 1


def large_instance(runs: int, candidates: int, seed: int) -> None:
    print(
        f"\n== generated: 100 nodes, 20 operators, {candidates} candidate nodes each, seed {seed}"
    )
    app, infra = random_instance(100, 20, seed=seed, candidates=candidates)
    print(
        f"{'objective':<9} {'heur s':>7} {'cpu s':>6} {'heur F':>8} {'exact F':>8} "
        f"{'exact s':>8} {'vars':>6} {'gap %':>6}"
    )
    worst_gap, worst_time = 0.0, 0.0
    for key, weights in OBJECTIVES.items():
        inst = build_instance(PlanRequest(application=app, infrastructure=infra, weights=weights))
        heur, ht = timed(Heuristic(), inst, runs)
        heur_cpu = CPU[0]
        sol, et = timed(CompactIlp(), inst, 1)
        status = "" if sol.optimal else f" ({sol.status}, bound {sol.bound:.5f})"
        gap = 100 * (sol.objective - heur.objective) / abs(sol.objective)
        worst_gap, worst_time = max(worst_gap, gap), max(worst_time, ht)
        print(
            f"{key:<9} {ht:>7.3f} {heur_cpu:>6.3f} {heur.objective:>8.5f} {sol.objective:>8.5f} "
            f"{et:>8.2f} "
            f"{sol.n_vars:>6} {gap:>6.2f}{status}",
            flush=True,
        )
    ok = worst_gap <= 3.0 and worst_time <= 2.0
    print(
        f"heuristic worst gap {worst_gap:.2f} %, slowest {worst_time:.2f} s: "
        f"{'meets' if ok else 'misses'} the 3 % / 2 s target"
    )


def unrestricted(runs: int, seed: int) -> None:
    """Every node a candidate: too big for the exact models (C(102, 3) deployments per
    operator), so the heuristic's time only; its gap is not known."""
    print(f"\n== generated: 100 nodes, 20 operators, every node a candidate, seed {seed}")
    app, infra = random_instance(100, 20, seed=seed)
    print(f"{'objective':<9} {'heur s':>7} {'cpu s':>6} {'heur F':>8}")
    for key, weights in OBJECTIVES.items():
        inst = build_instance(PlanRequest(application=app, infrastructure=infra, weights=weights))
        heur, ht = timed(Heuristic(), inst, runs)
        print(f"{key:<9} {ht:>7.3f} {CPU[0]:>6.3f} {heur.objective:>8.5f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="solves per timing (median)")
    parser.add_argument("--exact", action="store_true", help="also solve the paper's ILP")
    parser.add_argument("--candidates", type=int, default=6, help="candidate nodes per operator")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instance")
    add_quiet(parser)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    parts = {
        "the paper's instance": lambda: paper_instance(args.runs, args.exact),
        "100 nodes": lambda: large_instance(args.runs, args.candidates, args.seed),
        "unrestricted": lambda: unrestricted(args.runs, args.seed),
    }
    for name in steps(parts, "placement timings", quiet=args.quiet):
        parts[name]()
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
