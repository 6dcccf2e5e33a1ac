"""Regenerate docs/reproduction/odrp.md: ODRP's Table 3, Fig. 6 and Fig. 7 on HiGHS.

    .venv/bin/python benchmarks/placement_reproduce.py [--seeds 10] [--exact]

Table 3: replicas per operator chosen for the response time (w_r = 1) at source rates 20..120
tuples/s, next to the paper's, with S-ODP (k_i = 1) and the paper's own configuration scored by
our evaluator. Fig. 6: the QoS of the plans optimizing A, C, R, T and all four at 100 tuples/s
with half the nodes at 99 %. Fig. 7: solve time per objective. `--exact` also times the
paper's ILP (Eq. 22-32; minutes per solve).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.placement.compact_ilp import CompactIlp
from elastream.placement.evaluator import QoS, evaluate
from elastream.placement.heuristic import Heuristic
from elastream.placement.instance import Instance, build_instance
from elastream.placement.model import InfeasibleError, PlanRequest, Weights
from elastream.placement.paper_ilp import PaperIlp
from elastream.placement.solution import Solution, Solver
from elastream.report.progress import ProgressBar, add_quiet
from reproductions.odrp.debs import (
    PAPER_TABLE3,
    SERVICE_RATES,
    TABLE2_BOUNDS,
    debs_application,
    debs_infrastructure,
)

OUT = Path(__file__).resolve().parents[1] / "docs" / "reproduction"
RATES = (20, 40, 60, 80, 100, 120)
OBJECTIVES = {
    "A": Weights(a=1),
    "C": Weights(c=1),
    "R": Weights(r=1),
    "T": Weights(z=1),
    "all": Weights(r=0.25, a=0.25, c=0.25, z=0.25),
}
SHORT = {
    "source": "src",
    "parser": "parser",
    "filterByCoordinates": "filter",
    "computeRouteID": "routeID",
    "metronome": "metronome",
    "countByWindow": "count",
    "partialRank": "pRank",
    "globalRank": "gRank",
}


def instance(rate: float, seed: int, weights: Weights, **extra: object) -> Instance:
    share = float(extra.pop("share", 1.0))  # type: ignore[arg-type]
    req = PlanRequest(
        application=debs_application(rate, metronome_share=share),
        infrastructure=debs_infrastructure(seed, half_available=extra.pop("half", False)),
        weights=weights,
        bounds=TABLE2_BOUNDS,
        **extra,
    )
    return build_instance(req)


def timed(solver: Solver, inst: Instance, limit: float = 600.0) -> tuple[Solution, float]:
    start = time.perf_counter()
    sol = solver.solve(inst, limit, 1e-6)
    return sol, time.perf_counter() - start


def timed_cpu(solver: Solver, inst: Instance) -> tuple[Solution, float, float]:
    """The solution, its wall time and its process CPU time."""
    start = time.process_time()
    sol, wall = timed(solver, inst)
    return sol, wall, time.process_time() - start


def replicas(inst: Instance, sol: Solution) -> dict[str, int]:
    return {name: sol.plan.replicas(i) for i, name in enumerate(inst.op_names)}


def table3(seeds: int) -> list[str]:
    lines = [
        "## Table 3: replicas per operator, response-time objective (w_r = 1)",
        "",
        f"ODRP solved with the compact ILP on HiGHS for {seeds} draws of the delays "
        "(seeds 0..); `ours` is seed 0, `agree` says whether every draw chose the same counts. "
        "`paper` is Table 3 of the paper. S-ODP (placement only, k_i = 1) deploys one replica of "
        "each operator at every rate.",
        "",
        "| rate | " + " | ".join(SHORT.values()) + " | total | R ms | agree |",
        "|---|" + "---|" * (len(SHORT) + 3),
    ]
    notes = []
    for rate in RATES:
        counts, responses = [], []
        for seed in range(seeds):
            inst = instance(rate, seed, Weights(r=1))
            sol, _ = timed(CompactIlp(), inst)
            counts.append(replicas(inst, sol))
            responses.append(evaluate(inst, sol.plan).response_ms)
        ours, paper = counts[0], PAPER_TABLE3[rate]
        agree = "yes" if all(c == ours for c in counts) else "no"
        cells = [_cell(ours[n], paper[n]) for n in SERVICE_RATES]
        lines.append(
            f"| {rate} ours | " + " | ".join(cells) + f" | {sum(ours.values())} | "
            f"{responses[0]:.1f} | {agree} |"
        )
        cells = [str(paper[n]) for n in SERVICE_RATES]
        paper_r = _fixed_response(rate, paper)
        lines.append(
            f"| {rate} paper | " + " | ".join(cells) + f" | {sum(paper.values())} | {paper_r} | |"
        )
        notes.append(_s_odp_note(rate, responses[0]))
    lines += ["", "Cells in **bold** differ from the paper. S-ODP at each rate:", ""]
    lines += [f"- {n}" for n in notes]
    lines += ["", *TABLE3_EXPLANATION]
    lines += ["", *_sensitivity()]
    return lines


def _sensitivity() -> list[str]:
    """The same solve when the metronome reads only 5 % of the tuples (seed 0)."""
    lines = [
        "Sensitivity to the one rate the paper does not give: if the metronome reads only 5 % "
        "of the filtered tuples (it only needs the time to advance), its path stops being "
        "critical and ODRP replicates the shared chain instead:",
        "",
        "| rate | " + " | ".join(SHORT.values()) + " | total | R ms |",
        "|---|" + "---|" * (len(SHORT) + 2),
    ]
    for rate in RATES:
        inst = instance(rate, 0, Weights(r=1), share=0.05)
        sol, _ = timed(CompactIlp(), inst)
        counts = replicas(inst, sol)
        cells = [_cell(counts[n], PAPER_TABLE3[rate][n]) for n in SERVICE_RATES]
        lines.append(
            f"| {rate} | " + " | ".join(cells) + f" | {sum(counts.values())} | "
            f"{evaluate(inst, sol.plan).response_ms:.1f} |"
        )
    return lines


TABLE3_EXPLANATION = [
    "Why cells differ. The `R ms` of a `paper` row is the paper's replica counts placed as well "
    "as possible under our model (same instance, seed 0), so each pair of rows compares the two "
    "configurations under the same equations.",
    "",
    "- 20-60 tuples/s: identical. Any replica on a second node costs at least 2 x 12 ms of "
    "network delay for at most a few ms of queueing, so all 8 operators share one 8-slot node.",
    "- 80 and 100 tuples/s: identical except computeRouteID (3 here, 2 in the paper). "
    "partialRank must have 2 replicas (2500 and 3125 tuples/s > 2371), 9 replicas do not fit "
    "one node, and, as in the paper, only computeRouteID moves to a second node (its path does "
    "not carry the metronome). With Eq. 1 a third replica on that node is strictly faster "
    "(the `R ms` column: a few tenths of a ms), so the optimum under the paper's model has 3; "
    "the paper's 2 is within 0.1 % of F, the size of a solver gap tolerance or of measured "
    "rates slightly different from ours.",
    "- 120 tuples/s: the paper replicates the whole shared chain (16 replicas). Under our "
    "rates the metronome (not replicable, mu = 190) reads every filtered tuple and its path "
    "is the critical one at 120 tuples/s, so replicating the chain does not pay (the paper's "
    "configuration is slower here, see its `R ms`). The paper does not give the metronome's input "
    "rate; the sensitivity table below shows that when the metronome reads few tuples, ODRP "
    "picks exactly the paper's kind of configuration (16 replicas on 2 nodes), already from "
    "80 tuples/s. The paper's rates were measured at run time (Alg. 1), ours are assumed.",
]


def _cell(ours: int, paper: int) -> str:
    return str(ours) if ours == paper else f"**{ours}**"


def _fixed_response(rate: float, counts: dict[str, int]) -> str:
    """R of the best placement of the paper's replica counts under our model (seed 0)."""
    inst = instance(rate, 0, Weights(r=1), fixed_replicas=counts)
    sol, _ = timed(CompactIlp(), inst)
    return f"{evaluate(inst, sol.plan).response_ms:.1f}"


def _s_odp_note(rate: float, odrp_r: float) -> str:
    try:
        inst = instance(rate, 0, Weights(r=1), fixed_replicas=dict.fromkeys(SERVICE_RATES, 1))
    except InfeasibleError as exc:
        return f"{rate} tuples/s: one replica each is unstable ({exc})."
    sol, _ = timed(CompactIlp(), inst)
    r = evaluate(inst, sol.plan).response_ms
    return f"{rate} tuples/s: R = {r:.1f} ms (ODRP: {odrp_r:.1f} ms)."


def figures(seeds: int, exact: bool) -> tuple[list[str], dict[str, list[QoS]], dict]:
    """Fig. 6 (QoS per objective) and Fig. 7 (solve time per objective), 100 tuples/s."""
    qos: dict[str, list[QoS]] = {k: [] for k in OBJECTIVES}
    reps: dict[str, list[int]] = {k: [] for k in OBJECTIVES}
    times: dict[str, dict[str, list[float]]] = {
        k: {"compact": [], "compact cpu": [], "compact-cold": [], "heuristic": [], "exact": []}
        for k in OBJECTIVES
    }
    gaps: dict[str, list[float]] = {k: [] for k in OBJECTIVES}
    for seed in range(seeds):
        for key, weights in OBJECTIVES.items():
            inst = instance(100, seed, weights, half=True)
            sol, dt, cpu = timed_cpu(CompactIlp(), inst)
            times[key]["compact"].append(dt)
            times[key]["compact cpu"].append(cpu)
            times[key]["compact-cold"].append(timed(CompactIlp(warm_start=False), inst)[1])
            heur, ht = timed(Heuristic(), inst)
            times[key]["heuristic"].append(ht)
            gaps[key].append(100 * (sol.objective - heur.objective) / abs(sol.objective))
            if exact and seed == 0:
                times[key]["exact"].append(timed(PaperIlp(), inst)[1])
            qos[key].append(evaluate(inst, sol.plan))
            reps[key].append(sum(sol.plan.replicas(i) for i in range(inst.n_ops)))
    lines = [
        "## Fig. 6: QoS when optimizing A, C, R, T or all four (100 tuples/s)",
        "",
        f"Half the nodes at 99 % availability, pinned operators on a 100 % node; mean (min-max) "
        f"over {seeds} draws of the delays. The network metric Z is T (tuples/s between nodes).",
        "",
        "| objective | R ms | A % | T tuples/s | replicas (= C) | F |",
        "|---|---|---|---|---|---|",
    ]
    for key in OBJECTIVES:
        rows = qos[key]
        lines.append(
            f"| {key} | {_stat([q.response_ms for q in rows], '.1f')} | "
            f"{_stat([100 * q.availability for q in rows], '.2f')} | "
            f"{_stat([q.traffic for q in rows], '.0f')} | {_stat(reps[key], '.1f')} | "
            f"{_stat([q.utility for q in rows], '.3f')} |"
        )
    lines += ["", *_fig6_comparison(qos, reps)]
    return lines, qos, {"times": times, "gaps": gaps, "replicas": reps}


def _fig6_comparison(qos: dict[str, list[QoS]], reps: dict[str, list[int]]) -> list[str]:
    """The paper's statements about Fig. 6 next to ours (means over the draws)."""

    def mean(key: str, attr: str) -> float:
        return statistics.fmean(getattr(q, attr) for q in qos[key])

    r_min, t_min = mean("R", "response_ms"), mean("T", "traffic")
    return [
        "| paper (Sec. 6.4) | here |",
        "|---|---|",
        f"| S-ODRP_A: replicas only on 100 % nodes, R ~1.6x the minimum, T ~35x the optimum | "
        f"A = {100 * mean('A', 'availability'):.2f} %, R {mean('A', 'response_ms') / r_min:.1f}x,"
        f" T {mean('A', 'traffic') / t_min:.0f}x |",
        f"| S-ODRP_C: 9 replicas (partialRank twice) | {statistics.fmean(reps['C']):.0f} "
        "replicas |",
        f"| S-ODRP_R: minimum R, up to 16 replicas, T almost double the optimum | "
        f"{statistics.fmean(reps['R']):.0f} replicas, T {mean('R', 'traffic') / t_min:.1f}x |",
        f"| S-ODRP_T: co-location, R close to the optimum | T = {t_min:.0f} tuples/s, R "
        f"{mean('T', 'response_ms') / r_min:.2f}x |",
        f"| all four: 9 replicas, R and T close to the single-objective ones, A 99.6 % on "
        f"average | {statistics.fmean(reps['all']):.0f} replicas, R "
        f"{mean('all', 'response_ms') / r_min:.2f}x, T {mean('all', 'traffic') / t_min:.2f}x, "
        f"A {100 * mean('all', 'availability'):.2f} % |",
        "",
        "S-ODRP_R uses fewer replicas than the paper's 16 for the reason given under Table 3 "
        "(the metronome path). With all four weights, A stays at 100 % here because our pinned "
        "node is always one of the 100 % nodes and the 99 % nodes are never needed; the paper "
        "draws the pinned node at random.",
    ]


def _stat(values: list[float], fmt: str) -> str:
    return f"{statistics.fmean(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def fig7_lines(extra: dict, seeds: int, exact: bool) -> list[str]:
    times, gaps = extra["times"], extra["gaps"]
    lines = [
        "## Fig. 7: resolution time per objective (100 tuples/s, seconds)",
        "",
        f"Mean (max) over {seeds} instances on this machine, wall clock with the model "
        "building. `compact` is warm-started from the heuristic (its time included), `compact "
        "cpu` is the process CPU time of the same solves (less inflated by a loaded machine), "
        "`compact-cold` is not warm-started; the heuristic's gap is (F* - F_h) / F* in %. The "
        "paper (CPLEX 12.6.3, its Eq. 22-32): 10.84 s on average, R slowest, C fastest, R about "
        "twice C. Target: every objective solved to optimality in <= 1 s.",
        "",
        "| objective | compact | compact cpu | compact-cold | heuristic | heuristic gap % |"
        + (" paper ILP (seed 0) |" if exact else ""),
        "|---|---|---|---|---|---|" + ("---|" if exact else ""),
    ]
    for key in OBJECTIVES:
        row = [
            f"{statistics.fmean(v):.2f} ({max(v):.2f})"
            for v in (
                times[key]["compact"],
                times[key]["compact cpu"],
                times[key]["compact-cold"],
                times[key]["heuristic"],
            )
        ]
        gap = [max(0.0, g) for g in gaps[key]]  # -0.00: equal up to rounding
        row.append(f"{statistics.fmean(gap):.2f} (max {max(gap):.2f})")
        if exact:
            row.append(f"{times[key]['exact'][0]:.1f}")
        lines.append(f"| {key} | " + " | ".join(row) + " |")
    lines += ["", *_ranking(times, exact)]
    return lines


def _ranking(times: dict[str, dict[str, list[float]]], exact: bool) -> list[str]:
    """Which objective is slowest and fastest to solve, per formulation (from the numbers)."""
    lines = []
    for label in ("compact", "compact-cold", "exact") if exact else ("compact", "compact-cold"):
        mean = {k: statistics.fmean(v[label]) for k, v in times.items() if v[label]}
        slow, fast = max(mean, key=mean.__getitem__), min(mean, key=mean.__getitem__)
        lines.append(
            f"- {label}: slowest {slow} ({mean[slow]:.2f} s), fastest {fast} "
            f"({mean[fast]:.2f} s); R / C = {mean['R'] / mean['C']:.1f} "
            "(paper, CPLEX on Eq. 22-32: R slowest, C fastest, R / C about 2)."
        )
    over = [
        f"{k} (mean {statistics.fmean(v['compact']):.2f} s, max {max(v['compact']):.2f} s)"
        for k, v in times.items()
        if max(v["compact"]) > 1.0
    ]
    verdict = (
        "- 1 s target: every objective of every instance solved to optimality within 1 s."
        if not over
        else "- 1 s target missed by wall clock for: " + ", ".join(over) + "."
    )
    return [
        *lines,
        verdict,
        "",
        "What is left of the solve is HiGHS proving the optimum at the root: the LP relaxation "
        "mixes a plan that overfills the pinned node (everything co-located) with one that "
        "moves the whole chain to another node, which satisfies every node's capacity on "
        "average and hides most of the network delay and traffic; the root cuts and a few "
        "branches refute it.",
    ]


def plots(qos: dict[str, list[QoS]], extra: dict) -> None:
    keys = list(OBJECTIVES)
    fig, axes = plt.subplots(1, 4, figsize=(10, 2.6), dpi=80)
    panels = (
        ("R (ms)", [statistics.fmean(q.response_ms for q in qos[k]) for k in keys]),
        ("A (%)", [statistics.fmean(100 * q.availability for q in qos[k]) for k in keys]),
        ("T (tuples/s)", [statistics.fmean(q.traffic for q in qos[k]) for k in keys]),
        ("replicas", [statistics.fmean(extra["replicas"][k]) for k in keys]),
    )
    for ax, (title, values) in zip(axes, panels, strict=True):
        ax.bar(keys, values, color="#4C72B0")
        ax.set_title(title, fontsize=9)
        ax.tick_params(labelsize=8)
    axes[1].set_ylim(min(panels[1][1]) - 0.5, 100.05)
    fig.tight_layout()
    fig.savefig(OUT / "odrp_fig6.png")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 2.6), dpi=80)
    width = 0.27
    for k, (label, color) in enumerate(
        (("compact", "#4C72B0"), ("compact-cold", "#8C8C8C"), ("heuristic", "#DD8452"))
    ):
        values = [statistics.fmean(extra["times"][key][label]) for key in keys]
        ax.bar(
            [x + (k - 1) * width for x in range(len(keys))], values, width, label=label, color=color
        )
    ax.set_xticks(range(len(keys)), keys)
    ax.set_ylabel("seconds", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "odrp_fig7.png")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="draws of the network delays")
    parser.add_argument("--exact", action="store_true", help="also time the paper's ILP")
    add_quiet(parser)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load = os.getloadavg()[0]
    with ProgressBar(3, "ODRP reproduction", quiet=args.quiet) as bar:
        bar.update(0, "Table 3")
        body = table3(max(1, args.seeds // 2))
        bar.advance(1, "Figs. 6-7")
        fig6, qos, extra = figures(args.seeds, args.exact)
        bar.advance(1, "plots")
        plots(qos, extra)
        bar.advance(1, "done")
    doc = [
        "# ODRP reproduction (Cardellini et al., optimal operator replication and placement)",
        "",
        "Generated by `.venv/bin/python benchmarks/placement_reproduce.py"
        + (" --exact" if args.exact else "")
        + f"` in {time.perf_counter() - started:.0f} s on {os.cpu_count()} cores (load average "
        f"{load:.1f} at the start: times are wall clock on a shared machine). "
        "Instance: `src/reproductions/odrp/"
        "debs.py` (Table 2 service rates, k_i = 3 except source, metronome and globalRank, "
        "6 nodes x 8 slots, delays uniform in [12, 32] ms, Table 2 normalization); what the "
        "paper does not print (Fig. 3's edges, the stream rates) is assumed there.",
        "",
        *body,
        "",
        *fig6,
        "",
        "![Fig. 6](odrp_fig6.png)",
        "",
        *fig7_lines(extra, args.seeds, args.exact),
        "",
        "![Fig. 7](odrp_fig7.png)",
        "",
    ]
    (OUT / "odrp.md").write_text("\n".join(doc), encoding="utf-8")
    print(f"wrote {OUT / 'odrp.md'} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
