"""Regenerate docs/reproduction/btu.md: the paper's Tables 3-6 (BTU-based leasing), paper vs ours.

.venv/bin/python benchmarks/leasing_reproduce.py [--seeds 5] [--workers 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elastream.leasing.hosts import HostType
from reproductions.btu.config import SimSettings
from reproductions.btu.experiment import (
    BTUS,
    Cell,
    Key,
    Trend,
    compliance_above,
    cost_below,
    fewer_ops_for_longer_btu,
    run_grid,
)
from reproductions.btu.paper import TABLES
from reproductions.btu.patterns import Pattern
from reproductions.btu.slack import pattern_slack
from reproductions.btu.tables import (
    ahead_table,
    beats,
    compare_table,
    operations_table,
    pattern_table,
    timeline_table,
    trends_list,
)
from reproductions.btu.topology import manufacturing

APPROACHES = ("btu", "threshold", "forecast")
PATTERNS = tuple(p.value for p in Pattern)

INTRO = """# Reproduction: cost-efficient enactment of stream topologies (BTU-based leasing)

Paper: Hochreiner, Vögler, Schulte, Dustdar, *Cost-efficient enactment of stream processing
topologies*, PeerJ CS 2017 (`../shared/seeds/004_4fb2fac3d9fb6413.txt`). Code:
`src/elastream/leasing/`; this file is written by `benchmarks/leasing_reproduce.py` (one command,
see the end). Approaches: **btu** = the paper's BTU-based approach (Alg. 1-3, release in the last
5 % of a BTU), **threshold** = the paper's baseline (+1 above 50 queued items, +2 above 250, -1
below 1, on-demand leasing), **forecast** = ours (goes beyond the paper, see `docs/leasing.md`).
Two references at the end: **btu_runtime_cf** (btu with the image-cache factor applied as the
authors' runtime does) and **static_peak** (a non-elastic oracle sized for the known peak), and
**ahead** = ours, a lease-ahead policy that beats static_peak wherever the load leaves slack
(last section).

## Setting (simulated; what is the paper's and what is ours)

- The paper's: the manufacturing topology of Table 2 (nine operator types: processing duration =
  SLO, CPU shares, memory, image size, outgoing ratio) and Fig. 1; sensors of Table 1 replayed one
  real-time minute every 480 ms; stepwise (2/5/8 machines, 4 min each), two-level (2/8, 8 min),
  random walks of Eq. 6 between 1 and 8 machines; hosts of 4 cores (4096 shares) and 7 GB; BTU 10,
  30, 60 min at prices 1, 3, 6; penalty 0.0001 per delayed item; monitoring every 15 s,
  provisioning every 60 s; 120 min; scalingThreshold 50, W1-W4 = 1, QL = 100, CF = 0.01, P = 0.0001.
- Ours (the paper does not give them): an instance serves `concurrency` = 5 items at a time, i.e.
  `5 / o_slo` items/s — calibrated once, on the stepwise pattern, against the threshold baseline's
  resource cost at BTU10 in Table 3 (58; the other values are not fitted); each item's processing
  time is log-normal around `o_slo` (log-sd 0.25) and each operator is slowed by per-interval
  interference (log-sd 0.1, a 3x spike with 1 % chance) — this is what caps real-time compliance
  near 50 % as on the paper's cloud; queues are fluid FIFO queues plus the M/M/1 term rho^2/(1-rho)
  for the waiting of a stochastic stream; VM boot uniform in 30-60 s; instance start 7.5 s plus
  image download at 4 MB/s when the image is not cached on the host; a migration stops the instance
  and starts it on the target; the random walks take one step a minute, and walks 1 and 2 are two
  fixed realisations (pattern seeds 1 and 2); the run seed drives interference and boot times. N =
  5 durations in Alg. 1's trend. The release procedure is checked at every monitoring point (15 s),
  so the last 5 % of a 10-min BTU (30 s) is never missed by the 60 s provisioning cycle.
- Compliance counts every item each operator processes (the paper samples every 10th); an item
  is delayed for a scenario when its waiting + processing time exceeds 1x, 2x or 5x its
  operator's `o_slo`. Total cost = paid BTUs x price + 0.0001 x delayed items of that scenario.
  The threshold baseline does not look at the BTU, so its compliance is the same in its three
  columns (as in the paper); only its bill differs.
"""

DISCUSSION = """## Where our numbers differ from the paper's, and why trends do not hold

- **Absolute compliance is lower than the paper's** for both of its approaches (ranges over all
  cells, ours vs the paper's: {ranges}). Three causes in our model: the spread of one item's
  processing time alone caps real-time compliance near 55 %; an instance serves exactly its
  reserved capacity, whereas the paper's operators could also use a host's unreserved CPU
  ("first come first serve") to absorb a peak; and both approaches add at most one (btu) or two
  (threshold) instances per operator and minute, so a step from 2 to 8 machines builds a backlog
  that every later item waits behind.
- **btu leases less than in the paper** (its resource cost is below the threshold's at BTU10
  and BTU30 too, where the paper's was above). When hosts are full, Fig. 4 first frees room by
  stopping an instance of the type with the best positive Alg. 3 utility — and every type whose
  queue is empty scores QL = 100 — so btu keeps about five hosts and reshuffles instances among
  types instead of leasing.
- **Where btu's compliance or cost trend misses** (the cells are listed under "Trends" above),
  it is on the random walks, which change every minute: the Fig. 4 reshuffle then stops
  instances of types that are idle this minute and loaded the next (see btu's instance up/down
  counts and their σ in the operations tables), while the baseline adds two instances at a time
  above 250 queued items. btu's σ between seeds is large there (5-10 compliance points), so
  several misses are within one σ.
- **Fewer scaling operations for longer BTUs**: where it does not hold, either the pattern's
  phases leave btu's instance set unchanged between BTU ends (two-level: the count is flat in the
  BTU), or the reshuffle churn above dominates (random walks; σ of 20-60 operations).
- **Identical BTU30 and BTU60 columns** (e.g. btu on two-level) are not a copying slip: when all
  of a run's hosts stay full, every release procedure finds no room to migrate to and prolongs,
  so the BTU length changes nothing in that run but the price of its hosts, which is linear
  (5 hosts x 120 min cost 60 at both).
- **Ours (forecast)**: the comparison count is under "Trends". Its parameters were tuned on seeds
  1 and 2 of the stepwise and two-level patterns and seeds 1-{seeds} are reported here; on two-level
  its margins over btu are a few points only: treat them as optimistic.
"""

CF_TEXT = """## Ablation: which hosts the image-cache factor CF favours

The paper's text multiplies Alg. 2's suitability by CF = 0.01 for hosts that *have* the image
(our default, `btu`); the authors' runtime divides it by 100 for hosts that do *not*
(`btu_runtime_cf`). Near real-time compliance, its total cost and the time to adapt (mean over the
same seeds):

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


STATIC_TEXT = """## A reference the paper does not have: a static deployment sized for the peak

`static_peak` is told the peak (8 machines) in advance, leases at the start the hosts the peak
needs at 90 % utilisation, fills them with instances in the peak's mix and never changes
anything (not elastic, an oracle). In this setting the load never stays low for long and a few
hosts carry the peak, so this is the bar any elastic policy has to clear:

"""


def _static_verdict(grid: dict[Key, Cell]) -> str:
    """How often the oracle beats ours on near real-time compliance and total cost."""
    n = len(PATTERNS) * len(BTUS)
    wins = sum(
        grid[(p, "static_peak", m)].compliance(1).mean > grid[(p, "forecast", m)].compliance(1).mean
        and grid[(p, "static_peak", m)].total(1).mean < grid[(p, "forecast", m)].total(1).mean
        for p in PATTERNS
        for m, _ in BTUS
    )
    verdict = (
        " The forecast policy pays only against the paper's two approaches; where and by how "
        "much a policy can beat a well-sized static deployment is the subject of the last "
        "section."
        if wins * 2 > n
        else ""
    )
    return (
        "static_peak has both higher near real-time compliance and lower total cost than ours "
        f"in {wins} of {n} cells." + verdict
    )


def _ranges(grid: dict[Key, Cell]) -> str:
    """Compliance ranges (min-max over patterns and BTUs) of btu and threshold, ours vs paper."""
    out = []
    for approach in ("threshold", "btu"):
        for k, name in enumerate(("real-time", "near real-time", "relaxed")):
            ours = [
                grid[(p, approach, m)].compliance(k).mean * 100 for p in PATTERNS for m, _ in BTUS
            ]
            paper = [TABLES[p][(approach, m)].compliance[k].mean for p in PATTERNS for m, _ in BTUS]
            out.append(
                f"{approach} {name} {min(ours):.0f}-{max(ours):.0f} % vs "
                f"{min(paper):.0f}-{max(paper):.0f} %"
            )
    return "; ".join(out)


def _cf_verdict(grid: dict[Key, Cell]) -> str:
    """How many cells the CF direction changes by more than one σ (near real-time)."""
    apart = []
    for p in PATTERNS:
        for m, _ in BTUS:
            a, b = grid[(p, "btu", m)].compliance(1), grid[(p, "btu_runtime_cf", m)].compliance(1)
            if abs(a.mean - b.mean) > max(a.sd, b.sd):
                better = "text" if a.mean > b.mean else "runtime"
                apart.append(f"{p}/BTU{m} ({better} CF better)")
    n = len(PATTERNS) * len(BTUS)
    return (
        f"Near real-time compliance differs by more than one σ in {len(apart)} of {n} cells"
        + (f": {', '.join(apart)}." if apart else ".")
        + " An image download takes 17-22 s here, short next to the 60 s provisioning interval"
        " and the 30-60 s VM boot, so the direction of CF matters little in this setting; it would"
        " matter where images are large or provisioning is faster. We keep the text's direction."
    )


AHEAD_TEXT = """## Leasing that beats a fixed fleet: the lease-ahead policy (ours)

**ahead** (`src/reproductions/btu/ahead.py`) is told the same peak as
static_peak and starts as it does; after a warm-up of 5 minutes it is forecast-driven. Its
forecaster picks, by a backtest on the observed arrival rates, between a seasonal-naive forecast
(period from the autocorrelation; 30 % head-room on its peak) and the naive forecast widened by
the largest rise seen within the horizon; both capped at the known peak. Every provisioning
interval it sizes each operator for the forecast peak over the lead time of a new host (60 s
boot + 30 s instance start + 60 s provisioning interval) at 90 % utilisation and leases the hosts
that needs now, ahead of the boot time; paid room is filled with instances in the need's mix. A
host is released only in the last 5 % of its BTU and only when the forecast peak over the next
BTU fits on the hosts that stay (its surplus instances stop, the needed ones move). A released
host serves on until its paid BTU ends while the moved instances start on their targets (make
before break, `AheadSettings.drain`, on by default since 2026-11-25; `Plan.drain` in the
simulator).

**Slack** is what a perfect forecaster could save with that rule: the BTUs of the fleet sized
for the peak minus those of an oracle that knows the load, holds at every moment the hosts the
load needs (packed as static_peak packs them, at 90 %), leases a host when it is first needed
and prolongs it only when it is needed during its next BTU (`src/reproductions/btu/slack.py`).
Where the slack is 0 no policy can cost less than static_peak without lower compliance.

"""


AHEAD_DISCUSSION = """Why the cells come out as they do:

- **No slack (stepwise and two-level at BTU30 and BTU60).** Both patterns repeat every 16
  minutes and reach 8 machines (5 hosts) in every period, so every 30- or 60-minute BTU of every
  host contains a peak: a perfect forecaster keeps the peak fleet, as static_peak does, and pays
  the same. No policy can cost less there without lower compliance. ahead forecasts the peak in
  the next BTU (seasonal, once two periods are seen; before, the rise it has seen, capped at the
  peak) and keeps the fleet: its runs are static_peak's.
- **Two-level at BTU10** has 3 BTUs of slack, all at the run's end: the last low phase (minutes
  112-120) needs no peak host, and nothing comes after minute 120. Within the run every 10-minute
  BTU that starts in a low phase (8 minutes) reaches into the next high one. ahead's forecast
  does not know that the run stops, so it keeps the fleet.
- **Random walks at BTU60** have 1 BTU (6 cost units) of slack: a perfect forecaster knows that
  the walk stays low for the last hour on some hosts. A random walk cannot be forecast an hour
  ahead: ahead's forecast over the next BTU is the last rate plus the largest rise seen within an
  hour, which reaches the peak, so it keeps the fleet.
- **Where there is slack and ahead releases** (the BTU10 cells of stepwise and the random walks)
  it is cheaper than static_peak, but not at no lower compliance on all three levels. With the
  make-before-break release (measured 2026-11-25, seeds 1-5, near real-time total cost and
  compliance 1x / 2x / 5x, ahead minus static_peak in points): stepwise 64.66 against 65.63
  (-0.29 / -0.02 / +0.02), random walk 1 64.04 against 67.84 (+0.07 / -0.12 / -0.12), random
  walk 2 63.17 against 65.24 (-0.18 / +0.04 / -0.07); before it (the host stopped at the
  decision) 64.77, 64.08 and 63.21 with deficits up to 0.36 points. Each deficit is below one σ
  between seeds (0.2-0.8 points), and each cell saves 1-4 of its 10-14 BTUs of slack. What is
  left is the model, not the forecast: a released host leaves fewer instances for the same load,
  and the waiting of a stochastic stream grows as ρ/(1-ρ) (our queue model), so every capacity
  cut costs some compliance, while static_peak's idle instances keep ρ low at the low levels.
  Releasing only at a lower utilisation of the hosts that stay (`release_utilisation` 0.75 or
  0.6 instead of 0.9, tried on the three cells) releases less and loses as much or more
  compliance (random walk 2: no release at all and 96.22 % against 96.57 % near real-time, as
  ahead's fleet is filled in the need's mix, not the peak's); releasing only hosts whose
  instances all are surplus does not help either: with paid room filled in the peak's mix no
  host is ever all surplus (seeds 1-3: no release at all).
- **Random walks at BTU30** (3 BTUs of slack): ahead released hosts in the first half hour and
  had to lease them again within the BTU as the walk rose faster than the largest rise it had
  seen: the same BTUs (20) at 0.05-0.12 points lower near real-time compliance (random walk 1:
  68.04 against 67.84; random walk 2: 65.30 against 65.24).
- Against **btu** and **threshold** ahead costs less in every cell: it has static_peak's
  compliance (about 95 %, near real-time) where they have 57-82 %, and their penalties for
  delayed items outweigh any BTUs they save.
"""


def _slack(minutes: float) -> dict[tuple[str, int], int]:
    """Per pattern and BTU length: static_peak's BTUs minus the perfect forecaster's."""
    topo = manufacturing()
    s = SimSettings()
    rate = s.concurrency / np.array([o.slo_s for o in topo.operators])
    return {
        (p.value, m): pattern_slack(
            p, topo, rate, HostType(s.cores, s.memory_mb, m * 60.0, price), minutes * 60.0
        ).btus
        for p in Pattern
        for m, price in BTUS
    }


def _ahead_verdict(grid: dict[Key, Cell], slack: dict[tuple[str, int], int]) -> str:
    """Counts: cells where ahead beats static_peak, btu and threshold; the no-slack cells."""
    cells = [(p, m) for p in PATTERNS for m, _ in BTUS]
    n = len(cells)
    counts = {
        other: sum(beats(grid, p, "ahead", other, m) for p, m in cells)
        for other in ("static_peak", "btu", "threshold")
    }
    cheaper = {
        other: sum(
            grid[(p, "ahead", m)].total(1).mean < grid[(p, other, m)].total(1).mean
            for p, m in cells
        )
        for other in ("btu", "threshold")
    }
    none = [f"{p}/BTU{m}" for p, m in cells if slack[(p, m)] <= 0]
    return (
        f"ahead costs less than static_peak at no lower compliance (1x, 2x and 5x) in "
        f"{counts['static_peak']} of {n} cells; cells with no slack: {len(none)} "
        f"({', '.join(none) or 'none'}). Against btu: cheaper (2x total cost) in "
        f"{cheaper['btu']} of {n}, cheaper at no lower compliance in {counts['btu']}; against "
        f"threshold: {cheaper['threshold']} and {counts['threshold']} of {n}."
    )


@dataclass(frozen=True)
class Timing:
    """How long the grid took: wall clock, worker processes, the load average at the start."""

    seconds: float
    workers: int = 1
    load: float | None = None

    def line(self, runs: int, minutes: float) -> str:
        load = f", load average {self.load:.2f} at the start" if self.load is not None else ""
        busy = " (measured under load)" if self.load is not None and self.load > 1.5 else ""
        procs = "one process" if self.workers == 1 else f"{self.workers} processes"
        return (
            f"Last run: {runs} simulations of {minutes:.0f} min in {self.seconds:.0f} s "
            f"(wall clock, {procs}{load}){busy}."
        )


def render(grid: dict[Key, Cell], seeds: int, timing: Timing, minutes: float = 120.0) -> str:
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
        parts += [
            "Hosts and instances over time, first seed (the paper's Figs. 8-11, as numbers):",
            "",
            timeline_table(grid, p, 30, APPROACHES, step_s=min(600.0, minutes * 60.0)),
            "",
        ]
    parts += [
        DISCUSSION.format(ranges=_ranges(grid), seeds=seeds),
        CF_TEXT,
        compare_table(grid, PATTERNS, ("btu", "btu_runtime_cf")),
        "",
    ]
    parts += [_cf_verdict(grid), ""]
    parts += [STATIC_TEXT, compare_table(grid, PATTERNS, ("static_peak", "forecast", "btu")), ""]
    parts += [_static_verdict(grid), ""]
    slack = _slack(minutes)
    parts += [AHEAD_TEXT, ahead_table(grid, PATTERNS, slack), "", _ahead_verdict(grid, slack), ""]
    parts += [AHEAD_DISCUSSION, ""]
    parts += ["## Regenerate", ""]
    parts += [
        "```bash",
        f".venv/bin/python benchmarks/leasing_reproduce.py --seeds {seeds}",
        "```",
        "",
        timing.line(len(grid) * seeds, minutes),
        "",
    ]
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeded runs per cell (>= 3 for σ)")
    ap.add_argument("--out", type=Path, default=Path("docs/reproduction/btu.md"))
    ap.add_argument(
        "--minutes",
        type=float,
        default=120.0,
        help="run length (the paper: 120; less to smoke-test)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=2,
        help="processes the runs are spread over (the grid is the same for any number)",
    )
    ap.add_argument("--save", type=Path, help="also pickle the grid here (to re-render)")
    ap.add_argument("--load", type=Path, help="render a grid pickled by --save (no runs)")
    args = ap.parse_args()
    if args.workers < 1:
        ap.error(f"--workers must be at least 1, got {args.workers}")
    approaches = (*APPROACHES, "btu_runtime_cf", "static_peak", "ahead")
    base = SimSettings(duration_s=args.minutes * 60.0)
    if args.load is not None:
        grid, timing = pickle.loads(args.load.read_bytes())
    else:
        grid, timing = _run(args.seeds, approaches, base, args.workers)
    if args.save is not None:
        args.save.write_bytes(pickle.dumps((grid, timing)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(grid, args.seeds, timing, args.minutes), encoding="utf-8")
    print(
        f"wrote {args.out}: {len(grid)} cells x {args.seeds} seeds; "
        + timing.line(len(grid) * args.seeds, args.minutes)
    )


def _run(
    seeds: int, approaches: tuple[str, ...], base: SimSettings, workers: int
) -> tuple[dict[Key, Cell], Timing]:
    load = os.getloadavg()[0]
    start = time.perf_counter()
    if workers == 1:
        grid = run_grid(range(1, seeds + 1), approaches=approaches, base=base)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            grid = run_grid(range(1, seeds + 1), approaches=approaches, base=base, mapper=pool.map)
    return grid, Timing(time.perf_counter() - start, workers, load)


if __name__ == "__main__":
    main()
