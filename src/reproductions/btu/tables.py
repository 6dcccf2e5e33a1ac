"""Markdown rendering of Tables 3-6, paper vs ours, and of the trend checks (pure: returns text)."""

from __future__ import annotations

from reproductions.btu.experiment import BTUS, Cell, Key, Stat, Trend
from reproductions.btu.paper import TABLES, Reported

LEVELS = ("Real-time", "Near real-time", "Relaxed")
PATTERN_TITLES = {
    "stepwise": "Table 3: stepwise",
    "two_level": "Table 4: two-level",
    "random_walk_1": "Table 5: random walk 1",
    "random_walk_2": "Table 6: random walk 2",
}


def _pct(s: Stat | Reported) -> str:
    scale = 100.0 if isinstance(s, Stat) else 1.0
    return f"{s.mean * scale:.0f}% (σ {s.sd * scale:.0f})"


def _num(s: Stat | Reported) -> str:
    return f"{s.mean:.2f} (σ {s.sd:.2f})"


def _row(label: str, values: list[str]) -> str:
    return "| " + " | ".join([label, *values]) + " |"


def pattern_table(pattern: str, grid: dict[Key, Cell], approaches: tuple[str, ...]) -> str:
    """One of Tables 3-6: rows are metrics, columns approach x BTU, paper beside ours."""
    paper = TABLES[pattern]
    head = [f"{a} BTU{m}" for a in approaches for m, _ in BTUS]
    lines = [
        f"### {PATTERN_TITLES[pattern]}",
        "",
        _row("metric", head),
        _row("---", ["---"] * len(head)),
    ]

    def cells(metric) -> tuple[list[str], list[str]]:
        ours, theirs = [], []
        for a in approaches:
            for m, _ in BTUS:
                o, p = metric(grid[(pattern, a, m)], paper.get((a, m)))
                ours.append(o)
                theirs.append(p)
        return ours, theirs

    for k, name in enumerate(LEVELS):
        ours, theirs = cells(
            lambda c, p, k=k: (_pct(c.compliance(k)), _pct(p.compliance[k]) if p else "–")
        )
        lines += [_row(f"{name} compliance, paper", theirs), _row("… ours", ours)]
    ours, theirs = cells(lambda c, p: (_num(c.resource), _num(p.resource_cost) if p else "–"))
    lines += [_row("Resource cost, paper", theirs), _row("… ours", ours)]
    for k, name in enumerate(LEVELS):
        ours, theirs = cells(
            lambda c, p, k=k: (_num(c.total(k)), _num(p.total_cost[k]) if p else "–")
        )
        lines += [_row(f"{name} total cost, paper", theirs), _row("… ours", ours)]
    return "\n".join(lines)


def operations_table(pattern: str, grid: dict[Key, Cell], approaches: tuple[str, ...]) -> str:
    """Paid BTUs, VM and instance operations and time to adapt (ours only: the paper's tables
    do not print them)."""
    head = [f"{a} BTU{m}" for a in approaches for m, _ in BTUS]
    fields = (
        ("Paid BTUs", lambda r: r.paid_btus),
        ("VM up", lambda r: r.vm_up),
        ("VM prolong", lambda r: r.vm_prolong),
        ("VM down (before BTU end)", lambda r: r.vm_down),
        ("Instance up", lambda r: r.instance_up),
        ("Instance down", lambda r: r.instance_down),
        ("Migrations", lambda r: r.migrations),
        ("Time to adapt (s)", lambda r: r.time_to_adapt_s),
        ("Peak hosts", lambda r: r.peak_hosts),
    )
    lines = [_row("operations, ours", head), _row("---", ["---"] * len(head))]
    for name, pick in fields:
        vals = []
        for a in approaches:
            for m, _ in BTUS:
                s = grid[(pattern, a, m)].stat(pick)
                vals.append(f"{s.mean:.1f} (σ {s.sd:.1f})")
        lines.append(_row(name, vals))
    return "\n".join(lines)


def trends_list(trends: list[Trend]) -> str:
    return "\n".join(
        f"- **{'holds' if t.holds else 'does not hold'}**: {t.claim} — {t.detail}" for t in trends
    )


def compare_table(
    grid: dict[Key, Cell], patterns: tuple[str, ...], approaches: tuple[str, ...]
) -> str:
    """Near real-time compliance, its total cost and the time to adapt, approaches side by side."""
    cols = [
        (f"{title} {a}", a, pick)
        for title, pick in (
            ("2x compliance", lambda c: _pct(c.compliance(1))),
            ("2x total cost", lambda c: _num(c.total(1))),
            ("time to adapt (s)", lambda c: _num(c.stat(lambda r: r.time_to_adapt_s))),
        )
        for a in approaches
    ]
    lines = [_row("pattern / BTU", [c[0] for c in cols]), _row("---", ["---"] * len(cols))]
    for p in patterns:
        for m, _ in BTUS:
            lines.append(_row(f"{p} / BTU{m}", [pick(grid[(p, a, m)]) for _, a, pick in cols]))
    return "\n".join(lines)


def timeline_table(
    grid: dict[Key, Cell], pattern: str, minutes: int, approaches: tuple[str, ...], step_s: float
) -> str:
    """Machines, hosts and instances every `step_s` of the first seed's run (Figs. 8-11 as text)."""
    runs = {a: grid[(pattern, a, minutes)].runs[0].trace for a in approaches}
    first = next(iter(runs.values()))
    picks = [k for k, (t, *_rest) in enumerate(first) if abs(t / step_s - round(t / step_s)) < 1e-9]
    head = [f"{first[k][0] / 60:.0f}" for k in picks]
    lines = [_row(f"minute (BTU{minutes})", head), _row("---", ["---"] * len(head))]
    lines.append(_row("machines", [f"{first[k][3]:.0f}" for k in picks]))
    for a, trace in runs.items():
        lines.append(_row(f"{a} hosts", [str(trace[k][1]) for k in picks]))
        lines.append(_row(f"{a} instances", [str(trace[k][2]) for k in picks]))
    return "\n".join(lines)


def _pct1(s: Stat) -> str:
    return f"{s.mean * 100:.1f}% (σ {s.sd * 100:.1f})"


def beats(grid: dict[Key, Cell], pattern: str, a: str, b: str, minutes: int) -> bool:
    """`a` costs less than `b` (near real-time total cost, mean over the seeds) at an SLA
    compliance no lower than `b`'s at every level."""
    x, y = grid[(pattern, a, minutes)], grid[(pattern, b, minutes)]
    cheaper = x.total(1).mean < y.total(1).mean
    return cheaper and all(x.compliance(k).mean >= y.compliance(k).mean for k in range(3))


def ahead_verdict(grid: dict[Key, Cell], pattern: str, minutes: int, slack: int) -> str:
    """Why the lease-ahead policy does or does not beat static_peak in one cell, in numbers."""
    a, s = grid[(pattern, "ahead", minutes)], grid[(pattern, "static_peak", minutes)]
    if a.runs == s.runs:
        if slack <= 0:
            return (
                "no slack: a perfect forecaster pays as many BTUs as static_peak, so no policy "
                "can cost less without lower compliance; ahead keeps the peak fleet (same runs)"
            )
        return f"slack {slack} BTUs not taken: ahead keeps the peak fleet (same runs)"
    saved = s.stat(lambda r: r.paid_btus).mean - a.stat(lambda r: r.paid_btus).mean
    cost = a.total(1).mean - s.total(1).mean
    deltas = " / ".join(
        f"{(a.compliance(k).mean - s.compliance(k).mean) * 100:+.3f}" for k in range(3)
    )
    head = (
        "beats static_peak"
        if beats(grid, pattern, "ahead", "static_peak", minutes)
        else f"slack {slack} BTUs, not beaten"
    )
    return (
        f"{head}: {saved:.1f} of {slack} BTUs of slack saved, 2x total cost {cost:+.2f}, "
        f"compliance 1x / 2x / 5x {deltas} points"
    )


def ahead_table(
    grid: dict[Key, Cell], patterns: tuple[str, ...], slack: dict[tuple[str, int], int]
) -> str:
    """The lease-ahead policy against static_peak, btu and threshold: paid BTUs, near real-time
    compliance and total cost (the paper's btu and threshold beside ours), and the verdict
    against static_peak, per pattern x BTU."""
    others = ("ahead", "static_peak", "btu", "threshold")
    paper = ("btu", "threshold")
    head = [
        "slack (BTUs)",
        "paid BTUs ahead",
        "paid BTUs static_peak",
        *(f"2x compliance {a}" for a in others),
        *(f"2x compliance {a}, paper" for a in paper),
        *(f"2x total cost {a}" for a in others),
        *(f"2x total cost {a}, paper" for a in paper),
        "ahead vs static_peak",
    ]
    lines = [_row("pattern / BTU", head), _row("---", ["---"] * len(head))]
    for p in patterns:
        for m, _ in BTUS:
            cells = [grid[(p, a, m)] for a in others]
            published = [TABLES[p].get((a, m)) for a in paper]
            row = [
                str(slack[(p, m)]),
                _num(cells[0].stat(lambda r: r.paid_btus)),
                _num(cells[1].stat(lambda r: r.paid_btus)),
                *(_pct1(c.compliance(1)) for c in cells),
                *(_pct(c.compliance[1]) if c else "–" for c in published),
                *(_num(c.total(1)) for c in cells),
                *(_num(c.total_cost[1]) if c else "–" for c in published),
                ahead_verdict(grid, p, m, slack[(p, m)]),
            ]
            lines.append(_row(f"{p} / BTU{m}", row))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- real traces
def _against_peak(grid: dict[Key, Cell], load: str, minutes: int) -> tuple[bool, float]:
    """Whether ahead serves no worse than the fixed peak fleet in one cell (SLA compliance at
    1x, 2x and 5x each no lower) and its resource cost (paid BTUs x price) as a multiple of the
    fleet's; means over the seeds."""
    a, s = grid[(load, "ahead", minutes)], grid[(load, "static_peak", minutes)]
    served = all(a.compliance(k).mean >= s.compliance(k).mean for k in range(3))
    return served, a.resource.mean / s.resource.mean


def equal_service_cheaper(grid: dict[Key, Cell], load: str, minutes: int) -> bool:
    """ahead cheaper than the fixed peak fleet at equal or better service (`_against_peak`)."""
    served, ratio = _against_peak(grid, load, minutes)
    return served and ratio < 1


def trace_outcome(grid: dict[Key, Cell], load: str, minutes: int) -> str:
    """Where ahead stands against the fixed peak fleet in one cell, in words (`_against_peak`)."""
    served, ratio = _against_peak(grid, load, minutes)
    return f"{'no worse' if served else 'worse'} at {ratio:.2f}x the cost"


def best_fixed(grid: dict[Key, Cell], load: str, minutes: int, fleets: tuple[str, ...]) -> str:
    """The fixed fleet with the lowest near real-time total cost (BTUs + penalties): the one a
    user who knew the whole trace would have leased."""
    return min(fleets, key=lambda f: grid[(load, f, minutes)].total(1).mean)


def _comp3(c: Cell) -> str:
    return " / ".join(f"{c.compliance(k).mean * 100:.2f}" for k in range(3))


def fleet_table(grid: dict[Key, Cell], loads: tuple[str, ...], fleets: tuple[str, ...]) -> str:
    """ahead against the fixed fleet sized for the peak and the best fixed fleet in hindsight,
    per trace x BTU: resource cost, compliance 1x / 2x / 5x, near real-time total cost, and
    ahead's re-leases within one BTU (total over the seeds)."""
    head = [
        "cost ahead",
        "cost static_peak",
        "compliance 1x / 2x / 5x ahead",
        "compliance 1x / 2x / 5x static_peak",
        "re-leases ahead",
        "best fixed (hosts)",
        "cost best fixed",
        "compliance 1x / 2x / 5x best fixed",
        "2x total cost ahead / static_peak / best fixed",
        "ahead cheaper than static_peak at equal or better service",
    ]
    lines = [_row("trace / BTU", head), _row("---", ["---"] * len(head))]
    for load in loads:
        for m, _ in BTUS:
            a, s = grid[(load, "ahead", m)], grid[(load, "static_peak", m)]
            name = best_fixed(grid, load, m, fleets)
            b = grid[(load, name, m)]
            row = [
                _num(a.resource),
                _num(s.resource),
                _comp3(a),
                _comp3(s),
                str(sum(r.re_leases for r in a.runs)),
                str(b.runs[0].peak_hosts) + (" (the peak fleet)" if name == "static_peak" else ""),
                _num(b.resource),
                _comp3(b),
                " / ".join(f"{c.total(1).mean:.1f}" for c in (a, s, b)),
                "yes" if equal_service_cheaper(grid, load, m) else "no",
            ]
            lines.append(_row(f"{load} / BTU{m}", row))
    return "\n".join(lines)
