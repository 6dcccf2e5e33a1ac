"""Regenerate Figs. 3-6 of Belkhiria & Tedeschi (seed 003) and the overshoot comparison.

    .venv/bin/python benchmarks/decentral_reproduce.py [--out docs/reproduction/decentralized]

Writes small PNGs and prints the numbers discussed in docs/reproduction/decentralized.md."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.decentral.agent import AgentConfig
from elastream.decentral.decision import DecisionConfig
from elastream.report.progress import ProgressBar, add_quiet
from reproductions.decentralized.sim import SimConfig, SimResult, run

LOCAL_OP = 2  # the operator of Fig. 4 (the middle one: predecessors and successors)
SEEDS = range(20)
RULES = {  # name -> DecisionConfig fields beyond the paper
    "paper": {},
    "damped 5": {"damping_age": 5},
    "damped 10": {"damping_age": 10},
    "pending 2": {"pending_steps": 2},
    "pending 2 + damped 5": {"pending_steps": 2, "damping_age": 5},
}


def config(seed: int, rule: str = "paper", load: str = "brownian") -> SimConfig:
    decision = DecisionConfig(**RULES[rule])
    return SimConfig(seed=seed, load=load, agent=AgentConfig(seed=seed, decision=decision))


def small(path: Path, fig: plt.Figure) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def twin(ax, x, load, nodes, title):
    ax.plot(x, load, color="tab:blue", lw=1)
    ax.set_ylabel("load (tuples/step)", color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(x, nodes, color="tab:red", lw=1)
    ax2.set_ylabel("operator instances", color="tab:red")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("iteration")


def fig3_4(r: SimResult, out: Path) -> None:
    x = np.arange(1, len(r.load) + 1)
    for name, load, nodes, msgs, title in (
        ("fig3", r.load.sum(1), r.instances.sum(1), r.messages.sum(1), "global"),
        (
            "fig4",
            r.load[:, LOCAL_OP],
            r.instances[:, LOCAL_OP],
            r.messages[:, LOCAL_OP],
            f"operator {LOCAL_OP}",
        ),
    ):
        fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3))
        twin(a, x, load, nodes, f"(a) load and instances, {title}")
        b.bar(x, msgs, width=1.0, color="tab:gray")
        b.set_title(f"(b) protocol messages per iteration, {title}", fontsize=9)
        b.set_xlabel("iteration")
        small(out / f"{name}.png", fig)


def fig5(r: SimResult, base: SimResult, out: Path) -> None:
    x = np.arange(1, len(r.load) + 1)
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3))
    a.plot(x, base.accuracy[:, LOCAL_OP], lw=1, label="paper rule")
    a.plot(x, r.accuracy[:, LOCAL_OP], lw=1, label="damped scale-out (ours)")
    a.axhline(1.0, color="k", lw=0.5)
    a.set_title(f"(a) accuracy = instances / ideal, operator {LOCAL_OP}", fontsize=9)
    a.legend(fontsize=7)
    b.plot(x, 100 * base.throughput[:, LOCAL_OP], lw=1, label="paper rule")
    b.plot(x, 100 * r.throughput[:, LOCAL_OP], lw=1, label="damped scale-out (ours)")
    b.set_title(f"(b) % of ideal throughput, operator {LOCAL_OP}", fontsize=9)
    b.legend(fontsize=7)
    for ax in (a, b):
        ax.set_xlabel("iteration")
    small(out / "fig5.png", fig)


def fit(x: np.ndarray, y: np.ndarray, degree: int) -> tuple[np.ndarray, float]:
    """Least-squares polynomial of `degree` and its R^2."""
    coef = np.polyfit(x, y, degree)
    resid = y - np.polyval(coef, x)
    return coef, float(1 - (resid**2).sum() / ((y - y.mean()) ** 2).sum())


def fig6(out: Path) -> dict[str, float]:
    """Traffic under a monotone load: per iteration, and cumulated against the instance count
    (each new instance costs ~2(|succs| + |preds|) messages, itself proportional to n)."""
    r = run(config(0, load="increasing"))
    nodes, msgs = r.instances.sum(1), r.messages.sum(1)
    cum = np.cumsum(msgs)
    quad, r2q = fit(nodes, cum, 2)
    _, r2l = fit(nodes, cum, 1)
    grown = nodes - nodes[0]
    per_new = cum[-1] / grown[-1]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3))
    x = np.arange(1, len(nodes) + 1)
    twin(a, x, r.load.sum(1), nodes, "(a) monotonically increasing load")
    b.scatter(nodes, cum, s=5, color="tab:gray", label="cumulated messages")
    grid = np.linspace(nodes.min(), nodes.max(), 50)
    b.plot(grid, np.polyval(quad, grid), color="tab:red", lw=1, label=f"quadratic R²={r2q:.3f}")
    b.set_xlabel("operator instances (all operators)")
    b.set_ylabel("messages since iteration 1")
    b.set_title(f"(b) traffic vs instances (linear fit R²={r2l:.3f})", fontsize=9)
    b.legend(fontsize=7)
    small(out / "fig6.png", fig)
    half = len(nodes) // 2
    early = cum[half] / max(grown[half], 1)
    return {
        "r2_quadratic": r2q,
        "r2_linear": r2l,
        "a": float(quad[0]),
        "per_new": per_new,
        "per_new_first_half": float(early),
        "nodes_end": float(nodes[-1]),
    }


def summary(r: SimResult) -> list[float]:
    a = r.accuracy
    return [
        float(a.mean()),
        float(np.maximum(a - 1, 0).mean()),
        float(np.percentile(a, 95)),
        float(a.max()),
        float((a > 1.5).mean()),
        float(r.throughput.mean()),
        float(r.messages.sum()),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/reproduction/decentralized"))
    add_quiet(ap)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    bar = ProgressBar(3 + len(RULES) * len(SEEDS), "decentralized runs", quiet=args.quiet)
    with bar:
        bar.update(0, "seed 0")
        base = run(config(0))
        fig3_4(base, args.out)
        bar.advance(1, "seed 0, damped 5")
        fig5(run(config(0, "damped 5")), base, args.out)
        bar.advance(1, "fig. 6")
        f6 = fig6(args.out)
        bar.advance(1, "overshoot")
        overshoot = {}
        for rule in RULES:
            runs = []
            for s in SEEDS:
                runs.append(summary(run(config(s, rule))))
                bar.advance(1, f"{rule}, seed {s}")
            overshoot[rule] = np.array(runs).mean(0)

    total, nodes = base.load.sum(1), base.instances.sum(1)
    local = base.messages[:, LOCAL_OP]
    first = int(np.nonzero(base.messages.sum(1))[0][0]) + 1
    print("== seed 0, the paper's reported points against ours (iterations are 1-based)")
    print(
        f"peak instances      paper 114 at 104      ours {nodes.max():.0f} at {nodes.argmax() + 1}"
    )
    print(
        f"peak global load    paper 40396 at 100    ours {total.max():.0f} at {total.argmax() + 1}"
    )
    print(
        f"first messages      paper 30 at 5 (op)    ours {local[first - 1]:.0f} at {first} "
        f"(operator {LOCAL_OP}), {base.messages.sum(1)[first - 1]:.0f} globally"
    )
    print(
        f"largest burst (op)  paper 168 at 49       ours {local.max():.0f} at {local.argmax() + 1}"
    )
    per_op = [np.corrcoef(base.load[:, i], base.instances[:, i])[0, 1] for i in range(5)]
    print(
        f"corr(load, instances) global {np.corrcoef(total, nodes)[0, 1]:.3f}, per operator "
        + " ".join(f"{c:.3f}" for c in per_op)
    )
    print(f"lag of the instance peak after the load peak: {nodes.argmax() - total.argmax()} steps")
    print(
        f"fig6: cumulated messages vs instances: quadratic R^2 {f6['r2_quadratic']:.3f} "
        f"(a = {f6['a']:.3f}), linear R^2 {f6['r2_linear']:.3f}; messages per added instance "
        f"{f6['per_new_first_half']:.1f} over the first half, {f6['per_new']:.1f} over the run "
        f"(up to {f6['nodes_end']:.0f} instances)"
    )

    print(f"\n== overshoot, {len(SEEDS)} seeds x 5 operators x 200 steps (mean over seeds)")
    head = ("rule", "acc mean", "excess", "acc p95", "acc max", ">1.5", "thr", "messages")
    print("{:<22} {:>9} {:>7} {:>8} {:>8} {:>6} {:>6} {:>9}".format(*head))
    for rule, rows in overshoot.items():
        print("{:<22} {:9.3f} {:7.3f} {:8.2f} {:8.2f} {:6.3f} {:6.3f} {:9.0f}".format(rule, *rows))
    print(f"\nfigures in {args.out}, {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
