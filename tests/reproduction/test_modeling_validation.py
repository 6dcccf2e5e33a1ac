"""Section V as a function, on synthetic truth: fit at p = 3, validate p = 2 and 4."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from elastream.history.rows import points_by_operator
from elastream.prediction.graph import Grouping, ModelError
from reproductions.caladrius.synthetic import WORDCOUNT, wordcount_history
from reproductions.caladrius.validation import relative_error, validate


def splitter_points(p: int, seed: int):
    rows = wordcount_history(
        f"p{p}", np.linspace(0.2, 2.0, 25) * 100 * p, {"spout": 1, "splitter": p, "counter": 8},
        seed=seed,
    )  # fmt: skip
    return points_by_operator(rows)["splitter"]


def test_relative_error_is_the_papers():
    assert relative_error(140, 136) == pytest.approx(4 / 136)  # V-C: 2.9 %
    with pytest.raises(ModelError):
        relative_error(1, 0)


@pytest.mark.parametrize("p", [2, 4])
def test_validate_predicts_st_and_cpu_within_three_percent(p):
    row = validate("splitter", Grouping.SHUFFLE, splitter_points(3, 1), splitter_points(p, 2))
    truth = WORDCOUNT["splitter"]
    assert row.parallelism == p
    assert row.observed_st == pytest.approx(p * truth.sp * truth.alpha, rel=0.01)
    assert row.st_error < 0.03
    assert row.cpu_error is not None and row.cpu_error < 0.03
    assert row.alpha_fit == pytest.approx(truth.alpha)


def test_validate_sees_a_wrong_model():
    # the "measured" run emits half the words: ST and α must both show it
    test = [
        replace(pt, output_rates={k: v / 2 for k, v in pt.output_rates.items()})
        for pt in splitter_points(2, 2)
    ]
    row = validate("splitter", Grouping.SHUFFLE, splitter_points(3, 1), test)
    assert row.st_error == pytest.approx(1.0, rel=0.02)
    assert row.alpha_observed == pytest.approx(row.alpha_fit / 2)


def test_validate_needs_one_test_parallelism():
    mixed = splitter_points(2, 1) + splitter_points(4, 1)
    with pytest.raises(ModelError, match="one parallelism"):
        validate("splitter", Grouping.SHUFFLE, splitter_points(3, 1), mixed)
