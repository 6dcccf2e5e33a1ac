"""The MILP builder on HiGHS: a small knapsack solved cold and from a start, and a start whose
run reports an objective its solution does not have (HiGHS 1.16) is dropped and re-solved."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from support.placement import knapsack

from elastream.placement import milp

# Four items (value, weight), capacity 5: the best loads are items 0+1 or 1+2 (value 9).


def test_cold_and_warm_solves_find_the_optimum() -> None:
    m, cols = knapsack()
    cold = m.solve(10.0, 0.0)
    warm = m.solve(10.0, 0.0, start={cols[0]: 1.0})  # a feasible, worse load (value 4)
    for res in (cold, warm):
        assert res.optimal
        assert res.objective == pytest.approx(9.0)
        chosen = [i for i, c in enumerate(cols) if round(res.values[c]) == 1]
        assert chosen in ([0, 1], [1, 2])


class Misreporting:
    """A HiGHS run whose reported objective and bound are not its solution's (as 1.16 after a
    partial start): everything else passes through."""

    def __init__(self, highs) -> None:
        self._highs = highs

    def getInfo(self):
        info = self._highs.getInfo()
        fields = ("primal_solution_status", "mip_gap", "mip_dual_bound")
        wrong = {name: getattr(info, name) for name in fields}
        return SimpleNamespace(**wrong, objective_function_value=99.0)

    def __getattr__(self, name):
        return getattr(self._highs, name)


def test_a_start_whose_run_misreports_its_objective_is_solved_again_without_it(monkeypatch):
    real_run, starts = milp._run, []

    def run(lp, time_limit_s, gap, start):
        starts.append(start)
        highs = real_run(lp, time_limit_s, gap, start)
        return Misreporting(highs) if start else highs

    monkeypatch.setattr(milp, "_run", run)
    m, cols = knapsack()
    res = m.solve(10.0, 0.0, start={cols[0]: 1.0})
    assert starts == [{cols[0]: 1.0}, None]  # the start's run, then a cold one
    assert res.objective == pytest.approx(9.0)
