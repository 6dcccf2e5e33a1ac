"""Regenerate docs/reproduction/btu.md: the paper's Tables 3-6 (BTU-based leasing), paper vs ours.

PYTHONPATH=src python benchmarks/leasing_reproduce.py [--seeds 3] [--out docs/reproduction/btu.md]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from elastream.leasing.config import SimSettings
from elastream.leasing.experiment import (
    BTUS,
    Cell,
    Key,
    Trend,
    compliance_above,
    cost_below,
    fewer_ops_for_longer_btu,
    run_grid,
)
from elastream.leasing.patterns import Pattern
from elastream.leasing.tables import operations_table, pattern_table, trends_list

APPROACHES = ("btu", "threshold", "forecast")
PATTERNS = tuple(p.value for p in Pattern)

INTRO = """# Reproduction: cost-efficient enactment of stream topologies (BTU-based leasing)

Paper: Hochreiner, Vögler, Schulte, Dustdar, *Cost-efficient enactment of stream processing
topologies*, PeerJ CS 2017 (`../shared/seeds/004_4fb2fac3d9fb6413.txt`). Code:
`src/elastream/leasing/`; this file is written by `benchmarks/leasing_reproduce.py` (one command,
see the end). Approaches: **btu** = the paper's BTU-based approach (Alg. 1-3, release in the last
5 % of a BTU), **threshold** = the paper's baseline (+1 above 50 queued items, +2 above 250, -1
below 1, on-demand leasing), **forecast** = ours (goes beyond the paper, see `docs/leasing.md`).

## Setting (simulated; what is the paper's and what is ours)

- The paper's: the manufacturing topology of Table 2 (nine operator types: processing duration =
  SLO, CPU shares, memory, image size, outgoing ratio) and Fig. 1; sensors of Table 1 replayed one
  real-time minute every 480 ms; stepwise (2/5/8 machines, 4 min each), two-level (2/8, 8 min),
  random walks of Eq. 6 between 1 and 8 machines; hosts of 4 cores (4096 shares) and 7 GB; BTU 10,
  30, 60 min at prices 1, 3, 6; penalty 0.0001 per delayed item; monitoring every 15 s,
  provisioning every 60 s; 120 min; scalingThreshold 50, W1-W4 = 1, QL = 100, CF = 0.01, P = 0.0001.
- Ours (the paper does not give them): an instance serves `concurrency` = 5 items at a time, i.e.
  `5 / o_slo` items/s — calibrated once so that the threshold baseline's resource cost is close to
  the paper's (Table 3: 58 / 79 / 120); each item's processing time is log-normal around `o_slo`
  (log-sd 0.25) and each operator is slowed by per-interval interference (log-sd 0.1, a 3x spike
  with 1 % chance) — this is what caps real-time compliance near 50 % as on the paper's cloud;
  queues are fluid FIFO queues plus the M/M/1 term rho^2/(1-rho) for the waiting of a stochastic
  stream; VM boot uniform in 30-60 s; instance start 7.5 s plus image download at 4 MB/s when the
  image is not cached on the host; a migration stops the instance and starts it on the target;
  the random walks take one step a minute, and walks 1 and 2 are two fixed realisations (pattern
  seeds 1 and 2); the run seed drives interference and boot times. N = 5 durations in Alg. 1's
  trend. The release procedure is checked at every monitoring point (15 s), so the last 5 % of a
  10-min BTU (30 s) is never missed by the 60 s provisioning cycle.
- Compliance counts every item each operator processes (the paper samples every 10th); an item
  is delayed for a scenario when its waiting + processing time exceeds 1x, 2x or 5x its
  operator's `o_slo`. Total cost = paid BTUs x price + 0.0001 x delayed items of that scenario.
  The threshold baseline does not look at the BTU, so its compliance is the same in its three
  columns (as in the paper); only its bill differs.
"""

DISCUSSION = """## Why the numbers differ from the paper's, and where trends do not hold

- **Absolute compliance is lower than the paper's** for btu and threshold (the paper: 40 % / 67 %
  / 71 % for the baseline, 85-95 % near real-time / relaxed for btu). In our model a backlog
  built while Alg. 1 adds one instance per operator and minute (two for the baseline above 250
  items) takes minutes to drain, and every item behind it is late; the paper's runtime also let
  operators borrow unreserved CPU ("first come first serve"), which our reserved-capacity model
  does not. Ours (forecast) sizes each operator for its forecast rate at once and reaches
  compliance near the model's ceiling (real-time is capped near 50 % by the processing-time
  spread alone).
- **btu's resource cost is below the paper's**: Alg. 2/3 fill hosts completely and, when they are
  full, Fig. 4 first frees room by stopping an instance of the operator type with the best
  Alg. 3 utility (any type with an empty queue gets QL = 100), so btu leases few hosts; in the
  paper btu paid more than the baseline at BTU10/30.
- Any trend marked *does not hold* above is listed with the cells where it fails; the
  reasons are those of the two points above: when btu's capacity lags a rise (random walks,
  which change every minute), its compliance can fall to the baseline's, and when btu
  keeps hosts it does not need for a whole BTU (BTU60), its bill can exceed the baseline's.
"""


def _ours_beats_both(grid: dict[Key, Cell]) -> Trend:
    misses = []
    n = 0
    for p in PATTERNS:
        for m, _ in BTUS:
            f = grid[(p, "forecast", m)]
            for other in ("btu", "threshold"):
                o = grid[(p, other, m)]
                for k, lvl in enumerate(("1x", "2x", "5x")):
                    n += 2
                    if f.compliance(k).mean <= o.compliance(k).mean:
                        misses.append(f"{p}/BTU{m}/{lvl} compliance vs {other}")
                    if f.total(k).mean >= o.total(k).mean:
                        misses.append(f"{p}/BTU{m}/{lvl} total cost vs {other}")
    return Trend(
        "forecast (ours): higher compliance AND lower total cost than btu and threshold in "
        "every pattern x BTU x scenario",
        not misses,
        f"{n - len(misses)} of {n} comparisons hold"
        + (f"; misses: {', '.join(misses)}" if misses else ""),
    )


def render(grid: dict[Key, Cell], seeds: int, seconds: float) -> str:
    trends = [
        compliance_above(grid, "btu", "threshold", PATTERNS),
        cost_below(grid, "btu", "threshold", PATTERNS, level=1, need=11),
        cost_below(grid, "btu", "threshold", PATTERNS, level=2, need=11),
        fewer_ops_for_longer_btu(grid, "btu", PATTERNS),
        _ours_beats_both(grid),
    ]
    parts = [INTRO, "## Trends the issue asks for", "", trends_list(trends), ""]
    parts += [f"## Tables 3-6, paper vs ours (mean and σ over {seeds} seeded runs)", ""]
    parts += [
        "Paper rows print the published numbers; the paper has no column for ours (–).",
        "",
    ]
    for p in PATTERNS:
        parts += [pattern_table(p, grid, APPROACHES), "", operations_table(p, grid, APPROACHES), ""]
    parts += [DISCUSSION, "## Regenerate", ""]
    parts += [
        "```bash",
        f"PYTHONPATH=src .venv/bin/python benchmarks/leasing_reproduce.py --seeds {seeds}",
        "```",
        "",
        f"Last run: {len(grid) * seeds} simulations of 120 min in {seconds:.0f} s on one core.",
        "",
    ]
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeded runs per cell (>= 3 for σ)")
    ap.add_argument("--out", type=Path, default=Path("docs/reproduction/btu.md"))
    args = ap.parse_args()
    start = time.perf_counter()
    grid = run_grid(range(1, args.seeds + 1), approaches=APPROACHES, base=SimSettings())
    seconds = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(grid, args.seeds, seconds), encoding="utf-8")
    print(f"wrote {args.out}: {len(grid)} cells x {args.seeds} seeds in {seconds:.1f} s")


if __name__ == "__main__":
    main()
