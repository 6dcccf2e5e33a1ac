"""Regenerate docs/reproduction/btu.md: the paper's Tables 3-6 (BTU-based leasing), paper vs ours,
and docs/reproduction/btu-ahead.md: the fixed fleet sized for the peak, and the lease-ahead policy
against it on the paper's patterns and against fixed fleets on four real traces.

.venv/bin/python benchmarks/leasing_reproduce.py [--seeds 5] [--trace-seeds 3] [--workers 2]
    [--data-dir ../shared/data] [--out FILE]      (the second page: FILE's -ahead sibling)
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # reproductions: not installed

from elastream.leasing.hosts import HostType
from elastream.report.progress import ProgressBar, add_quiet
from elastream.workloads import resolve_trace_info
from reproductions.btu.config import AheadSettings, SimSettings
from reproductions.btu.experiment import (
    BTUS,
    PEAK,
    TRACE_AHEAD,
    Cell,
    Key,
    Trend,
    compliance_above,
    cost_below,
    fewer_ops_for_longer_btu,
    run_grid,
    run_trace_grid,
)
from reproductions.btu.paper import TABLES
from reproductions.btu.patterns import Pattern, TraceLoad, trace_load
from reproductions.btu.slack import pattern_slack
from reproductions.btu.tables import (
    ahead_table,
    beats,
    compare_table,
    equal_service_cheaper,
    fleet_table,
    operations_table,
    pattern_table,
    timeline_table,
    trace_outcome,
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
Two references: **btu_runtime_cf** (btu with the image-cache factor applied as the authors'
runtime does; the end of this page) and **static_peak** (a non-elastic oracle sized for the known
peak), and **ahead** = ours, a lease-ahead policy measured against static_peak; static_peak and
ahead have a page of their own, [a fixed fleet and the lease-ahead policy](btu-ahead.md).

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


AHEAD_PAGE = """# Reproduction (BTU leasing), beyond the paper: a fixed fleet and leasing ahead

The paper's setting, its approaches (**btu**, **threshold**) and ours (**forecast**) are those of
[the BTU reproduction](btu.md), and this page is written by the same command
([Regenerate](btu.md#regenerate)). Here: **static_peak**, a non-elastic oracle sized for the
known peak, and **ahead**, our lease-ahead policy, measured against it on the paper's patterns
and on four real traces.

"""

STATIC_TEXT = """## A reference the paper does not have: a static deployment sized for the peak

`static_peak` is told the peak (8 machines) in advance, leases at the start the hosts the peak
needs at 90 % utilisation, fills their free room as ahead does (each free place to the type
whose next instance saves the most waiting at the peak rates, `fill_by_waiting`) and never
changes anything (not elastic, an oracle). In this setting the load never stays low for long
and a few hosts carry the peak, so this is the bar any elastic policy has to clear:

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
        "much a policy can beat a well-sized static deployment is the subject of the sections "
        "below."
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


AHEAD_TEXT = """## Leasing against a fixed fleet: the lease-ahead policy (ours)

**ahead** (`src/reproductions/btu/ahead.py`) is told the same peak as static_peak and starts as it
does; after a warm-up of 5 minutes it is forecast-driven. Its forecaster picks, by a backtest on
the arrival rates (the topology's flow: the outside arrivals carried through the routing,
`planned_arrivals`; a release plans on the larger of that and the rates seen), between a
seasonal-naive forecast (period from the autocorrelation; 30 % head-room on its peak) and the
naive forecast widened by a rise; both capped at the known peak.
Every provisioning interval it sizes each operator for the forecast peak over the lead time of a
new host at 90 % utilisation and leases the hosts that needs now, ahead of the boot time. The
lead time is the longest start-up measured so far (lease to the new host's first instances
serving: boot, image download, instance start; 60 s + 30 s assumed until one is measured) plus
one provisioning interval. The rise it leases ahead for is the
margin of the naive forecast's error: the largest rise seen over k samples times sqrt(lead / k),
the largest over k up to the lead (for a random walk that error grows as the square root of the
horizon, so the steepest short rises bound the longer ones a short history has not shown yet;
`diffusive_rise`). Paid room is filled where an instance saves the most waiting: the mean wait of
a type's pool of n instances is the M/M/1 wait λ / (c (c - λ)) with c = n µ (the simulator's queue
model, `pool_wait`), and each free place goes to the type whose next instance lowers λ · wait /
o_slo the most per unit of host room (the larger of its CPU and memory share), at the forecast
rates (`fill_by_waiting`; static_peak fills by the same rule at the peak rates, so the two differ
only in elasticity). A host is released only in the last 5 % of its BTU (the paper's release
window, Fig. 5) and only when the forecast over the rest of its paid BTU and the next BTU (which
prolonging would pay), plus the lease-ahead margin over the lead time, fits on the hosts that
stay (`release_rates`: every lease-ahead decision until then sizes for what it sees plus that
margin, so a release on this forecast is not undone by a lease within a BTU unless the load
rises beyond the history), and when the lulls seen say so too (the product's `lulls` rule,
`NeedRecord.lulls_allow`, on the hosts each sample of the last ten BTUs needed at the release's
sizing, `need_record`: every lull that lasted as long as the current one outlasted its age plus
that horizon, or the current one has lasted a BTU); its surplus instances stop, the needed ones
move by Alg. 2, and a released host serves on until its paid BTU ends while the moved instances
start on their targets (make before break). A lease within one BTU after a released host's paid
end is counted as a re-lease (prolonging would have cost no more); the count is in the
operations tables' runs (`RunMetrics.re_leases`) and in the real-trace table below.

The runs are paired: for one seed every approach meets the same interference (common random
numbers: interference and boot times come from two streams of the seed), so a difference in
compliance between ahead and static_peak comes from what they lease and place, not from noise.

**Slack** is what a perfect forecaster could save with that rule: the BTUs of the fleet sized
for the peak minus those of an oracle that knows the load, holds at every moment the hosts the
load needs (packed as static_peak packs them, at 90 %), leases a host when it is first needed
and prolongs it only when it is needed during its next BTU (`src/reproductions/btu/slack.py`).
Where the slack is 0 no policy can cost less than static_peak without lower compliance.

"""


AHEAD_FINDINGS = (
    "What was measured on the way, before issue 41's release rule (28 Nov 2026): "
    "[results](../results.md#leasing-ahead-on-the-way-to-issue-41s-release-rule-28-nov-2026).\n"
)


def _ahead_discussion(grid: dict[Key, Cell], slack: dict[tuple[str, int], int]) -> str:
    """Why each cell comes out as it does, in numbers from the grid."""
    cells = [(p, m) for p in PATTERNS for m, _ in BTUS]

    def btus(p: str, a: str, m: int) -> float:
        return grid[(p, a, m)].stat(lambda r: r.paid_btus).mean

    def same(p: str, m: int) -> bool:
        return grid[(p, "ahead", m)].runs == grid[(p, "static_peak", m)].runs

    def deltas(p: str, m: int) -> str:
        a, s = grid[(p, "ahead", m)], grid[(p, "static_peak", m)]
        d = [(a.compliance(k).mean - s.compliance(k).mean) * 100 for k in range(3)]
        return (
            f"{p}/BTU{m}: {btus(p, 'ahead', m):.1f} against {btus(p, 'static_peak', m):.0f} BTUs, "
            f"{a.total(1).mean:.2f} against {s.total(1).mean:.2f}, compliance "
            + " / ".join(f"{x:+.3f}" for x in d)
            + " points"
        )

    flat = [(p, m) for p, m in cells if slack[(p, m)] <= 0]
    none = [f"{p}/BTU{m}" for p, m in flat]
    kept = [
        f"{p}/BTU{m} (slack {slack[(p, m)]})" for p, m in cells if slack[(p, m)] > 0 and same(p, m)
    ]
    released = [(p, m) for p, m in cells if not same(p, m)]
    won = [deltas(p, m) for p, m in released if beats(grid, p, "ahead", "static_peak", m)]
    lost = [deltas(p, m) for p, m in released if not beats(grid, p, "ahead", "static_peak", m)]
    elastic = [
        grid[(p, a, m)].compliance(1).mean * 100 for p, m in cells for a in ("btu", "threshold")
    ]
    ours = [grid[(p, "ahead", m)].compliance(1).mean * 100 for p, m in cells]
    lo, hi, lo_a, hi_a = min(elastic), max(elastic), min(ours), max(ours)
    lines = [
        "Why the cells come out as they do:",
        "",
        f"- **No slack** ({', '.join(none) or 'none'}): both periodic patterns repeat every 16 "
        "minutes and reach 8 machines (5 hosts) in every period, so every 30- or 60-minute BTU of "
        "every host contains a peak: a perfect forecaster pays as many BTUs as static_peak, and no "
        "policy can cost less without lower compliance. ahead forecasts the peak in the next BTU "
        "and keeps the fleet"
        + (": its runs are static_peak's." if all(same(p, m) for p, m in flat) else "."),
        f"- **Slack that ahead does not take** ({', '.join(kept) or 'none'}): its runs are "
        "static_peak's. The two-level slack at BTU10 lies at the run's end (the last low phase, "
        "minutes 112-120, needs no peak host and nothing comes after minute 120; within the run "
        "every 10-minute BTU that starts in a low phase reaches into the next high one), and ahead "
        "does not know when the run stops. The random walks' slack at BTU60 is one BTU: the walk "
        "stays low for the last hour on some hosts, which a forecast of a random walk an hour "
        "ahead (the last rate plus the largest rise seen within an hour: the peak) cannot tell.",
        "- **Where ahead releases and beats static_peak** (cheaper at no lower compliance at 1x, "
        "2x and 5x; ahead minus static_peak): " + ("; ".join(won) or "none") + ".",
        "- **Where ahead releases and is cheaper, but not at no lower compliance** (ahead minus "
        "static_peak): " + ("; ".join(lost) or "none") + ".",
        f"- Against **btu** and **threshold** (counts in the line under the table): ahead keeps "
        f"{lo_a:.0f}-{hi_a:.0f} % near real-time compliance where they keep {lo:.0f}-{hi:.0f} %, "
        "and their penalties for delayed items outweigh the BTUs they save.",
        "",
        AHEAD_FINDINGS,
    ]
    return "\n".join(lines)


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
    relet = [
        f"{p}/BTU{m} {k}"
        for p, m in cells
        if (k := sum(r.re_leases for r in grid[(p, "ahead", m)].runs)) > 0
    ]
    return (
        f"Re-leases within one BTU (all seeds): {', '.join(relet) or 'none'}. "
        f"ahead costs less than static_peak at no lower compliance (1x, 2x and 5x) in "
        f"{counts['static_peak']} of {n} cells; cells with no slack: {len(none)} "
        f"({', '.join(none) or 'none'}). Against btu: cheaper (2x total cost) in "
        f"{cheaper['btu']} of {n}, cheaper at no lower compliance in {counts['btu']}; against "
        f"threshold: {cheaper['threshold']} and {counts['threshold']} of {n}."
    )


class Timing(NamedTuple):
    """How long the grid took: wall clock, worker processes, the load average at the start and
    the CPU seconds of the script and its workers."""

    seconds: float
    workers: int = 1
    load: float | None = None
    cpu: float | None = None

    def line(self, runs: int, minutes: float) -> str:
        load = f", load average {self.load:.2f} at the start" if self.load is not None else ""
        busy = " (measured under load)" if self.load is not None and self.load > 1.5 else ""
        procs = "one process" if self.workers == 1 else f"{self.workers} processes"
        cpu = f", {self.cpu:.0f} CPU s" if self.cpu is not None else ""
        return (
            f"Last run: {runs} simulations of {minutes:.0f} min in {self.seconds:.0f} s "
            f"(wall clock, {procs}{cpu}{load}){busy}."
        )


def render(
    grid: dict[Key, Cell], seeds: int, timing: Timing, minutes: float = 120.0, trace_seeds: int = 3
) -> tuple[str, str]:
    """The paper's page (docs/reproduction/btu.md) and the part of the second page
    (btu-ahead.md) that comes from this grid: static_peak, ahead on the paper's patterns."""
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
    ahead = [STATIC_TEXT, compare_table(grid, PATTERNS, ("static_peak", "forecast", "btu")), ""]
    ahead += [_static_verdict(grid), ""]
    slack = _slack(minutes)
    ahead += [AHEAD_TEXT, ahead_table(grid, PATTERNS, slack), "", _ahead_verdict(grid, slack), ""]
    ahead += [_ahead_discussion(grid, slack), ""]
    parts += ["## Regenerate", ""]
    parts += [
        "```bash",
        f".venv/bin/python benchmarks/leasing_reproduce.py --seeds {seeds} "
        f"--trace-seeds {trace_seeds} --data-dir ../shared/data",
        "```",
        "",
        timing.line(len(grid) * seeds, minutes),
        "",
    ]
    return "\n".join(parts), "\n".join(ahead)


# four real traces (issue 41): the second day of each, 24 h, rescaled to 2-13 machines (2-8 hosts)
TRACES = {
    "tweets": "twitter_sample_per_second_3days.txt",
    "web": "nab_elb_request_count_5min.csv",
    "taxi": "nab_nyc_taxi_passengers_30min.csv",
    "covid": "covid19_tweets_per_hour.csv",
}
TRACE_HOURS = 24
FLEETS = (4, 5, 6, 7)  # fixed fleets besides static_peak (8 hosts): the best in hindsight


def trace_loads(data_dir: Path, hours: float = TRACE_HOURS) -> tuple[TraceLoad, ...]:
    """Each trace's second day (from hour 24 on), as 1-minute mean rates (coarser traces at their
    own step), rescaled so that its lowest rate is 2 machines and its highest 13."""
    out = []
    for name, file in TRACES.items():
        trace, _ = resolve_trace_info(str(data_dir / "traces" / file), None)
        rates, step = trace.rates, trace.step_s
        if step < 60:
            per = round(60 / step)
            rates, step = rates[: rates.size // per * per].reshape(-1, per).mean(axis=1), 60.0
        start, n = round(86_400 / step), round(hours * 3600 / step)
        out.append(trace_load(name, rates[start : start + n + 1], step))
    return tuple(out)


TRACE_TEXT = """## Leasing against fixed fleets on real traces

The four patterns above are synthetic and short (two hours). Here `ahead` meets four real
traces it was not designed on: tweets per second in the public Twitter sample stream (1-minute
means), requests to a cloud load balancer every 5 minutes ("web"), NYC taxi passengers every 30
minutes, COVID-19 tweets per hour. For each: its second day ({hours:g} h, the trace's own time
scale), linearly interpolated and rescaled so that its lowest rate is 2 machines (2 hosts carry
it) and its highest 13 (8 hosts at 90 % utilisation): the load needs 2 to 8 hosts. BTU 10 / 30
/ 60 min at prices 1 / 3 / 6; seeds 1-{seeds}; everything else as above.

- **ahead** is not told the peak: it sizes from what it observes. Each type gets the instances
  whose pool keeps the M/M/1 wait within {wait:.1%} of its SLO at the forecast peak over the
  lead time (`wait_target`) and drains its backlog within {drain:g} s (`drain_s`), the lead time
  being the longest start-up measured so far (lease to the new host's first instances serving)
  plus one provisioning interval. It forecasts from the topology's flow (`planned_arrivals`):
  the arrivals at the types without an upstream carried through the routing (the edges and
  outgoing ratios), so a downstream type is sized for what its upstream types will send, not
  for the throttled arrivals it sees while they are overloaded (the start) or the burst while
  they drain a backlog. The wait target and the drain time were fitted on the taxi and tweets
  traces (the cheapest pair at which ahead serves no worse than static_peak in each of their
  cells); web and covid are held out. A host in the last 5 % of its BTU is released only when
  the forecast over the rest of its paid BTU and the next BTU (the larger of the seasonal and
  the naive one where the seasonal one is chosen, on the larger of the flow and the arrivals
  seen), plus the lease-ahead margin, fits on the hosts that stay (`release_rates`), when the
  lulls seen say so too (the product's `lulls` rule on the hosts each sample needed), and not
  before the history spans that horizon: a released host is then not leased again within a BTU
  unless the load rises beyond anything the last 4 hours showed. A lease within one BTU after a
  released host's paid end is counted as a re-lease (a
  defect: prolonging would have cost no more).
- **static_peak** is told the peak and holds the 8 hosts it needs all day (filled as ahead fills).
- **best fixed** is the fixed fleet ({fleets} or 8 hosts, filled by the same rule) with the lowest
  near real-time total cost (paid BTUs x price + 0.0001 per item later than 2x its SLO) on the
  trace: what a user who knew the trace in advance would lease. A fixed fleet never releases, so
  its run does not depend on the BTU length, and with linear prices neither does its cost.

"Cheaper at equal or better service": ahead's resource cost below static_peak's and its SLA
compliance at 1x, 2x and 5x each no lower (means over the seeds). Target: 9 of 12 cells, 0
re-leases.

"""


def render_traces(
    grid: dict[Key, Cell],
    seeds: int,
    timing: Timing,
    ahead: AheadSettings,
    hours: float = TRACE_HOURS,
) -> str:
    loads = tuple(TRACES)
    fleets = (PEAK, *(f"fixed:{k}" for k in FLEETS))
    cells = [(ld, m) for ld in loads for m, _ in BTUS]
    won = sum(equal_service_cheaper(grid, ld, m) for ld, m in cells)
    relet = sum(r.re_leases for ld, m in cells for r in grid[(ld, "ahead", m)].runs)
    fleet_list = ", ".join(str(k) for k in FLEETS)
    wait, drain = ahead.wait_target or 0.0, ahead.drain_s
    text = TRACE_TEXT.format(seeds=seeds, wait=wait, drain=drain, fleets=fleet_list, hours=hours)
    verdict = (
        f"ahead is cheaper than static_peak at equal or better service in {won} of "
        f"{len(cells)} cells (target 9); re-leases within one BTU: {relet} over "
        f"{len(cells) * seeds} runs (target 0). "
        + timing.line(len(cells) * seeds + len(loads) * len(fleets) * seeds, hours * 60)
    )
    where = "; ".join(f"{ld}/BTU{m} {trace_outcome(grid, ld, m)}" for ld, m in cells)
    verdict += f"\n\nahead's service against static_peak's, and its cost, per cell: {where}."

    return "\n".join([text, fleet_table(grid, loads, fleets), "", verdict, ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeded runs per cell (>= 3 for σ)")
    ap.add_argument("--trace-seeds", type=int, default=3, help="seeded runs per trace cell")
    ap.add_argument(
        "--trace-hours",
        type=float,
        default=TRACE_HOURS,
        help="hours of each real trace's second day run (the document: 24; less to smoke-test)",
    )
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path("docs/reproduction/btu.md"))
    ap.add_argument(
        "--minutes",
        type=float,
        default=120.0,
        help="run length of the paper's patterns (the paper: 120; less to smoke-test)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=2,
        help="processes the runs are spread over (the grid is the same for any number)",
    )
    ap.add_argument("--save", type=Path, help="also pickle the grids here (to re-render)")
    ap.add_argument(
        "--load", type=Path, help="render the grids pickled by --save (a part missing is run)"
    )
    add_quiet(ap)
    args = ap.parse_args()
    if args.workers < 1:
        ap.error(f"--workers must be at least 1, got {args.workers}")
    approaches = (*APPROACHES, "btu_runtime_cf", "static_peak", "ahead")
    saved = pickle.loads(args.load.read_bytes()) if args.load is not None else {}
    if "paper" not in saved:
        base = SimSettings(duration_s=args.minutes * 60.0)
        saved["paper"] = _timed(
            args.workers, args.quiet, lambda mapper: run_grid(
                range(1, args.seeds + 1), approaches=approaches, base=base, mapper=mapper
            )
        )  # fmt: skip
        _save(args.save, saved)
    if "traces" not in saved:
        loads = trace_loads(args.data_dir, args.trace_hours)
        base = SimSettings(duration_s=args.trace_hours * 3600.0)
        saved["traces"] = _timed(
            args.workers, args.quiet, lambda mapper: run_trace_grid(
                loads, range(1, args.trace_seeds + 1), FLEETS, base, mapper=mapper
            )
        )  # fmt: skip
        _save(args.save, saved)
    (grid, timing), (tgrid, ttiming) = saved["paper"], saved["traces"]
    seeds = len(next(iter(grid.values())).runs)
    tseeds = len(next(iter(tgrid.values())).runs)
    paper, ahead = render(grid, seeds, timing, args.minutes, tseeds)
    traces = render_traces(tgrid, tseeds, ttiming, TRACE_AHEAD, args.trace_hours)
    ahead_out = ahead_page(args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(paper, encoding="utf-8")
    ahead_out.write_text(AHEAD_PAGE + ahead + traces, encoding="utf-8")
    print(f"wrote {args.out} and {ahead_out}: {len(grid)} + {len(tgrid)} cells")


def ahead_page(out: Path) -> Path:
    """The second page beside the first: docs/reproduction/btu.md -> btu-ahead.md."""
    return out.with_name(f"{out.stem}-ahead{out.suffix}")


def _save(path: Path | None, saved: dict) -> None:
    if path is not None:
        path.write_bytes(pickle.dumps(saved))


def _timed(workers: int, quiet: bool, run) -> tuple[dict[Key, Cell], Timing]:
    """Run a grid with `run(mapper)` in `workers` processes (a progress bar of the runs done
    unless `quiet`); the grid and how long it took."""
    load = os.getloadavg()[0]
    start, cpu = time.perf_counter(), _cpu_seconds()
    if workers == 1:
        grid = run(counted(map, quiet))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            grid = run(counted(pool.map, quiet))
    return grid, Timing(time.perf_counter() - start, workers, load, _cpu_seconds() - cpu)


def counted(mapper: Callable, quiet: bool) -> Callable:
    """`mapper` (map, a pool's map) with a progress bar of the runs it has finished."""

    def mapped(fn: Callable, tasks: Iterable) -> list:
        tasks = list(tasks)
        out = []
        with ProgressBar(len(tasks), "seeded runs", quiet=quiet) as bar:
            for result in mapper(fn, tasks):
                out.append(result)
                bar.advance(1)
        return out

    return mapped


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    main()
