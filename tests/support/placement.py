"""A small knapsack MILP with a known optimum."""

from __future__ import annotations

from elastream.placement.milp import Milp

ITEMS = ((4.0, 3.0), (5.0, 2.0), (4.0, 3.0), (3.0, 4.0))


def knapsack() -> tuple[Milp, list[int]]:
    m = Milp()
    cols = [m.binary() for _ in ITEMS]
    m.objective({c: v for c, (v, _) in zip(cols, ITEMS, strict=True)})
    m.row({c: w for c, (_, w) in zip(cols, ITEMS, strict=True)}, upper=5.0)
    return m, cols
