"""Throughput degradation (PSPS V-A.3) on hand-worked snapshots, both ways it is computed."""

from __future__ import annotations

import pytest

from elastream.model.metrics import RunningSummary, degradation, throughput_degradation
from elastream.model.snapshot import Snapshot


def snap(sent: int, completed: int, *, intervals: int = 1, idle: int = 0) -> Snapshot:
    return Snapshot(
        t=0.0,
        interval_s=5.0 * intervals,
        sources=(("src", sent),),
        operators=(),
        completed=completed,
        intervals=intervals,
        idle_intervals=idle,
    )


# in 100 / out 100: 0; in 100 / out 50: 0.5; no input: not counted; in 200 / out 260 (a backlog
# drained): |200 - 260| / 200 = 0.3; a fast-forwarded stretch of 3 intervals, 1 of them idle,
# keeping pace: 0 twice. Mean over the 5 intervals with input: (0 + 0.5 + 0.3 + 0 + 0) / 5.
SNAPSHOTS = [
    snap(100, 100),
    snap(100, 50),
    snap(0, 30),
    snap(200, 260),
    snap(50, 50, intervals=3, idle=1),
]
EXPECTED = (0.0 + 0.5 + 0.3 + 0.0 + 0.0) / 5


def test_each_interval_by_hand():
    assert [degradation(s) for s in SNAPSHOTS] == [0.0, 0.5, 0.0, 0.3, 0.0]


def test_mean_over_intervals_with_input():
    assert throughput_degradation(SNAPSHOTS) == pytest.approx(EXPECTED, rel=1e-12)


def test_running_summary_agrees():
    running = RunningSummary()
    for s in SNAPSHOTS:
        running.add(s)
    assert running.degradation_intervals == 5
    assert running.degradation_sum / running.degradation_intervals == pytest.approx(EXPECTED)


def test_no_input_scores_zero():
    assert throughput_degradation([snap(0, 0), snap(0, 10)]) == 0.0
